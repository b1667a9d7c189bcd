"""Projects the language server knows: trace.yml, recordings directory and query.db state.

A project is the directory of a trace.yml, found by walking up from a source file
(`tracetool.config.find_config_file`). Its recordings directory follows the usual precedence
(`Settings.trace_dir` from the client > $TRACETOOL_TRACE_DIR > trace.yml), its index is
`Settings.query_db` or the default query.db of that directory.

`Project.db()` opens the index read-only through `tracetool.query.open_db`, or returns None and
keeps the `IndexMissingError` message in `missing`. `Project.poll()` compares a cheap stamp
(size and mtime of query.db and its WAL file) with the last one; when it changed and then
stayed put for one more poll, the connection and every cached answer are dropped, so the next
request reads the new index.
`Project.functions(path)` caches `functions_in_file` per source file until then.

Nothing here imports pygls; `tracetool_daemon.lsp.server` turns these answers into LSP.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracetool.errors import TraceToolError

Stamp = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Settings:
    """What the client may set in `initializationOptions` (camelCase there)."""

    query_db: str | None = None  # queryDb
    trace_dir: str | None = None  # traceDir
    poll_interval: float = 2.0  # pollInterval, seconds; 0 turns polling off
    n_plus_one: int = 10  # nPlusOneThreshold; 0 turns N+1 diagnostics off
    exceptions: bool = True  # exceptionDiagnostics

    @classmethod
    def from_options(cls, options: Any) -> Settings:
        opts = options if isinstance(options, dict) else {}
        return cls(
            query_db=_text(opts, "queryDb"),
            trace_dir=_text(opts, "traceDir"),
            poll_interval=max(_number(opts, "pollInterval", 2.0), 0.0),
            n_plus_one=max(int(_number(opts, "nPlusOneThreshold", 10)), 0),
            exceptions=bool(opts.get("exceptionDiagnostics", True)),
        )


def _text(options: dict[str, Any], key: str) -> str | None:
    value = options.get(key)
    return value if isinstance(value, str) and value else None


def _number(options: dict[str, Any], key: str, default: float) -> float:
    value = options.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return default


def _stat(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


class Project:
    """One trace.yml and its index (module doc)."""

    def __init__(self, config_file: Path, settings: Settings) -> None:
        from tracetool.config import ENV_TRACE_DIR, load_config
        from tracetool.query import query_db_path

        self.config_file = config_file
        self.config = load_config(config_file)
        self.root = self.config.root
        option = settings.trace_dir or os.environ.get(ENV_TRACE_DIR)
        trace_dir = Path(option).expanduser() if option else self.config.trace_dir
        if not trace_dir.is_absolute():
            trace_dir = self.root / trace_dir
        self.trace_dir = trace_dir
        self.query_db = query_db_path(trace_dir, settings.query_db)
        self.missing: str | None = None
        self.missing_reported = False
        self._db: sqlite3.Connection | None = None
        self._stamp: Stamp | None = None  # the index state answers are based on
        self._seen: Stamp | None = None  # the state the last poll saw
        self._functions: dict[tuple[str, ...], list[dict[str, Any]]] = {}

    def stamp(self) -> Stamp:
        from tracetool import store

        files = (_stat(self.query_db), _stat(Path(f"{self.query_db}-wal")))
        shared = store.stamp(self._db) if self._db is not None else None
        return files if shared is None else (*files, shared)

    def poll(self, *, settle: bool = True) -> bool:
        """Drop connection and caches when query.db changed; True if it did.

        With `settle`, a change counts once the stamp stayed the same for one more poll, so a
        running `tracetool index` is not read (and shown) half-way through.
        """
        stamp = self.stamp()
        if stamp == self._stamp:
            self._seen = stamp
            return False
        if settle and stamp != self._seen:
            self._seen = stamp
            return False
        self._stamp = self._seen = stamp
        self.close()
        return True

    def close(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db = None
        self._functions.clear()

    def db(self) -> sqlite3.Connection | None:
        """The read-only index, or None (with `missing` saying why)."""
        if self._stamp is None:
            self._stamp = self._seen = self.stamp()
        if self._db is None:
            from tracetool.query import open_db

            try:
                self._db = open_db(self.trace_dir, self.query_db)
            except TraceToolError as exc:
                self.missing = f"{exc} (project {self.root})"
                return None
            self.missing = None
            self.missing_reported = False
            from tracetool import store

            if store.stamp(self._db) is not None:  # a shared database: its last index run
                self._stamp = self._seen = self.stamp()
        return self._db

    def source_paths(self, file: Path) -> tuple[str, ...]:
        """How the agent may have written `file`: relative to the root, else absolute."""
        resolved = file.resolve()
        out = []
        with contextlib.suppress(ValueError):
            out.append(resolved.relative_to(self.root).as_posix())
        out.append(resolved.as_posix())
        return tuple(out)

    def functions(self, file: Path) -> list[dict[str, Any]]:
        """Recorded functions of `file` (cached until the index changes); [] without index."""
        paths = self.source_paths(file)
        cached = self._functions.get(paths)
        if cached is not None:
            return cached
        db = self.db()
        if db is None:
            return []
        from tracetool.query import functions_in_file

        rows = functions_in_file(db, paths)
        self._functions[paths] = rows
        return rows


class Projects:
    """Projects by trace.yml, found from source files."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.by_config: dict[Path, Project] = {}
        self._config_of_dir: dict[Path, Path | None] = {}
        self.failed: dict[Path, str] = {}
        self._new_problems: list[str] = []

    def for_file(self, file: Path) -> Project | None:
        directory = file.parent.resolve()
        if directory not in self._config_of_dir:
            from tracetool.config import find_config_file

            found = find_config_file(directory)
            self._config_of_dir[directory] = found.resolve() if found is not None else None
        config = self._config_of_dir[directory]
        if config is None or config in self.failed or not config.is_file():
            return None
        project = self.by_config.get(config)
        if project is None:
            try:
                project = Project(config, self.settings)
            except TraceToolError as exc:
                # Reported once (take_problems); asked again after trace.yml changes.
                self.failed[config] = str(exc)
                self._new_problems.append(str(exc))
                return None
            self.by_config[config] = project
        return project

    def take_problems(self) -> list[str]:
        """Configuration errors found since the last call (to show the user once)."""
        out, self._new_problems = self._new_problems, []
        return out

    def forget(self, config_file: Path | None = None) -> None:
        """Re-read configuration: one trace.yml (or all) changed, appeared or went away."""
        targets = list(self.by_config) if config_file is None else [config_file.resolve()]
        for key in targets:
            project = self.by_config.pop(key, None)
            if project is not None:
                project.close()
        # A new trace.yml may now own directories that had none (or another one).
        self._config_of_dir.clear()
        self.failed.clear()

    def all(self) -> list[Project]:
        return list(self.by_config.values())
