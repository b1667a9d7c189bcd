"""Lanes linked through contextvars: tasks, task groups and context-copying threads nest under
the call that created them when it spans them; generator context managers are one call."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.agent.conftest import tree
from tests.agent.test_code_recording import record
from tracetool.agent.recorder import Recorder, get_recorder

LINKS = """
import asyncio
import threading
from contextlib import asynccontextmanager, contextmanager


def setup():
    return "open"


def teardown():
    return "closed"


def body():
    return "work"


@contextmanager
def txn():
    setup()
    yield "t"
    teardown()


def use():
    with txn():
        body()
    return "done"


@asynccontextmanager
async def atxn():
    setup()
    yield "t"
    teardown()


async def ause():
    async with atxn():
        body()


async def child(n):
    await asyncio.sleep(0)
    return n


async def group():
    import anyio

    async with anyio.create_task_group() as tg:
        tg.start_soon(child, 1)
        tg.start_soon(child, 2)
    return await anyio.to_thread.run_sync(body)


def in_thread():
    return body()


async def detached(started):
    async def later():
        await started.wait()
        in_thread()

    task = asyncio.get_running_loop().create_task(later())
    return task
"""


@pytest.fixture
def links(project: Any) -> Any:
    from tracetool.agent.integrations import generators

    generators.install()  # what install_all() does at start-up (idempotent; idle when off)
    project.write("links", LINKS)
    project.configure()
    return project.load("links")


def test_a_contextmanager_generator_is_one_call(links: Any) -> None:
    doc = record(links.use)
    (use,) = tree(doc)
    assert use[0].endswith(".use")
    labels = [node[0].rsplit(".", 1)[-1] for node in use[1]]
    assert sorted(labels) == ["body", "txn"]  # one txn call, the body beside it
    (txn,) = [node for node in use[1] if node[0].endswith(".txn")]
    assert [n[0].rsplit(".", 1)[-1] for n in txn[1]] == ["setup", "teardown"]


def test_an_asynccontextmanager_generator_is_one_call(links: Any) -> None:
    doc = record(lambda: asyncio.run(links.ause()))
    names = [e["method_id"] for e in doc["events"] if e["event"] == "call"]
    assert names.count("atxn") == 1
    (ause,) = tree(doc)
    (atxn,) = [n for n in ause[1] if n[0].endswith(".atxn")]
    assert [n[0].rsplit(".", 1)[-1] for n in atxn[1]] == ["setup", "teardown"]
    assert len({e["thread_id"] for e in doc["events"]}) == 1


def test_task_groups_and_worker_threads_nest_under_their_creator(links: Any) -> None:
    pytest.importorskip("anyio")  # (the agent-only venvs of scripts/test-agent-pythons lack it)
    doc = record(lambda: asyncio.run(links.group()))
    (group,) = tree(doc)
    assert [n[0].rsplit(".", 1)[-1] for n in group[1]] == ["child", "child", "body"]
    assert len({e["thread_id"] for e in doc["events"]}) == 1


def test_a_task_outliving_its_creator_stays_its_own_root(rec: Recorder) -> None:
    async def later(go: asyncio.Event) -> None:
        await go.wait()
        call = rec.call_event({"message": [{"name": "late"}]})
        rec.return_event(call, {}, 0.0)

    async def main() -> None:
        go = asyncio.Event()
        call = rec.call_event({"http_server_request": {"request_method": "GET", "path_info": "/"}})
        task = asyncio.get_running_loop().create_task(later(go))
        rec.return_event(call, {}, 0.0)
        go.set()
        await task

    assert rec.start()
    asyncio.run(main())
    doc = rec.stop()
    assert tree(doc) == [["http_server_request", []], ["message", []]]


def test_threads_without_a_copied_context_keep_their_own_lane(rec: Recorder) -> None:
    assert rec.start()
    call = rec.call_event({"http_server_request": {"request_method": "GET", "path_info": "/"}})

    def work() -> None:
        inner = rec.call_event({"message": [{"name": "thread"}]})
        rec.return_event(inner, {}, 0.0)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    rec.return_event(call, {}, 0.0)
    doc = rec.stop()
    assert tree(doc) == [["http_server_request", []], ["message", []]]


@pytest.fixture
def rec() -> Any:
    recorder = get_recorder()
    yield recorder
    recorder.finish()
