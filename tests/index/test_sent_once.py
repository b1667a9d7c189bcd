"""A worker sends each code object's row once per run (`worker._sent_once`), the writer keeps
every row it received (`Writer._rows`): the database is the one every row sent each time makes,
with two workers, a recording skipped in between, a recording the database refuses, and runs
after runs on the same long-lived workers."""

from __future__ import annotations

import shutil
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.index import shop
from tests.index.test_writer import _contents
from tracetool.index import IndexOptions, index_directory, indexer, worker
from tracetool.index.worker import Indexed, Result, Task


def test_rows_sent_once_per_run_and_process() -> None:
    a, b = {"x": ("function", "x"), "y": ("class", "y")}, {"y": ("class", "y"), "z": ("t", "z")}
    assert worker._sent_once(a, "run1") == a
    assert worker._sent_once(b, "run1") == {"y": None, "z": ("t", "z")}
    assert worker._sent_once(a, "run1") == {"x": None, "y": None}
    assert worker._sent_once(b, "run2") == b  # a new run starts afresh
    assert worker._sent_once(a, "") == a  # no run: every row, nothing remembered
    assert worker._sent_once(a, "run2") == {"x": ("function", "x"), "y": None}


def _index(trace: Path, qdb: Path, executor: Executor | None = None) -> Any:
    return index_directory(trace, IndexOptions(query_db=qdb, workers=1, executor=executor))


def _with_bad_files(root: Path) -> Path:
    trace = shop.make_shop(root)
    (trace / "main" / "broken.trace.json").write_bytes(b'{"events": [')
    (trace / "main" / "zz_more.trace.json").write_bytes(
        (trace / "main" / "users_show.trace.json").read_bytes()
    )
    return trace


def _nones(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many rows each result the parent writes names by None."""
    nones: list[int] = []
    real = indexer._apply

    def counted(result: Result, *args: Any, **kwargs: Any) -> None:
        if isinstance(result, Indexed):
            nones.append(sum(row is None for row in result.data.items.values()))
        real(result, *args, **kwargs)

    monkeypatch.setattr(indexer, "_apply", counted)
    return nones


def _pool(kind: str) -> Executor:
    return ThreadPoolExecutor(1) if kind == "thread" else ProcessPoolExecutor(2)


@pytest.mark.parametrize("kind", ["thread", "processes"])
def test_pooled_runs_give_the_inline_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    trace = _with_bad_files(tmp_path / "trace")
    inline = _index(trace, tmp_path / "a" / "query.db")
    assert [s.path for s in inline.skipped] == ["main/broken.trace.json"]
    nones = _nones(monkeypatch)
    with _pool(kind) as pool:
        pooled = _index(trace, tmp_path / "b" / "query.db", pool)
        # the same long-lived workers, a fresh database: every row is sent again
        again = _index(trace, tmp_path / "c" / "query.db", pool)
    assert sum(nones) > 0  # (the protocol was used)
    for result in (pooled, again):
        assert sorted(result.added) == sorted(inline.added)
        assert [s.path for s in result.skipped] == ["main/broken.trace.json"]
    expected = _contents(tmp_path / "a" / "query.db")
    assert _contents(tmp_path / "b" / "query.db") == expected
    assert _contents(tmp_path / "c" / "query.db") == expected


@pytest.mark.parametrize("kind", ["thread", "processes"])
def test_reindex_after_changes_keeps_every_row(tmp_path: Path, kind: str) -> None:
    trace = _with_bad_files(tmp_path / "trace")
    qdb = tmp_path / "db" / "query.db"
    with _pool(kind) as pool:
        _index(trace, qdb, pool)
        for path in sorted(trace.rglob("*.trace.json"))[::2]:
            path.write_bytes(path.read_bytes() + b" ")
        (trace / "main" / "broken.trace.json").unlink()
        result = _index(trace, qdb, pool)
    assert result.updated and not result.skipped
    clean = tmp_path / "clean"
    shutil.copytree(trace, clean)
    _index(clean, tmp_path / "db2" / "query.db")
    assert _contents(qdb) == _contents(tmp_path / "db2" / "query.db")


def test_refused_recording_leaves_its_rows_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first recordings (in a cold load, then under savepoints) are refused after their
    code objects were interned (and, under a savepoint, undone): the ones after them name
    those code objects by None and still get their rows."""
    trace = shop.make_shop(tmp_path / "trace")
    names = sorted(p.relative_to(trace).as_posix() for p in trace.rglob("*.trace.json"))
    bad = names[:2]
    real = indexer.process
    nones: list[int] = []

    def process(task: Task, threshold: int | None = None) -> Result:
        result = real(task, threshold)
        assert isinstance(result, Indexed)
        nones.append(sum(row is None for row in result.data.items.values()))
        if task.relpath in bad:
            result.data.fts = (*result.data.fts[:5], ["not", "text"])
        return result

    monkeypatch.setattr(indexer, "process", process)
    monkeypatch.setattr(indexer, "_run_tasks", _in_name_order)
    result = _index(trace, tmp_path / "db" / "query.db")
    assert sorted(s.path for s in result.skipped) == bad
    assert sum(nones[len(bad) :]) > 0
    monkeypatch.setattr(indexer, "process", real)
    clean = tmp_path / "clean"
    shutil.copytree(trace, clean)
    for name in bad:
        (clean / name).unlink()
    _index(clean, tmp_path / "db2" / "query.db")
    assert _contents(tmp_path / "db" / "query.db") == _contents(tmp_path / "db2" / "query.db")


def _in_name_order(tasks: list[Task], workers: int, executor: Executor | None = None) -> Any:
    for task in sorted(tasks, key=lambda t: t.relpath):
        yield indexer.process(task)
