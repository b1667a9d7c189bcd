"""Watching a recordings directory: OS file events in, settled batches of changed paths out.

Contract:

- `Watcher(root, on_batch)` uses watchdog's native observer (inotify on Linux, FSEvents on
  macOS, ReadDirectoryChangesW on Windows). There is no periodic rescan of the tree: an idle
  daemon does no file-system work at all (AppMap's watcher globbed the tree every 5 s).
- Only recordings count: `*.trace.json` / `*.appmap.json` whose name does not start with "."
  (the temp files of atomic writes) and whose path below `root` has no ignored folder
  (`.git`, `node_modules`, virtualenvs, caches — `find_trace_files`'s list).
- Debounce: a file that was closed after writing, renamed or moved into place, or deleted is
  settled after `settle` seconds (a short coalescing window for bursts); a file that is open
  for writing or being modified is settled once it has been quiet for `quiet` seconds (the
  close event settles it sooner where the platform reports one).
- `on_batch(Batch)` is called from the watcher's own thread with the settled paths: `paths`
  to reconsider (the indexer stats each one: present → index, absent → forget) and
  `removed_dirs` (directories deleted or moved out, whose recordings must be forgotten).
  Renames arrive as their two paths, in one batch (`note_move`: due at one time); the indexer
  recognizes the same content under a new name.
"""

from __future__ import annotations

import heapq
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracetool.trace import TRACE_SUFFIXES
from tracetool.trace.document import SKIP_DIRS

log = logging.getLogger("tracetool.daemon.watcher")

IGNORED_DIRS = SKIP_DIRS  # the same folders `find_trace_files` skips


@dataclass(frozen=True)
class Batch:
    paths: tuple[Path, ...] = ()
    removed_dirs: tuple[Path, ...] = ()


@dataclass
class _Pending:
    due: dict[Path, float] = field(default_factory=dict)
    removed_dirs: set[Path] = field(default_factory=set)
    heap: list[tuple[float, Path]] = field(default_factory=list)


class Watcher:
    """See module doc. `start()` begins watching; `stop()` ends it and flushes nothing more."""

    def __init__(
        self,
        root: Path,
        on_batch: Callable[[Batch], None],
        *,
        settle: float = 0.02,
        quiet: float = 0.4,
    ) -> None:
        self.root = root
        self.on_batch = on_batch
        self.settle = settle
        self.quiet = quiet
        self._pending = _Pending()
        self._cond = threading.Condition()
        self._stopping = False
        self._observer: Any = None
        self._thread = threading.Thread(target=self._flush_loop, name="watch-flush", daemon=True)

    # --- filtering ------------------------------------------------------------------------------

    def wanted(self, path: Path) -> bool:
        name = path.name
        if not name.endswith(TRACE_SUFFIXES) or name.startswith("."):
            return False
        return not self._in_ignored_dir(path)

    def _in_ignored_dir(self, path: Path) -> bool:
        try:
            parts = path.relative_to(self.root).parts[:-1]
        except ValueError:
            return True
        return any(part in IGNORED_DIRS for part in parts)

    # --- events ---------------------------------------------------------------------------------

    def note(self, path: Path, *, settled: bool, only_pending: bool = False) -> None:
        """Schedule `path` for indexing: soon if `settled`, after it has been quiet otherwise.

        `only_pending` changes the time of a path already waiting, and schedules nothing new.
        """
        if not self.wanted(path):
            return
        now = time.monotonic()
        due = now + (self.settle if settled else self.quiet)
        with self._cond:
            old = self._pending.due.get(path)
            if only_pending and old is None:
                return
            if settled and old is not None and old < due:
                due = old
            self._schedule(path, due)
            self._cond.notify()

    def _schedule(self, path: Path, due: float) -> None:
        """`path` due at `due` (the caller holds the lock and notifies)."""
        self._pending.due[path] = due
        heapq.heappush(self._pending.heap, (due, path))

    def note_removed_dir(self, path: Path) -> None:
        if self._in_ignored_dir(path / "x") or path == self.root:
            return
        with self._cond:
            self._pending.removed_dirs.add(path)
            heapq.heappush(self._pending.heap, (time.monotonic() + self.settle, path))
            self._cond.notify()

    def _flush_loop(self) -> None:
        while True:
            with self._cond:
                while not self._stopping:
                    heap = self._pending.heap
                    if not heap:
                        self._cond.wait()  # idle: no timer, no wake-ups
                        continue
                    delay = heap[0][0] - time.monotonic()
                    if delay <= 0:
                        break
                    self._cond.wait(delay)
                if self._stopping:
                    return
                batch = self._take_due(time.monotonic())
            if batch.paths or batch.removed_dirs:
                try:
                    self.on_batch(batch)
                except Exception:  # the watcher must outlive one bad batch
                    log.exception("indexing a batch of changed recordings failed")

    def _take_due(self, now: float) -> Batch:
        pending = self._pending
        paths: list[Path] = []
        while pending.heap and pending.heap[0][0] <= now:
            due, path = heapq.heappop(pending.heap)
            if path in pending.removed_dirs:
                continue
            if pending.due.get(path) == due:
                del pending.due[path]
                paths.append(path)
        removed = tuple(sorted(pending.removed_dirs))
        pending.removed_dirs.clear()
        return Batch(tuple(dict.fromkeys(paths)), removed)

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                watcher._dispatch(event)

        self.root.mkdir(parents=True, exist_ok=True)
        observer = Observer()
        from watchdog.events import (
            DirDeletedEvent,
            DirMovedEvent,
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
            FileOpenedEvent,
        )

        # Not attribute changes, reads ending, or directory modifications: nothing to index.
        wanted = [
            DirDeletedEvent,
            DirMovedEvent,
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
            FileOpenedEvent,
        ]
        observer.schedule(Handler(), str(self.root), recursive=True, event_filter=wanted)
        observer.daemon = True
        observer.start()
        self._observer = observer
        self._thread.start()

    def _dispatch(self, event: Any) -> None:
        kind = event.event_type
        src = Path(os.fsdecode(event.src_path))
        if event.is_directory:
            if kind == "deleted":
                self.note_removed_dir(src)
            elif kind == "moved":
                self.note_removed_dir(src)  # its files arrive as sub-events under the new name
            return
        if kind in ("closed", "deleted"):
            self.note(src, settled=True)
        elif kind == "created":
            # Moved in from outside the tree (complete), or created by open() — in which case
            # the "opened" event that follows at once turns this into a wait for the close.
            self.note(src, settled=True)
        elif kind in ("opened", "modified"):
            # only_pending: our own reads of a file must not schedule it again.
            self.note(src, settled=False, only_pending=kind == "opened")
        elif kind == "moved":
            self.note_move(src, Path(os.fsdecode(event.dest_path)))

    def note_move(self, src: Path, dest: Path) -> None:
        """Schedule both names of a rename for one batch, so that the indexer recognizes the
        rename: under one hold of the lock, and due at one time (were the old name due even a
        microsecond sooner, or kept at an earlier time it was already waiting for, a flush in
        between would send it alone as a deletion, and the new name would be indexed afresh
        in the next batch)."""
        due = time.monotonic() + self.settle
        with self._cond:
            for path in (src, dest):
                if self.wanted(path):
                    self._schedule(path, due)
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        if self._thread.is_alive():
            self._thread.join(timeout=5)
