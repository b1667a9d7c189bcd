"""The Recorder: sessions, atomic start, nesting per thread and asyncio task, scoped sessions."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from tracetool.agent.recorder import Recorder, get_recorder
from tracetool.trace.document import from_data
from tracetool.trace.normalize import normalize

from .conftest import tree


@pytest.fixture
def rec(project: Any) -> Recorder:
    project.configure()
    return get_recorder()


def sql(rec: Recorder, text: str) -> None:
    call = rec.call_event({"sql_query": {"database_type": "sqlite", "sql": text}})
    rec.return_event(call, {}, 0.001)


def test_stop_without_session_is_none(rec: Recorder) -> None:
    assert not rec.is_recording()
    assert rec.stop() is None
    assert rec.call_event({"message": []}) is None
    rec.return_event(None, {}, 0.0)  # no-op


def test_document_shape_and_renumbered_ids(rec: Recorder) -> None:
    sql(rec, "select 0")  # before the session: not recorded
    assert rec.start()
    assert rec.is_recording()
    req = rec.call_event({"http_server_request": {"request_method": "GET", "path_info": "/a"}})
    sql(rec, "select 1")
    rec.return_event(req, {"http_server_response": {"status_code": 200}}, 0.01)
    doc = rec.stop()
    assert not rec.is_recording()
    assert doc is not None
    assert doc["version"] == "1.12"
    assert doc["metadata"]["recorder"] == {"name": "remote", "type": "remote"}
    assert doc["metadata"]["app"] == "demo"
    assert doc["metadata"]["language"]["name"] == "python"
    assert doc["metadata"]["client"]["name"] == "tracetool"
    assert doc["classMap"] == []
    assert [e["id"] for e in doc["events"]] == [1, 2, 3, 4]
    assert doc["events"][2] == {
        "id": 3,
        "event": "return",
        "thread_id": 1,
        "parent_id": 2,
        "elapsed": 0.001,
    }
    assert doc["events"][3]["http_server_response"] == {"status_code": 200}
    assert tree(doc) == [["http_server_request", [["sql_query", []]]]]


def test_concurrent_starts_exactly_one_wins(rec: Recorder) -> None:
    barrier = threading.Barrier(8)
    results: list[bool] = []

    def start() -> None:
        barrier.wait()
        results.append(rec.start())

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]
    assert rec.stop() is not None


def test_threads_get_their_own_lanes(rec: Recorder) -> None:
    assert rec.start()
    outer = rec.call_event({"message": [{"name": "main"}]})
    ready = threading.Event()

    def worker() -> None:
        call = rec.call_event({"message": [{"name": "worker"}]})
        ready.set()
        sql(rec, "select 2")
        rec.return_event(call, {}, 0.0)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    sql(rec, "select 1")
    rec.return_event(outer, {}, 0.0)
    doc = rec.stop()
    assert {e["thread_id"] for e in doc["events"]} == {1, 2}
    assert tree(doc) == [
        ["message", [["sql_query", []]]],
        ["message", [["sql_query", []]]],
    ]
    worker_call = doc["events"][1]
    assert worker_call["message"] == [{"name": "worker"}] and worker_call["thread_id"] == 2


def test_interleaved_tasks_nest_correctly(rec: Recorder) -> None:
    """gather()ed tasks interleave on one thread; each gets its own lane, linked to the request
    that created it, so the document nests each task whole under the request."""

    async def handler(name: str) -> None:
        call = rec.call_event({"message": [{"name": name}]})
        await asyncio.sleep(0)
        sql(rec, f"select '{name}'")
        await asyncio.sleep(0)
        rec.return_event(call, {}, 0.0)

    async def main() -> None:
        call = rec.call_event({"http_server_request": {"request_method": "GET", "path_info": "/"}})
        await asyncio.gather(handler("a"), handler("b"))
        sql(rec, "select 'after'")
        rec.return_event(call, {}, 0.0)

    assert rec.start()
    asyncio.run(main())
    doc = rec.stop()
    assert tree(doc) == [
        [
            "http_server_request",
            [["message", [["sql_query", []]]], ["message", [["sql_query", []]]], ["sql_query", []]],
        ]
    ]
    sqls = [
        e["sql_query"]["sql"] for e in doc["events"] if e["event"] == "call" and "sql_query" in e
    ]
    assert sqls == ["select 'a'", "select 'b'", "select 'after'"]
    assert {e["thread_id"] for e in doc["events"]} == {1}


def test_to_thread_nests_under_the_task(rec: Recorder) -> None:
    """A sync function handed to a thread with the task's context nests under the request."""

    async def main() -> None:
        call = rec.call_event({"http_server_request": {"request_method": "GET", "path_info": "/"}})
        await asyncio.to_thread(sql, rec, "select 'in thread'")
        rec.return_event(call, {}, 0.0)

    if not hasattr(asyncio, "to_thread"):  # pragma: no cover - 3.9 has it; be explicit
        pytest.skip("asyncio.to_thread missing")
    assert rec.start()
    asyncio.run(main())
    doc = rec.stop()
    assert tree(doc) == [["http_server_request", [["sql_query", []]]]]


def test_add_metadata_reaches_the_document(rec: Recorder) -> None:
    assert rec.start()
    rec.add_metadata("frameworks", [{"name": "flask", "version": "3"}])
    doc = rec.stop()
    assert doc["metadata"]["frameworks"] == [{"name": "flask", "version": "3"}]


def test_scoped_sessions_see_only_their_thread(rec: Recorder) -> None:
    assert rec.start()
    scopes = {}
    go = threading.Barrier(2)

    def request(name: str) -> None:
        scope = rec.start_scoped(name, recorder_name="requests", recorder_type="requests")
        go.wait()
        sql(rec, f"select '{name}'")
        go.wait()
        scopes[name] = scope.stop()

    threads = [threading.Thread(target=request, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    remote = rec.stop()
    for name in ("a", "b"):
        doc = scopes[name].to_dict()
        assert doc["metadata"]["name"] == name
        assert doc["metadata"]["recorder"] == {"name": "requests", "type": "requests"}
        assert [e["sql_query"]["sql"] for e in doc["events"] if "sql_query" in e] == [
            f"select '{name}'"
        ]
        assert [e["thread_id"] for e in doc["events"]] == [1, 1]
    # the remote session saw both requests
    assert len(remote["events"]) == 4


def test_scoped_session_follows_spawned_tasks_and_nests(rec: Recorder) -> None:
    async def child() -> None:
        sql(rec, "select 'child'")

    async def main() -> object:
        outer = rec.start_scoped("outer")
        sql(rec, "select 1")
        inner = rec.start_scoped("inner")
        await asyncio.gather(child())
        inner_rec = inner.stop()
        sql(rec, "select 2")
        return outer.stop(), inner_rec

    outer_rec, inner_rec = asyncio.run(main())  # type: ignore[misc]
    outer_sql = [e["sql_query"]["sql"] for e in outer_rec.to_dict()["events"] if "sql_query" in e]
    inner_sql = [e["sql_query"]["sql"] for e in inner_rec.to_dict()["events"] if "sql_query" in e]
    assert outer_sql == ["select 1", "select 'child'", "select 2"]
    assert inner_sql == ["select 'child'"]
    assert not rec.active


def test_scoped_stop_is_idempotent_and_late_events_are_dropped(rec: Recorder) -> None:
    scope = rec.start_scoped("s")
    call = rec.call_event({"message": []})
    first = scope.stop()
    rec.return_event(call, {}, 0.0)  # after stop: dropped, no error
    assert scope.stop() is first
    doc = first.to_dict()
    assert [e["event"] for e in doc["events"]] == ["call"]
    normalize(from_data(doc))  # an unreturned call is still a readable document


def test_scoped_metadata_is_merged(rec: Recorder) -> None:
    scope = rec.start_scoped("t", recorder_name="pytest", recorder_type="tests")
    scope.metadata["test_status"] = "succeeded"
    recording = scope.stop()
    recording.metadata["labels"] = ["x"]
    doc = recording.to_dict()
    assert doc["metadata"]["test_status"] == "succeeded"
    assert doc["metadata"]["labels"] == ["x"]
    assert doc["metadata"]["recorder"]["type"] == "tests"


def test_process_session_is_independent_of_remote(rec: Recorder) -> None:
    assert rec.start_process("p")
    assert not rec.start_process("again")
    assert rec.start()
    sql(rec, "select 1")
    remote = rec.stop()
    sql(rec, "select 2")
    process = rec.finish_process()
    assert process is not None
    assert len(remote["events"]) == 2
    assert len(process.to_dict()["events"]) == 4
    assert process.metadata["recorder"] == {"name": "process", "type": "process"}


def test_event_cap_truncates_with_marker(rec: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETOOL_MAX_EVENTS", "10")
    assert rec.start()
    outer = rec.call_event({"message": []})
    for i in range(100):
        sql(rec, f"select {i}")
    rec.return_event(outer, {}, 0.0)
    doc = rec.stop()
    assert doc["metadata"]["truncated"] == {
        "reason": "max_events",
        "max_events": 10,
        "dropped_calls": 95,
    }
    # every recorded call still has its return: the document stays balanced
    ids = {e["id"] for e in doc["events"] if e["event"] == "call"}
    assert {e["parent_id"] for e in doc["events"] if e["event"] == "return"} == ids


def test_recording_write_streams_the_same_document(
    rec: Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracetool.agent import sessions as sessions_module

    monkeypatch.setattr(sessions_module, "CHUNK", 3)  # several chunks
    assert rec.start()
    for i in range(7):
        sql(rec, f"select {i}")
    result = rec.finish()
    assert result is not None
    path = result.write(tmp_path / "x.trace.json")
    assert orjson.loads(path.read_bytes()) == orjson.loads(orjson.dumps(result.to_dict()))
    assert len(orjson.loads(path.read_bytes())["events"]) == 14


def test_scoped_recording_context_manager(rec: Recorder) -> None:
    from tracetool.agent.recorder import scoped_recording

    with scoped_recording("GET /x", recorder_name="requests") as scope:
        sql(rec, "select 1")
    assert scope.recording is not None
    doc = scope.recording.to_dict()
    assert doc["metadata"]["name"] == "GET /x"
    assert [e["event"] for e in doc["events"]] == ["call", "return"]
    assert not rec.active


def test_scoped_session_follows_threads_started_inside(rec: Recorder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from tracetool.agent.recorder import follow_threads

    follow_threads()
    with ThreadPoolExecutor(1) as pool:
        scope = rec.start_scoped("t")
        sql(rec, "select 'main'")
        t = threading.Thread(target=sql, args=(rec, "select 'thread'"))
        t.start()
        t.join()
        pool.submit(sql, rec, "select 'pool'").result()  # a pool worker serves everyone
        doc = scope.stop().to_dict()
    got = [(e["sql_query"]["sql"], e["thread_id"]) for e in doc["events"] if "sql_query" in e]
    assert got == [("select 'main'", 1), ("select 'thread'", 2)]


def test_remote_recordings_are_named(rec: Recorder) -> None:
    assert rec.start()
    doc = rec.stop()
    assert doc is not None and doc["metadata"]["name"].startswith("remote recording 20")
    assert rec.start(name="checkout")
    doc = rec.stop()
    assert doc is not None and doc["metadata"]["name"] == "checkout"
