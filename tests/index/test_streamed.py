"""Indexing a recording event by event gives what reading it whole gives (issue 18).

The streamed path (`worker._extract_streamed`, for files over `STREAM_THRESHOLD`) is forced on
every file here — the block reader too, with an event or two per block and a batch per finished
call tree, the most batch boundaries there can be — and the database rows and sidecars are compared
byte for byte with the whole-file path's.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
import types
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import corpus_recordings, make_corpus
from tests.index.conftest import run
from tracetool.index import IndexResult, sidecar_path, worker
from tracetool.trace import stream

# Columns that say when, not what.
_VOLATILE = {"indexed_at", "updated_at", "created_at"}


def _streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "STREAM_THRESHOLD", 0)
    monkeypatch.setattr(stream, "STREAM_THRESHOLD", 0)
    monkeypatch.setattr(worker, "HELD_CALLS", 0)
    monkeypatch.setattr(stream, "_CHUNK", 64)  # blocks of an event or two


_FTS_LAYOUT = ("recordings_fts_data", "recordings_fts_idx")


def _dump(qdb: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(qdb)
    try:
        out = {}
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        for (table,) in tables:
            # (FTS5's segments depend on where transactions end, which is a matter of time:
            # its content and docsize tables say what it holds)
            if table.startswith(("sqlite_", "fts")) or table in _FTS_LAYOUT or table == "meta":
                continue
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            keep = ", ".join(c for c in columns if c not in _VOLATILE)
            out[table] = sorted(conn.execute(f"SELECT {keep} FROM {table}").fetchall(), key=repr)
        return out
    finally:
        conn.close()


def _sidecars(qdb: Path, result: IndexResult) -> dict[str, bytes]:
    return {rel: sidecar_path(qdb, rel).read_bytes() for rel in result.added}


def _same_both_ways(trace: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> IndexResult:
    whole_db, streamed_db = tmp / "whole" / "query.db", tmp / "streamed" / "query.db"
    whole = run(trace, whole_db)
    with monkeypatch.context() as patch:
        _streamed(patch)
        streamed = run(trace, streamed_db)
    assert streamed.skipped == whole.skipped
    assert sorted(streamed.added) == sorted(whole.added)
    assert _sidecars(streamed_db, streamed) == _sidecars(whole_db, whole)
    assert _dump(streamed_db) == _dump(whole_db)
    return whole


def test_corpus_streamed_as_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recordings = corpus_recordings()
    if not recordings:
        pytest.skip("shared corpus not found")
    trace = tmp_path / "trace"
    for i, path in enumerate(recordings):
        trace.mkdir(exist_ok=True)
        shutil.copyfile(path, trace / f"{i:02d}_{path.name.split('.')[0]}.trace.json")
    result = _same_both_ways(trace, tmp_path, monkeypatch)
    assert result.found == len(recordings) and len(result.added) > 40
    sidecar = orjson.loads(
        sidecar_path(tmp_path / "whole" / "query.db", result.added[0]).read_bytes()
    )
    assert sidecar["digests"]["sequence_diagram"]  # the digest hook ran in both


def test_generated_streamed_as_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "trace"
    make_corpus(trace, 4, 1, 11)
    result = _same_both_ways(trace, tmp_path, monkeypatch)
    assert len(result.added) == 4


def _fn(eid: int, thread: int, cls: str, method: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": eid,
        "event": "call",
        "thread_id": thread,
        "defined_class": cls,
        "method_id": method,
        "path": f"app/{cls.lower()}.py",
        "lineno": 1,
        "static": False,
        **extra,
    }


def _ret(eid: int, parent: int, thread: int, **extra: Any) -> dict[str, Any]:
    return {"id": eid, "event": "return", "parent_id": parent, "thread_id": thread, **extra}


def _sql(eid: int, thread: int, text: str) -> dict[str, Any]:
    return {"id": eid, "event": "call", "thread_id": thread, "sql_query": {"sql": text}}


def _http(eid: int, thread: int, path: str) -> dict[str, Any]:
    request = {"request_method": "GET", "path_info": path}
    return {"id": eid, "event": "call", "thread_id": thread, "http_server_request": request}


def _odd_recordings() -> dict[str, dict[str, Any]]:
    """What the corpora may lack: interleaved threads, missing and late returns, eventUpdates,
    a first HTTP request after other calls, the first SQL after some trees, Python modules
    whose functions and classes share a package (the digest's lifelines), events that are not
    objects."""
    threads = [
        _fn(1, 1, "Worker", "run"),
        _fn(2, 2, "Worker", "run"),
        _sql(3, 1, "SELECT 1"),
        _ret(4, 3, 1, elapsed=0.001),
        _fn(5, 2, "Job", "perform", timestamp=12.5),
        _ret(6, 1, 1, elapsed=0.5),  # thread 2 still open: its tree is not finished
        _ret(7, 5, 2, elapsed=0.25, exceptions=[{"class": "KeyError", "message": "x"}]),
        _fn(8, 1, "Worker", "run"),  # never returns
        _ret(9, 2, 2, elapsed=0.75),
        _fn(10, 2, "Job", "perform"),
        _fn(11, 2, "Job", "inner"),
        _ret(12, 10, 2, elapsed=0.5),  # closes 11, which never returned
    ]
    late_http = [
        _fn(1, 1, "Boot", "load"),
        _sql(2, 1, "SELECT * FROM settings"),
        _ret(3, 2, 1, elapsed=0.001),
        _ret(4, 1, 1, elapsed=0.01),
        _http(5, 1, "/users/1"),
        _fn(6, 1, "Users", "show"),
        _sql(7, 1, "SELECT * FROM users WHERE id = 1"),
        _ret(8, 7, 1, elapsed=0.002),
        _ret(9, 6, 1, elapsed=0.02),
        _ret(10, 5, 1, elapsed=0.03, http_server_response={"status_code": 200}),
    ]
    late_sql = [
        _fn(1, 1, "Boot", "load"),
        _ret(2, 1, 1, elapsed=0.01),
        {"id": 3, "event": "call", "thread_id": 1, "http_client_request": {"url": "http://x/y"}},
        _ret(4, 3, 1, elapsed=0.01, http_client_response={"status_code": 204}),
        _sql(5, 1, "SELECT 2"),
        _ret(6, 5, 1, elapsed=0.001),
    ]
    module_map = [
        {
            "type": "package",
            "name": "app",
            "children": [
                {
                    "type": "class",
                    "name": "users",
                    "children": [{"type": "function", "name": "helper", "static": True}],
                },
                {
                    "type": "package",
                    "name": "users",
                    "children": [
                        {
                            "type": "class",
                            "name": "Store",
                            "children": [{"type": "function", "name": "save", "static": False}],
                        }
                    ],
                },
            ],
        }
    ]
    modules = [
        {"id": 1, "event": "call", "thread_id": 1, "defined_class": "app.users",
         "method_id": "helper", "static": True},
        _ret(2, 1, 1, elapsed=0.001),
        {"id": 3, "event": "call", "thread_id": 1, "defined_class": "app.users.Store",
         "method_id": "save", "static": False},
        _ret(4, 3, 1, elapsed=0.001),
    ]  # fmt: skip
    updated = [
        _fn(1, 1, "Users", "show"),
        _sql(2, 1, "SELECT old"),
        _ret(3, 2, 1, elapsed=0.001),
        _ret(4, 1, 1, elapsed=0.01),
        _fn(5, 1, "Users", "show"),
        _ret(6, 5, 1, elapsed=0.01),
    ]
    updates = {
        "2": _sql(2, 1, "SELECT new FROM t"),
        "6": _ret(6, 5, 1, elapsed=0.5, return_value={"class": "Hash", "value": "{}"}),
    }

    def doc(name: str, events: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {"version": "1.12", "metadata": {"name": name}, "classMap": [], "events": events,
                **extra}  # fmt: skip

    return {
        "threads.trace.json": doc("threads", threads),
        "late_http.trace.json": doc("late http", late_http),
        "late_sql.trace.json": doc("late sql", late_sql),
        "modules.trace.json": doc("modules", modules, classMap=module_map),
        "updated.trace.json": doc("updated", updated, eventUpdates=updates),
        "not_objects.trace.json": doc("not objects", [1, *late_sql[:2], "x", *late_sql[2:], None]),
    }


def test_odd_recordings_streamed_as_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "trace"
    trace.mkdir()
    for name, data in _odd_recordings().items():
        (trace / name).write_bytes(orjson.dumps(data))
    result = _same_both_ways(trace, tmp_path, monkeypatch)
    assert len(result.added) == 6


MALFORMED = {
    "truncated.trace.json": b'{"version": "1.12", "events": [{"id": 1, "event": "call"}, {"id"',
    "array.trace.json": b'[{"id": 1, "event": "call"}]',
    "events_object.trace.json": b'{"version": "1.12", "events": {"id": 1}}',
    "bad_utf8.trace.json": b'{"version": "1.12", "events": [{"id": 1, "x": "\xff\xfe"}]}',
    "empty.trace.json": b"   ",
    "classmap_string.trace.json": b'{"classMap": "x", "events": []}',
}


def test_malformed_skipped_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "trace"
    trace.mkdir()
    for name, data in MALFORMED.items():
        (trace / name).write_bytes(data)
    whole = run(trace, tmp_path / "whole" / "query.db")
    assert len(whole.skipped) == len(MALFORMED)
    with monkeypatch.context() as patch:
        _streamed(patch)
        streamed = run(trace, tmp_path / "streamed" / "query.db")
    assert sorted(map(repr, streamed.skipped)) == sorted(map(repr, whole.skipped))


def test_default_size_guard_spares_streamed_files(tmp_path: Path) -> None:
    """The default limit guards memory, which a streamed file does not use; --max-size caps all."""
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "a.trace.json").write_bytes(orjson.dumps(_odd_recordings()["threads.trace.json"]))
    size = (trace / "a.trace.json").stat().st_size
    common = dict(relpath="a.trace.json", size=size, mtime_ns=0, sidecar=str(tmp_path / "s"))
    task = worker.Task(path=str(trace / "a.trace.json"), max_bytes=10, **common)  # type: ignore[arg-type]
    assert isinstance(worker.process(task, threshold=0), worker.Indexed)
    assert isinstance(worker.process(task, threshold=size), worker.Skipped)
    capped = worker.Task(path=str(trace / "a.trace.json"), max_bytes=10, hard_limit=True, **common)  # type: ignore[arg-type]
    assert isinstance(worker.process(capped, threshold=0), worker.Skipped)


class _Counting:
    """A ':batches' digest hook: the number of root calls, batch by batch."""

    def __init__(self) -> None:
        self.roots = 0

    def add(self, bound: Any) -> None:
        self.roots += len(bound.roots)

    def result(self) -> str:
        return f"{self.roots} roots"


def _broken() -> Any:
    raise RuntimeError("no digest today")


def test_digest_hook_forms_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole: every form runs. Streamed: ':batches' hooks run, the others read None; a hook
    that raises reads None and the recording is still indexed."""
    module = types.ModuleType("fake_hooks_for_tests")
    module.Counting = _Counting  # type: ignore[attr-defined]
    module.broken = _broken  # type: ignore[attr-defined]
    module.name = lambda doc: doc.metadata["name"]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_hooks_for_tests", module)
    hooks = {
        "count": "fake_hooks_for_tests:Counting:batches",
        "broken": "fake_hooks_for_tests:broken:batches",
        "name": "fake_hooks_for_tests:name",
        "sequence_diagram": worker.DIGEST_HOOKS["sequence_diagram"],
    }
    monkeypatch.setattr(worker, "DIGEST_HOOKS", hooks)
    monkeypatch.setattr(worker, "_hooks", None)
    path = tmp_path / "threads.trace.json"
    path.write_bytes(orjson.dumps(_odd_recordings()["threads.trace.json"]))
    st = path.stat()
    task = worker.Task(
        str(path), path.name, st.st_size, st.st_mtime_ns, str(tmp_path / "s"), 1 << 40
    )
    whole = worker.process(task)
    with monkeypatch.context() as patch:
        _streamed(patch)
        streamed = worker.process(task)
    assert isinstance(whole, worker.Indexed) and isinstance(streamed, worker.Indexed)
    assert whole.digests["count"] == streamed.digests["count"] == "4 roots"
    assert whole.digests["broken"] is None and streamed.digests["broken"] is None
    assert (whole.digests["name"], streamed.digests["name"]) == ("threads", None)
    assert streamed.digests["sequence_diagram"] == whole.digests["sequence_diagram"] is not None
