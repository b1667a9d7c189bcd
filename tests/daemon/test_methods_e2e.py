"""Every JSON-RPC method against a real daemon: happy path and error path."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import DaemonProcess, daemon_env, make_project, poll
from tracetool.assistant import OFFLINE_NOTICE

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonProcess, Path]]:
    """One daemon for the module (HOME in a temp dir), with the three-recording project."""
    base = tmp_path_factory.mktemp("methods")
    home = base / "home"
    home.mkdir()
    root = make_project(base / "proj")
    trace = root / "tmp" / "trace"
    d = DaemonProcess(["rpc"], root, daemon_env(home))
    d.read_ready()
    poll(
        lambda: (
            d.call("index.status")["recordings"] == 3 and d.call("index.status")["state"] == "ready"
        )
    )
    yield d, trace.resolve()
    d.stop()


def error(d: DaemonProcess, method: str, params: Any) -> dict[str, Any]:
    answer = d.rpc(method, params)
    assert "error" in answer, answer
    err: dict[str, Any] = answer["error"]
    return err


def test_system_methods(served: tuple[DaemonProcess, Path]) -> None:
    d, trace = served
    names = d.call("system.listMethods")
    assert "explain" in names and "query.endpoints" in names
    version = d.call("system.version")
    assert version["projects"][0]["traceDir"] == str(trace)
    assert error(d, "system.listMethods", {"verbose": "yes"})["code"] == -32602


def test_index_methods(served: tuple[DaemonProcess, Path]) -> None:
    d, trace = served
    assert d.call("index.numProcessed") >= 3
    status = d.call("index.status")
    assert status["recordings"] == 3 and status["watching"] is True
    target = trace / "users" / "show_user.trace.json"
    out = d.call("index.files", {"paths": [str(target)], "wait": True})
    assert out == {
        "accepted": ["users/show_user.trace.json"],
        "rejected": [],
        "outcomes": {"users/show_user.trace.json": "unchanged"},
    }
    queued = d.call("index.files", {"paths": [str(target)]})
    assert "outcomes" not in queued
    assert error(d, "index.files", {"paths": "x"})["code"] == -32602
    assert error(d, "index.status", {"directory": "/nowhere"})["code"] == -32001


def test_recording_methods(served: tuple[DaemonProcess, Path]) -> None:
    d, trace = served
    rows = d.call("appmap.list", {"status": ">=500"})
    assert [r["recording"] for r in rows] == ["orders/create_order_fails.trace.json"]
    assert rows[0]["path"] == str(trace / "orders" / "create_order_fails.trace.json")
    meta = d.call("appmap.metadata", {"appmap": "users/show_user"})
    assert meta["name"] == "show user" and meta["test_status"] == "succeeded"
    stats = d.call("appmap.stats")
    assert stats["numAppMaps"] == 3
    assert "GET /users/{id}" in stats["routes"] and "orders" in stats["tables"]
    found = d.call("search", {"query": "orders", "maxResults": 5})
    assert found["numResults"] == 2
    assert {r["recording"] for r in found["results"]} == {
        "orders/list_orders.trace.json",
        "orders/create_order_fails.trace.json",
    }
    only = d.call("search", {"query": "orders", "appmaps": ["orders/list_orders.trace.json"]})
    assert [r["recording"] for r in only["results"]] == ["orders/list_orders.trace.json"]
    assert error(d, "appmap.metadata", {"appmap": "nope"})["code"] == -32001
    assert error(d, "appmap.metadata", {"appmap": "../../../etc/passwd"})["code"] == -32602
    assert error(d, "search", {"query": ""})["code"] == -32602


def test_data_and_sequence_diagram(served: tuple[DaemonProcess, Path]) -> None:
    d, _ = served
    data = d.call("appmap.data", {"appmap": "orders/create_order_fails.trace.json"})
    assert data["metadata"]["name"] == "create order fails" and len(data["events"]) == 8
    hide = {"hideName": ["function:app/models/Order.create"], "limitRootEvents": False}
    for encoded in (hide, json.dumps(hide), base64.b64encode(json.dumps(hide).encode()).decode()):
        filtered = d.call("appmap.data", {"appmap": "orders/create_order_fails", "filter": encoded})
        assert len(filtered["events"]) == 6, encoded
    diagram = d.call("appmap.sequenceDiagram", {"appmap": "orders/create_order_fails"})
    assert {"actors", "rootActions"} <= set(diagram)
    uml = d.call(
        "appmap.sequenceDiagram", {"appmap": "orders/create_order_fails", "format": "plantuml"}
    )
    assert uml.startswith("@startuml") and "POST /orders" in uml
    assert error(d, "appmap.data", {"appmap": "orders/list_orders", "filter": 3})["code"] == -32602
    bad = {"appmap": "orders/list_orders", "format": "png"}
    assert error(d, "appmap.sequenceDiagram", bad)["code"] == -32602


def test_query_methods(served: tuple[DaemonProcess, Path]) -> None:
    d, _ = served
    endpoints = d.call("query.endpoints")
    assert {(e["method"], e["route"]) for e in endpoints} == {
        ("GET", "/users/{id}"),
        ("GET", "/orders"),
        ("POST", "/orders"),
    }
    failing = d.call("query.find", {"type": "requests", "status": "5xx"})
    assert len(failing) == 1 and failing[0]["status"] == 500
    tree = d.call("query.tree", {"appmap": "users/show_user"})
    assert len(tree) == 4
    related = d.call("query.related", {"appmap": "orders/list_orders"})
    assert {r["recording"] for r in related} == {
        "orders/create_order_fails.trace.json",
        "users/show_user.trace.json",
    }
    hot = d.call("query.hotspots", {"kind": "queries"})
    assert len(hot) == 3
    assert d.call("query.compare", {"a": "main", "b": "main"})
    assert error(d, "query.find", {"type": "widgets"})["code"] == -32602
    assert error(d, "query.find", {"type": "requests", "status": "lots"})["code"] == -32602
    assert error(d, "query.tree", {"appmap": "missing"})["code"] == -32001
    assert error(d, "query.related", {"appmap": "x", "limit": 0})["code"] == -32602
    assert error(d, "query.hotspots", {"kind": "widgets"})["code"] == -32602
    assert error(d, "query.compare", {"a": "main"})["code"] == -32602
    assert error(d, "query.endpoints", {"class": 3})["code"] == -32602


def answer_of(d: DaemonProcess, ids: dict[str, str]) -> dict[str, Any]:
    def done() -> Any:
        status = d.call("explain.status", {"userMessageId": ids["userMessageId"]})
        return status if status["step"] in ("complete", "error") else None

    result: dict[str, Any] = poll(done)
    return result


def test_explain_offline_answers_from_the_index(served: tuple[DaemonProcess, Path]) -> None:
    d, _ = served
    ids = d.call("explain", {"question": "Why does creating an order fail with a 500?"})
    status = answer_of(d, ids)
    assert status["step"] == "complete", status
    text = "".join(status["explanation"])
    assert text.startswith(OFFLINE_NOTICE)
    assert "orders/create_order_fails.trace.json" in text
    assert "`POST /orders`" in text and "INSERT INTO orders" in text
    assert "app.models.Order.create" in text  # a call path down to the matching function
    assert status["searchResponse"]["results"][0]["path"] == "orders/create_order_fails.trace.json"
    assert error(d, "explain", {"question": ""})["code"] == -32602
    assert error(d, "explain.status", {"userMessageId": "nope"})["code"] == -32001


def test_thread_methods(served: tuple[DaemonProcess, Path]) -> None:
    d, _ = served
    thread = d.call("thread.create", {"title": "orders"})
    tid = thread["id"]
    assert d.call("thread.create", {"threadId": "mine"})["id"] == "mine"
    assert error(d, "thread.create", {"threadId": "mine"})["code"] == -32602
    pinned = d.call("thread.pinItem", {"threadId": tid, "uri": "file:///o.py", "content": "x"})
    attachment = d.call("thread.addMessageAttachment", {"threadId": tid, "content": "log line"})
    extra = d.call("thread.addMessageAttachment", {"threadId": tid, "uri": "file:///y"})
    assert d.call(
        "thread.removeMessageAttachment", {"threadId": tid, "attachmentId": extra["id"]}
    ) == {"removed": True}
    ids = d.call("thread.sendMessage", {"threadId": tid, "content": "What lists orders?"})
    assert answer_of(d, ids)["step"] == "complete"
    history = d.call("thread.get", {"threadId": tid})
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    assert history["messages"][0]["attachments"][0]["id"] == attachment["id"]
    assert history["pinnedItems"] == [pinned]
    assert d.call("thread.unpinItem", {"threadId": tid, "id": pinned["id"]}) == {"removed": True}
    assert d.call("thread.stopCompletion", {"threadId": tid}) == {"stopped": False}
    listed = d.call("thread.list", {"limit": 50})
    assert listed[0]["id"] == tid and listed[0]["messageCount"] == 2
    assert [t["id"] for t in d.call("thread.query", {"threadId": "mine"})] == ["mine"]
    assert error(d, "thread.sendMessage", {"threadId": "nope", "content": "q"})["code"] == -32001
    assert error(d, "thread.query", {"orderBy": "size"})["code"] == -32602
    assert error(d, "thread.pinItem", {"threadId": tid})["code"] == -32602
    assert error(d, "thread.unpinItem", {"threadId": tid})["code"] == -32602
    assert error(d, "thread.list", {"limit": -1})["code"] == -32602
    assert error(d, "thread.get", {})["code"] == -32602
    assert error(d, "thread.stopCompletion", {"threadId": "nope"})["code"] == -32001
    bad = {"threadId": tid, "attachmentId": 1}
    assert error(d, "thread.removeMessageAttachment", bad)["code"] == -32602
    assert error(d, "thread.addMessageAttachment", {"threadId": tid})["code"] == -32602
