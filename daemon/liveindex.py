"""The live index: one trace_dir kept indexed while the daemon runs.

Contract:

- `LiveIndex(trace_dir, query_db)`. `start()` starts the file watcher first (so nothing written
  during start-up is missed), then, in the index thread, brings query.db up to date with one
  full `tracetool.index.index_directory` pass — the same indexer as `tracetool index` — and
  from then on applies changes as they come: batches of changed paths from the watcher, and
  `submit(paths)` from `index.files` (the pytest plugin, editors). Each batch goes through
  `tracetool.index.index_paths` (the same per-file work, restricted to those paths): present
  files are (re)indexed, absent ones forgotten, a file that reappears under another name with
  the same content is moved, not re-parsed. There is no periodic rescan.
- Files are parsed in a warm process pool (`make_pool`) when the daemon has one: the request
  threads keep the GIL, and bursts are indexed in parallel.
- The writer lock beside query.db is held only while a batch is written, so a one-shot
  `tracetool index` (or `archive`) can run beside the daemon.
- `submit(paths, wait=True)` returns once a batch including those paths was written, with
  per-path outcomes; `wait=False` only queues them.
- `status()` → `{state, traceDir, queryDb, numProcessed, queued, recordings, startedAt,
  lastIndexedAt, lastBatch, skipped}`; `state` is `starting`, `indexing` (the first full
  pass), `ready` or `stopped`; `numProcessed` counts recordings added, updated, renamed or
  deleted since start (the first pass included); `skipped` lists the latest skipped files
  (path and reason, newest last, at most 50).
- A batch that fails (e.g. the lock is busy for longer than its timeout) is logged and retried
  with the next batch; its paths stay queued.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracetool_daemon.watcher import Batch, Watcher

log = logging.getLogger("tracetool.daemon.index")

MAX_SKIPPED = 50
# A burst of new recordings becomes queryable in slices this long, not all at the end.
COMMIT_SECONDS = 0.25
# After a failed batch (e.g. the writer lock stayed busy), wait this long before retrying.
RETRY_SECONDS = 5.0


@dataclass
class _Ticket:
    paths: tuple[Path, ...]
    done: threading.Event = field(default_factory=threading.Event)
    outcome: dict[str, str] = field(default_factory=dict)
    error: str | None = None


class LiveIndex:
    def __init__(
        self,
        trace_dir: Path,
        query_db: Path,
        *,
        watch: bool = True,
        on_batch: Callable[[Any], None] | None = None,
        lock_timeout: float = 30.0,
        executor: Executor | None = None,
    ) -> None:
        self.trace_dir = trace_dir
        self.query_db = query_db
        self.watch = watch
        self.on_batch = on_batch
        self.lock_timeout = lock_timeout
        self.executor = executor
        self.state = "starting"
        self.num_processed = 0
        self.started_at = time.time()
        self.last_indexed_at: float | None = None
        self.last_batch: dict[str, Any] | None = None
        self.skipped: deque[dict[str, str]] = deque(maxlen=MAX_SKIPPED)
        self._cond = threading.Condition()
        self._paths: dict[Path, None] = {}
        self._removed_dirs: set[Path] = set()
        self._tickets: list[_Ticket] = []
        self._stopping = False
        self._watcher = Watcher(trace_dir, self._from_watcher) if watch else None
        self._thread = threading.Thread(target=self._loop, name="live-index", daemon=True)
        self._first_pass = threading.Event()

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        if self._watcher is not None:
            self._watcher.start()
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._watcher is not None:
            self._watcher.stop()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        self.state = "stopped"

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._first_pass.wait(timeout)

    # --- input ----------------------------------------------------------------------------------

    def _from_watcher(self, batch: Batch) -> None:
        with self._cond:
            self._paths.update(dict.fromkeys(batch.paths))
            self._removed_dirs.update(batch.removed_dirs)
            self._cond.notify()

    def submit(
        self, paths: Iterable[Path], *, wait: bool = False, timeout: float = 30.0
    ) -> dict[str, str] | None:
        """Queue `paths` for indexing now; with `wait`, their outcomes (relpath → outcome)."""
        ticket = _Ticket(tuple(paths))
        with self._cond:
            self._paths.update(dict.fromkeys(ticket.paths))
            if wait:
                self._tickets.append(ticket)
            self._cond.notify()
        if not wait:
            return None
        if not ticket.done.wait(timeout):
            raise TimeoutError(f"indexing did not finish within {timeout:g} s")
        if ticket.error:
            from tracetool.errors import TraceToolError

            raise TraceToolError(ticket.error)
        return ticket.outcome

    # --- the index thread -----------------------------------------------------------------------

    def _loop(self) -> None:
        from tracetool.index import IndexOptions, index_directory

        self.state = "indexing"
        while not self._stopping:
            try:
                result = index_directory(
                    self.trace_dir,
                    IndexOptions(
                        query_db=self.query_db,
                        lock_timeout=self.lock_timeout,
                        executor=self.executor,
                    ),
                )
                self._record(result, {})
                break
            except BrokenProcessPool as exc:
                self._lose_pool(exc)
            except Exception as exc:
                log.error("indexing %s failed: %s", self.trace_dir, exc)
                with self._cond:  # retry when something changes, or in a minute
                    self._cond.wait(60)
        self.state = "ready"
        self._first_pass.set()
        while True:
            with self._cond:
                while not self._stopping and not self._paths and not self._removed_dirs:
                    self._cond.wait()
                if self._stopping:
                    self._release(error="the daemon is stopping")
                    return
                paths, self._paths = list(self._paths), {}
                removed, self._removed_dirs = set(self._removed_dirs), set()
                tickets, self._tickets = self._tickets, []
            self._apply(paths, removed, tickets)

    def _apply(self, paths: list[Path], removed: set[Path], tickets: list[_Ticket]) -> None:
        from tracetool.index import IndexOptions, index_paths

        outcome: dict[str, str] = {}
        try:
            result = index_paths(
                self.trace_dir,
                paths,
                IndexOptions(
                    query_db=self.query_db,
                    lock_timeout=self.lock_timeout,
                    workers=1,
                    commit_seconds=COMMIT_SECONDS,
                    executor=self.executor,
                ),
                removed_dirs=sorted(removed),
                report=outcome.__setitem__,
            )
        except Exception as exc:
            if isinstance(exc, BrokenProcessPool):
                self._lose_pool(exc)
            log.error("indexing changes in %s failed: %s", self.trace_dir, exc)
            with self._cond:  # keep the work: it is retried after a pause
                self._paths.update(dict.fromkeys(paths))
                self._removed_dirs.update(removed)
                for t in tickets:
                    t.error = f"indexing failed: {exc}"
                    t.done.set()
                if not isinstance(exc, BrokenProcessPool) and not self._stopping:
                    self._cond.wait(RETRY_SECONDS)
            return
        self._record(result, outcome)
        for ticket in tickets:
            for path in ticket.paths:
                rel = _rel(path, self.trace_dir)
                ticket.outcome[rel] = outcome.get(rel, "unchanged")
            ticket.done.set()

    def _lose_pool(self, exc: BaseException) -> None:
        # A worker died (killed, out of memory): go on indexing in this process.
        log.warning("indexing processes failed (%s); indexing in the daemon process", exc)
        self.executor = None

    def _release(self, error: str) -> None:
        for ticket in self._tickets:
            ticket.error = error
            ticket.done.set()
        self._tickets = []

    def _record(self, result: Any, outcome: dict[str, str]) -> None:
        changed = (
            len(result.added) + len(result.updated) + len(result.renamed) + len(result.deleted)
        )
        self.num_processed += changed
        for skip in result.skipped:
            self.skipped.append({"path": skip.path, "reason": skip.reason})
        self.last_indexed_at = time.time()
        self.last_batch = {
            "at": self.last_indexed_at,
            "seconds": round(result.seconds, 4),
            "added": len(result.added),
            "updated": len(result.updated),
            "renamed": len(result.renamed),
            "deleted": len(result.deleted),
            "skipped": len(result.skipped),
        }
        if changed or result.skipped:
            log.info(
                "indexed %s: %s",
                self.trace_dir,
                ", ".join(
                    f"{k} {v}"
                    for k, v in self.last_batch.items()
                    if k not in ("at", "seconds") and v
                ),
            )
        if self.on_batch is not None:
            self.on_batch(result)

    def status(self) -> dict[str, Any]:
        with self._cond:
            queued = len(self._paths) + len(self._removed_dirs)
        return {
            "state": self.state,
            "traceDir": str(self.trace_dir),
            "queryDb": str(self.query_db),
            "watching": self._watcher is not None,
            "numProcessed": self.num_processed,
            "queued": queued,
            "startedAt": self.started_at,
            "lastIndexedAt": self.last_indexed_at,
            "lastBatch": self.last_batch,
            "skipped": list(self.skipped),
        }


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _warm() -> None:
    """Pool worker start-up: import what indexing a file needs before the first file arrives,
    and leave when the daemon does (even killed, it must not leave workers behind)."""
    from tracetool.index import worker

    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(
            target=_exit_with, args=(parent.sentinel,), name="parent-watch", daemon=True
        ).start()
    worker.warm_up()


def _exit_with(sentinel: int) -> None:
    from multiprocessing.connection import wait

    wait([sentinel])  # blocks, without waking up, until the daemon process is gone
    os._exit(0)


def _ready() -> int:
    return os.getpid()


def make_pool(workers: int | None = None) -> Executor | None:
    """The daemon's indexing processes, started now and kept warm (None: index inline).

    `workers` defaults to $TRACETOOL_INDEX_WORKERS, else the CPU count (at most 4). Parsing in
    other processes keeps the daemon's own threads free to answer requests, and a burst of new
    recordings is indexed in parallel without paying a pool's start-up each time.
    """
    if workers is None:
        env = os.environ.get("TRACETOOL_INDEX_WORKERS", "")
        workers = int(env) if env.isdigit() else min(os.cpu_count() or 1, 4)
    if workers < 1:
        return None
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),  # the daemon has threads: no fork
        initializer=_warm,
        # No max_tasks_per_child: with it, CPython 3.11's pool can hang once a worker retires.
    )
    for _ in range(workers):
        pool.submit(_ready)  # start the workers now, not when the first file arrives
    return pool
