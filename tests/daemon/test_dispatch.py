"""The dispatcher on its own: JSON-RPC framing, error codes, the method table, discovery."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import tracetool_daemon.methods  # noqa: F401  (registers the methods before collection)
from tracetool_daemon.discovery import DaemonRunningError, claim
from tracetool_daemon.registry import METHODS, dispatch
from tracetool_daemon.service import Project, Service

from tracetool.paths import discovery_file, read_discovery


@pytest.fixture
def service(home: Path, tmp_path: Path) -> Service:
    trace = tmp_path / "trace"
    trace.mkdir()
    return Service([Project(tmp_path, trace.resolve(), tmp_path / "q.db")])


def rpc(service: Service, payload: Any) -> Any:
    raw = dispatch(service, json.dumps(payload))
    return json.loads(raw) if raw else None


def call(method: str, params: Any = None, id: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": id}
    if params is not None:
        body["params"] = params
    return body


def test_list_methods_names_every_registered_method(service: Service) -> None:
    names = rpc(service, call("system.listMethods"))["result"]
    assert names == sorted(METHODS)
    for expected in (
        "appmap.data",
        "appmap.list",
        "appmap.metadata",
        "appmap.sequenceDiagram",
        "appmap.stats",
        "explain",
        "explain.status",
        "index.files",
        "index.numProcessed",
        "index.status",
        "query.compare",
        "query.endpoints",
        "query.find",
        "query.hotspots",
        "query.related",
        "query.tree",
        "search",
        "system.listMethods",
        "thread.addMessageAttachment",
        "thread.create",
        "thread.get",
        "thread.list",
        "thread.pinItem",
        "thread.query",
        "thread.removeMessageAttachment",
        "thread.sendMessage",
        "thread.stopCompletion",
        "thread.unpinItem",
    ):
        assert expected in names
    verbose = rpc(service, call("system.listMethods", {"verbose": True}))["result"]
    assert {"name", "params", "summary"} <= set(verbose[0])


def test_docs_rpc_md_documents_every_method() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "rpc.md").read_text(encoding="utf-8")
    missing = [n for n in METHODS if f"`{n}`" not in doc and f"`{n} {{" not in doc]
    assert missing == []


@pytest.mark.parametrize(
    ("payload", "code", "message"),
    [
        (call("no.such.method"), -32601, "Method not found"),
        (call("search"), -32602, "Invalid params: missing a required argument: 'query'"),
        (call("search", {"query": "x", "bogus": 1}), -32602, "Invalid params:"),
        (call("search", {"query": 5}), -32602, "query must be a non-empty string"),
        (call("query.find", {"type": "appmaps", "colour": "red"}), -32602, "colour"),
        (call("thread.get", {"threadId": "nope"}), -32001, "no thread nope"),
        (call("appmap.stats"), -32002, "run `tracetool index`"),
        ({"jsonrpc": "2.0", "id": 1}, -32600, "Invalid request"),
    ],
)
def test_errors_have_standard_codes(
    service: Service, payload: dict[str, Any], code: int, message: str
) -> None:
    answer = rpc(service, payload)
    assert answer["error"]["code"] == code
    assert message in answer["error"]["message"] + str(answer["error"].get("data", ""))


def test_parse_error_batches_and_notifications(service: Service) -> None:
    assert json.loads(dispatch(service, b"{not json"))["error"]["code"] == -32700
    batch = rpc(service, [call("system.version", id=1), call("nope", id=2)])
    assert [r["id"] for r in batch] == [1, 2]
    assert batch[0]["result"]["version"] and batch[1]["error"]["code"] == -32601
    assert dispatch(service, json.dumps({"jsonrpc": "2.0", "method": "system.version"})) == b""


def test_index_files_rejects_paths_outside_the_trace_dir(service: Service, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.trace.json"
    answer = rpc(
        service,
        call("index.files", {"paths": [str(outside), "notes.txt", "node_modules/x.trace.json"]}),
    )["result"]
    reasons = [r["reason"] for r in answer["rejected"]]
    assert answer["accepted"] == []
    assert reasons[0].startswith("not inside the recordings directory")
    assert reasons[1].startswith("not a recording")
    assert reasons[2] == "in an ignored folder"


def test_claim_is_exclusive_and_replaces_a_stale_discovery_file(home: Path, tmp_path: Path) -> None:
    trace = tmp_path / "t"
    trace.mkdir()
    # A daemon that died without cleaning up left this behind.
    stale = discovery_file(trace)
    stale.parent.mkdir(parents=True)
    stale.write_text(json.dumps({"pid": 2**22 + 12345, "port": 1, "version": "0"}))
    assert read_discovery(trace) is None  # dead pid: nobody serves
    first = claim(trace)
    first.announce(4321)
    info = read_discovery(trace)
    assert info is not None and (info.pid, info.port) == (os.getpid(), 4321)
    # flock is per open file description, so a second claim in this process is refused too.
    with pytest.raises(DaemonRunningError, match=f"pid {os.getpid()}, JSON-RPC on 127.0.0.1:4321"):
        claim(trace, wait_for_announce=0)
    first.release()
    assert not stale.exists()
    second = claim(trace)
    second.release()


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_refuses_bad_parameters(service: Service, name: str) -> None:
    """An unknown parameter (or a missing required one, which is checked first) is -32602."""
    error = rpc(service, call(name, {"bogus": 1}))["error"]
    assert error["code"] == -32602
    message = error["message"] + str(error.get("data", ""))
    assert "bogus" in message or "missing a required argument" in message or "must be" in message
