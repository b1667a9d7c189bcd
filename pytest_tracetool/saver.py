"""Saving test recordings on a background thread, so the next test does not wait for the disk.

A finished recording is self-contained (the agent renders values when it records them, and a
stopped session no longer receives events), so serializing and writing it (atomic: temp file,
fsync, rename) can overlap the next test. One writer thread per process keeps files in test
order; a bounded queue keeps memory bounded when tests outpace the disk (then `submit` waits).
`close()` drains the queue and joins the thread: the plugin calls it at session end, before it
reports counts or tells the daemon about the files.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Any, Callable, Optional

QUEUE_SIZE = 16

Save = Callable[[Any, str], Path]


class BackgroundSaver:
    def __init__(
        self, save: Save, on_saved: Callable[[Path], None], on_error: Callable[[Exception], None]
    ) -> None:
        self._save = save
        self._on_saved = on_saved
        self._on_error = on_error
        self._queue: queue.Queue[Optional[tuple[Any, str]]] = queue.Queue(QUEUE_SIZE)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, document: Any, key: str) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="tracetool-pytest-saver", daemon=True
                )
                self._thread.start()
        self._queue.put((document, key))

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            document, key = job
            try:
                self._on_saved(self._save(document, key))
            except Exception as exc:  # reported by the plugin; never raised into a test
                self._on_error(exc)

    def close(self) -> None:
        """Write everything submitted so far, then stop the thread (idempotent)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()
