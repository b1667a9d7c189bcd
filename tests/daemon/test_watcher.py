"""The watcher's batching, driven by synthetic file events (no OS watcher needed)."""

from __future__ import annotations

import queue
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from daemon.watcher import Batch, Watcher


def _moved(src: Path, dest: Path) -> Any:
    return SimpleNamespace(
        event_type="moved", src_path=str(src), dest_path=str(dest), is_directory=False
    )


class _SlowNote(Watcher):
    """Pauses after noting each path, far longer than the settle window, as a loaded machine may."""

    def note(self, path: Path, *, settled: bool, only_pending: bool = False) -> None:
        super().note(path, settled=settled, only_pending=only_pending)
        time.sleep(self.settle * 10)

    def note_move(self, src: Path, dest: Path) -> None:
        with self._cond:
            super().note_move(src, dest)
            time.sleep(self.settle * 10)


def test_a_rename_reaches_the_indexer_as_one_batch_even_when_the_watcher_thread_stalls(
    tmp_path: Path,
) -> None:
    batches: queue.Queue[Batch] = queue.Queue()
    watcher = _SlowNote(tmp_path, batches.put, settle=0.02)
    watcher._thread.start()  # the flush thread only: events are fed by hand below
    try:
        old, new = tmp_path / "pay.trace.json", tmp_path / "paid.trace.json"
        watcher._dispatch(_moved(old, new))
        batch = batches.get(timeout=30)
        # Had the flush thread run between the two names, the old one would go alone (a
        # deletion) and the new one a batch later (indexed afresh, not renamed).
        assert set(batch.paths) == {old, new}
        assert batches.empty()
    finally:
        watcher.stop()


def test_both_names_of_a_rename_are_due_at_one_time(tmp_path: Path, monkeypatch) -> None:
    """A clock that moves between two readings, and an old name already waiting (written just
    before the rename): the flush when the first name is due takes both."""
    import daemon.watcher as module

    clock = iter(range(1000, 100000))
    monkeypatch.setattr(module.time, "monotonic", lambda: next(clock) / 1000)
    watcher = Watcher(tmp_path, lambda batch: None, settle=0.02, quiet=0.4)
    old, new = tmp_path / "pay.trace.json", tmp_path / "paid.trace.json"
    watcher.note(old, settled=True)  # written in place just before
    watcher._dispatch(_moved(old, new))
    first_due = min(watcher._pending.due.values())
    batch = watcher._take_due(first_due)
    assert set(batch.paths) == {old, new}
    assert not watcher._pending.due


def test_temp_files_of_atomic_writes_and_ignored_folders_are_not_batched(tmp_path: Path) -> None:
    batches: queue.Queue[Batch] = queue.Queue()
    watcher = Watcher(tmp_path, batches.put, settle=0.01)
    watcher._thread.start()
    try:
        temp = tmp_path / ".pay.trace.json.tmp123"
        final = tmp_path / "pay.trace.json"
        watcher._dispatch(_moved(tmp_path / "node_modules" / "x.trace.json", temp))
        watcher._dispatch(_moved(temp, final))
        assert batches.get(timeout=30).paths == (final,)
    finally:
        watcher.stop()
