"""A self-pipe that wakes a thread asleep in `select()` — and that signals wake as well.

CPython runs a Python signal handler in the main thread, but only when that thread next runs
bytecode. The kernel hands a process-directed signal such as SIGTERM to any thread that does not
block it: when another thread takes it, the main thread, asleep in `select()` without a timeout,
is not interrupted, so the handler never runs and the process ignores the signal (a daemon that
did not stop on CI; `tests/daemon/test_signals.py` sends SIGTERM to another thread on purpose).
`signal.set_wakeup_fd` makes CPython's C-level handler write the signal's number to a file
descriptor, whichever thread takes the signal: pointed at this pipe (`on_signals()`), the signal
wakes the `select()` that watches `fileno()`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator


class Wakeup:
    """`wake()` makes `fileno()` readable; `drain()` empties it; `close()` is idempotent."""

    def __init__(self) -> None:
        self._r, self._w = os.pipe()
        for fd in (self._r, self._w):
            os.set_blocking(fd, False)  # set_wakeup_fd needs it; a full pipe is awake anyway
        self._closed = False
        # re-entrant: a signal handler may call `wake()` in the thread that is in `close()`
        self._lock = threading.RLock()

    def fileno(self) -> int:
        return self._r

    def wake(self) -> None:
        with self._lock:
            if not self._closed:
                with contextlib.suppress(OSError):  # BlockingIOError: already awake
                    os.write(self._w, b"x")

    def drain(self) -> None:
        with contextlib.suppress(OSError):  # BlockingIOError: empty
            while os.read(self._r, 512):
                pass

    @contextlib.contextmanager
    def on_signals(self) -> Iterator[None]:
        """While inside, a signal with a Python handler also wakes this pipe (main thread
        only, as `signal.set_wakeup_fd` requires; elsewhere nothing changes)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
        try:
            yield
        finally:
            signal.set_wakeup_fd(previous)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for fd in (self._r, self._w):
                with contextlib.suppress(OSError):
                    os.close(fd)
