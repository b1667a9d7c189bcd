"""Projects the language server knows: trace.yml, recordings directory and its daemon.

A project is the directory of a trace.yml, found by walking up from a source file
(`tracetool.config.find_config_file`). Its recordings directory follows the usual precedence
(`Settings.trace_dir` from the client > $TRACETOOL_TRACE_DIR > trace.yml).

All data comes from the daemon that serves that directory (`tracetool_daemon.client`): the
one already running (the VS Code extension's, a user's `tracetool rpc`), else one this server
starts and stops. `Project.call(method, **params)` calls it; `Project.available()` says whether
it answers and keeps the reason in `missing` when not. `Project.poll()` compares the daemon's
`index.status` (recordings processed, last batch) with the last one: when it changed, every
cached answer is dropped, so the next request sees the new recordings.
`Project.functions(path)` caches `source.functions` per source file until then.

Nothing here imports pygls; `tracetool_daemon.lsp.server` turns these answers into LSP.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracetool.errors import TraceToolError

Stamp = tuple[Any, ...]


@dataclass(frozen=True)
class Settings:
    """What the client may set in `initializationOptions` (camelCase there)."""

    query_db: str | None = None  # queryDb (reported only: the daemon uses its own index)
    trace_dir: str | None = None  # traceDir
    poll_interval: float = 2.0  # pollInterval, seconds; 0 turns polling off
    n_plus_one: int = 10  # nPlusOneThreshold; 0 turns N+1 diagnostics off
    exceptions: bool = True  # exceptionDiagnostics
    slow_ms: float = 100.0  # slowQueryMs; 0 turns slow-query diagnostics off

    @classmethod
    def from_options(cls, options: Any) -> Settings:
        opts = options if isinstance(options, dict) else {}
        return cls(
            query_db=_text(opts, "queryDb"),
            trace_dir=_text(opts, "traceDir"),
            poll_interval=max(_number(opts, "pollInterval", 2.0), 0.0),
            n_plus_one=max(int(_number(opts, "nPlusOneThreshold", 10)), 0),
            exceptions=bool(opts.get("exceptionDiagnostics", True)),
            slow_ms=max(_number(opts, "slowQueryMs", 100.0), 0.0),
        )


def _text(options: dict[str, Any], key: str) -> str | None:
    value = options.get(key)
    return value if isinstance(value, str) and value else None


def _number(options: dict[str, Any], key: str, default: float) -> float:
    value = options.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return default


class Project:
    """One trace.yml and the daemon serving its recordings (module doc)."""

    def __init__(self, config_file: Path, settings: Settings) -> None:
        from tracetool_daemon.client import DaemonClient

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
        env = dict(os.environ)
        if option:
            env[ENV_TRACE_DIR] = str(trace_dir)
        self.daemon = DaemonClient(self.root, trace_dir, env)
        self._stamp: Stamp | None = None  # the index state answers are based on
        self._functions: dict[str, list[dict[str, Any]]] = {}

    def call(self, method: str, **params: Any) -> Any:
        return self.daemon.call(method, **params)

    def stamp(self) -> Stamp | None:
        from tracetool_daemon.client import wait_ready

        try:
            status = wait_ready(self.daemon)
        except TraceToolError as exc:
            self.missing = f"{exc} (project {self.root})"
            return None
        self.missing = None
        return (status.get("numProcessed"), status.get("lastIndexedAt"), status.get("recordings"))

    def poll(self, *, settle: bool = True) -> bool:
        """Drop cached answers when the daemon indexed something; True if it did.

        (`settle` is kept for callers: the daemon writes each batch in one transaction, so
        there is no half-written index to wait out.)"""
        stamp = self.stamp()
        if stamp is None or stamp == self._stamp:
            return False
        first = self._stamp is None
        self._stamp = stamp
        self._functions.clear()
        return not first

    def close(self) -> None:
        self._functions.clear()
        self.daemon.close()

    def available(self) -> bool:
        """Whether the daemon answers (with `missing` saying why not)."""
        if self._stamp is None:
            self._stamp = self.stamp()
        else:
            try:
                self.daemon.ensure()
                self.missing = None
            except TraceToolError as exc:
                self.missing = f"{exc} (project {self.root})"
        if self.missing is None:
            self.missing_reported = False
        return self.missing is None

    def source_paths(self, file: Path) -> tuple[str, ...]:
        """How the agent may have written `file`: relative to the root, else absolute."""
        resolved = file.resolve()
        out = []
        try:
            out.append(resolved.relative_to(self.root).as_posix())
        except ValueError:
            pass
        out.append(resolved.as_posix())
        return tuple(out)

    def functions(self, file: Path) -> list[dict[str, Any]]:
        """Recorded functions of `file` (cached until the index changes); [] without a daemon."""
        key = file.resolve().as_posix()
        cached = self._functions.get(key)
        if cached is not None:
            return cached
        if not self.available():
            return []
        try:
            rows: list[dict[str, Any]] = self.call("source.functions", path=key)
        except TraceToolError as exc:
            self.missing = f"{exc} (project {self.root})"
            return []
        self._functions[key] = rows
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
