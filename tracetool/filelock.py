"""Advisory, non-blocking whole-file locks on an open descriptor (POSIX flock, Windows locking).

Shared by the query.db writer lock (`tracetool.index.lock`) and the daemon's one-per-trace_dir
lock (`tracetool_daemon.discovery`). The OS drops the lock when the process dies, so a crashed
holder never blocks the next one.
"""

from __future__ import annotations

import os
import sys

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def try_lock(fd: int) -> bool:
        """Take the lock if free; False when another process holds it."""
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def try_lock(fd: int) -> bool:
        """Take the lock if free; False when another process holds it."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            return False

    def unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
