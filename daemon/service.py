"""The state every JSON-RPC method sees: projects, their live indexes, readers, the assistant.

Contract:

- `Service(options)` is built once per process — by the daemon (with live indexes that watch)
  or by the in-process `rpc-client` (no watching; `index.files` then indexes synchronously).
- A `Project` is one recordings directory: its project `directory`, `trace_dir`, `query_db`
  and, in a daemon, its `LiveIndex`. `project(directory)` picks one: by project directory or
  trace_dir (absolute or as given with `-d`), by default the first.
- `reader(project)` is a read-only connection to the project's query.db, one per thread and
  database (SQLite connections are not shared across threads; WAL gives each a snapshot).
- `recording_file(project, ref)` turns a recording reference into a file path inside the
  project's trace_dir, so no method can be made to read a file outside it.
- `assistant` is created on first use (thread store under HOME, provider from `--ai-option`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracetool import __version__
from tracetool.errors import NotFoundError, UsageError
from tracetool.trace import TRACE_SUFFIXES

if TYPE_CHECKING:
    from tracetool_daemon.liveindex import LiveIndex

    from tracetool.assistant import Assistant


@dataclass(frozen=True)
class ServiceOptions:
    """What `tracetool rpc` / `index --watch` / `rpc-client` were given (flags > env > trace.yml)."""

    log_assistant: bool = False
    ai_options: Mapping[str, str] = field(default_factory=dict)
    prompt_file: Path | None = None
    code_editor: str | None = None
    thread_id: str | None = None
    trajectory_file: Path | None = None
    assistant_db: Path | None = None  # default ~/.trace/assistant.db
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


@dataclass
class Project:
    directory: Path
    trace_dir: Path
    query_db: Path
    live: LiveIndex | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "traceDir": str(self.trace_dir),
            "queryDb": str(self.query_db),
            "watching": self.live is not None,
        }


class Service:
    def __init__(self, projects: list[Project], options: ServiceOptions = ServiceOptions()) -> None:
        if not projects:
            raise UsageError("no recordings directory to serve")
        self.projects = projects
        self.options = options
        self.started_at = time.time()
        self.version = __version__
        self._local = threading.local()
        self._assistant: Assistant | None = None
        self._assistant_lock = threading.Lock()

    # --- projects and readers -------------------------------------------------------------------

    def project(self, directory: str | None = None) -> Project:
        if directory is None:
            return self.projects[0]
        if not isinstance(directory, str):
            raise UsageError("directory must be a string")
        wanted = Path(directory).expanduser()
        resolved = wanted.resolve() if wanted.is_absolute() or wanted.exists() else None
        for p in self.projects:
            if wanted in (p.directory, p.trace_dir) or resolved in (p.directory, p.trace_dir):
                return p
        known = ", ".join(str(p.directory) for p in self.projects)
        raise NotFoundError(f"{directory}: not a directory this server serves ({known})")

    def reader(self, project: Project) -> sqlite3.Connection:
        from tracetool.index import open_reader

        cache: dict[Path, tuple[sqlite3.Connection, int]] = self._local.__dict__.setdefault(
            "readers", {}
        )
        try:
            inode = project.query_db.stat().st_ino
        except OSError:
            inode = -1
        cached = cache.get(project.query_db)
        if cached is not None:
            if cached[1] == inode:
                return cached[0]
            cached[0].close()  # the database was rebuilt: a new file under the same name
            del cache[project.query_db]
        conn = open_reader(project.query_db)
        cache[project.query_db] = (conn, inode)
        return conn

    def recording_file(self, project: Project, ref: str) -> Path:
        """The file of recording `ref` inside `project.trace_dir` (see module doc)."""
        if not isinstance(ref, str) or not ref.strip():
            raise UsageError("appmap must be a recording path or name")
        root = project.trace_dir
        text = ref.strip()
        candidates = [Path(text)] if Path(text).is_absolute() else [root / text]
        if not text.endswith(TRACE_SUFFIXES):
            candidates += [Path(str(c) + s) for c in list(candidates) for s in TRACE_SUFFIXES]
        for candidate in candidates:
            path = candidate.resolve()
            if not path.is_relative_to(root):
                continue
            if path.is_file() and path.name.endswith(TRACE_SUFFIXES):
                return path
        if any(c.resolve().is_relative_to(root) for c in candidates):
            # Not a file path: maybe a recording name or stem the index knows.
            from tracetool.query.db import recording_file, resolve_recording

            db = self.reader(project)
            row = resolve_recording(db, text)
            path = Path(recording_file(db, row)).resolve()
            if path.is_relative_to(root) and path.is_file():
                return path
            raise NotFoundError(f"{path}: recording file is gone")
        raise UsageError(f"{ref}: not inside the recordings directory {root}")

    def relpath(self, project: Project, path: Path) -> str:
        return path.relative_to(project.trace_dir).as_posix()

    # --- assistant ------------------------------------------------------------------------------

    @property
    def assistant(self) -> Assistant:
        with self._assistant_lock:
            if self._assistant is None:
                self._assistant = self._make_assistant()
            return self._assistant

    def _make_assistant(self) -> Assistant:
        import logging

        from tracetool_daemon.retrieval import IndexRetriever

        from tracetool.assistant import (
            AIConfig,
            Assistant,
            AssistantOptions,
            ThreadStore,
            load_prompts,
        )

        o = self.options
        if o.log_assistant:
            logger = logging.getLogger("tracetool.assistant")
            logger.setLevel(logging.INFO)
        options = AssistantOptions(
            ai=AIConfig.resolve(o.ai_options, o.env),
            prompts=load_prompts(o.prompt_file),
            trajectory_file=o.trajectory_file,
            log_events=o.log_assistant,
            code_editor=o.code_editor,
            default_thread_id=o.thread_id,
            project_directories=tuple(str(p.directory) for p in self.projects),
        )
        return Assistant(ThreadStore(o.assistant_db), IndexRetriever(self), options)

    def close(self, *, wait_assistant: float | None = 0) -> None:
        if self._assistant is not None:
            if wait_assistant != 0:
                self._assistant.wait(wait_assistant)
            self._assistant.store.close()
        for project in self.projects:
            if project.live is not None:
                project.live.stop()
        self.drop_all_readers()

    def drop_all_readers(self) -> None:
        cache: dict[Path, tuple[sqlite3.Connection, int]] = self._local.__dict__.get("readers", {})
        for conn, _ in cache.values():
            conn.close()
        cache.clear()
