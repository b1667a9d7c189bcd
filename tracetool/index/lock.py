"""One writer per query.db: an exclusive lock on `<query.db>.lock`.

The lock is an OS file lock (`fcntl.flock` on POSIX, `msvcrt.locking` on Windows), so it is
released when the holder exits or dies — no stale lock files to clean up. The file holds the
holder's pid and purpose for the error message another writer prints. Readers never lock: WAL
gives them a snapshot.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType

from tracetool.errors import TraceToolError
from tracetool.filelock import try_lock as _try_lock
from tracetool.filelock import unlock as _unlock


class IndexBusyError(TraceToolError):
    """Another process is writing the same query database."""


def lock_path(query_db: Path) -> Path:
    return query_db.with_name(query_db.name + ".lock")


class WriterLock:
    """`with WriterLock(query_db, timeout=10):` — waits up to `timeout` seconds for the lock."""

    def __init__(self, query_db: Path, *, timeout: float = 10.0, purpose: str = "index") -> None:
        self.path = lock_path(query_db)
        self.timeout = timeout
        self.purpose = purpose
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        delay = 0.01
        while True:
            if _try_lock(fd):
                break
            if time.monotonic() >= deadline:
                holder = _read_holder(self.path)
                os.close(fd)
                raise IndexBusyError(
                    f"{self.path.with_suffix('')}: being updated by another process ({holder}); "
                    "wait for it to finish (an `index --watch` keeps the database current)"
                )
            time.sleep(delay)  # polling an OS lock: there is no portable wait-with-timeout
            delay = min(delay * 2, 0.2)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, {self.purpose}".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
            _unlock(fd)
        finally:
            os.close(fd)

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _read_holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        text = ""
    return text or "unknown holder"
