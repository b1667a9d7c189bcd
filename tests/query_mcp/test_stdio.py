"""`tracetool query mcp` as a real subprocess, spoken to over stdio: by hand (JSON-RPC lines) and
with the MCP SDK's own client."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from tests.query_mcp.shop_index import ROUTES, ShopIndex, clean_env

pytestmark = pytest.mark.e2e
DEADLINE = 30.0


class LineClient:
    """JSON-RPC 2.0 over a child's stdin/stdout, one message per line."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tracetool", "query", "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.raw: list[bytes] = []
        self.stderr: list[bytes] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True).start()
        self.next_id = 0

    def _pump(self, stream: IO[bytes]) -> None:
        for line in stream:
            self.raw.append(line)
            self.lines.put(line)

    def _drain(self, stream: IO[bytes]) -> None:
        self.stderr.extend(stream)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                assert self.proc.poll() is None, b"".join(self.stderr).decode()
                continue
            answer = json.loads(line)
            if answer.get("id") == self.next_id:
                return answer  # type: ignore[no-any-return]
        raise AssertionError(f"no answer to {method}; stderr: {b''.join(self.stderr).decode()}")

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = self.request("tools/call", {"name": name, "arguments": arguments})
        assert "result" in answer, answer
        return answer["result"]  # type: ignore[no-any-return]

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=DEADLINE)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture
def client(shop: ShopIndex, home: Path, tmp_path: Path) -> Any:
    c = LineClient(
        ["--trace-dir", str(shop.trace_dir), "--query-db", str(shop.query_db)],
        clean_env(home),
        tmp_path,
    )
    answer = c.request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "tests", "version": "1"},
        },
    )
    assert answer["result"]["serverInfo"]["name"] == "tracetool"
    assert "tools" in answer["result"]["capabilities"]
    c.send({"method": "notifications/initialized"})
    yield c
    if c.proc.poll() is None:
        c.close()


def _rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    assert result.get("isError") is not True, result
    structured = result["structuredContent"]
    # The same JSON as text, for clients that only read text content.
    assert json.loads(result["content"][0]["text"]) == structured
    return structured["rows"]  # type: ignore[no-any-return]


def test_tools_over_stdio_by_hand(client: LineClient, shop: ShopIndex) -> None:
    tools = client.request("tools/list")["result"]["tools"]
    by_name = {t["name"]: t for t in tools}
    assert list(by_name) == [
        "summary",
        "recording",
        "endpoints",
        "find",
        "tree",
        "related",
        "hotspots",
        "compare",
        "search",
    ]
    find_schema = by_name["find"]["inputSchema"]
    assert find_schema["required"] == ["type"]
    assert {"type", "text", "status", "route", "class", "limit", "trace_dir", "query_db"} <= set(
        find_schema["properties"]
    )
    assert all(t["annotations"]["readOnlyHint"] for t in tools)

    summary = client.call("summary", {})["structuredContent"]
    assert (summary["recordings"], summary["requests"], summary["routes"]) == (4, 5, 3)

    endpoints = _rows(client.call("endpoints", {}))
    assert {r["route"] for r in endpoints} == set(ROUTES)
    failing = _rows(client.call("endpoints", {"status": ">=500"}))
    assert [(r["method"], r["route"], r["statuses"]) for r in failing] == [
        ("POST", "/orders", {"500": 1})
    ]

    found = _rows(client.call("find", {"type": "recordings", "text": "users"}))
    assert {r["recording"] for r in found} == {
        "main/users_show.trace.json",
        "feature/users_index.trace.json",
        "main/orders_create.trace.json",  # its SQL reads the users table
    }
    exceptions = _rows(client.call("find", {"type": "exceptions"}))
    assert [(e["class"], e["message"]) for e in exceptions] == [("PaymentError", "card declined")]

    tree = _rows(client.call("tree", {"appmap": "main/users_show", "depth": 1}))
    assert [(r["depth"], r["label"]) for r in tree] == [
        (0, "GET /users/42"),
        (1, "UsersController#show"),
        (0, "GET /users/7"),
        (1, "UsersController#show"),
    ]
    hot = _rows(client.call("hotspots", {"by": "queries", "limit": 1}))
    assert len(hot) == 1 and hot[0]["kind"] == "query"
    delta = _rows(client.call("compare", {"branch_a": "main", "branch_b": "feature"}))
    assert {r["route"] for r in delta} == set(ROUTES)
    assert _rows(client.call("search", {"text": "PaymentError"}))[0]["recording"] == (
        "main/orders_create.trace.json"
    )
    assert _rows(client.call("related", {"appmap": "users_show"}))

    assert client.close() == 0
    # stdout carried protocol messages only
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in client.raw)


def test_errors_are_tool_results_and_the_server_keeps_serving(
    client: LineClient, tmp_path: Path
) -> None:
    missing = client.call("endpoints", {"query_db": str(tmp_path / "none" / "query.db")})
    assert missing["isError"] is True
    text = missing["content"][0]["text"]
    assert "no query database" in text and "run `tracetool index`" in text

    unknown = client.call("tree", {"appmap": "no_such_test"})
    assert unknown["isError"] is True
    assert unknown["content"][0]["text"].startswith("no_such_test: no such recording")

    bad = client.call("find", {"type": "requests", "status": "lots"})
    assert bad["isError"] is True and "bad --status 'lots'" in bad["content"][0]["text"]
    mistyped = client.call("find", {"type": "requests", "limit": "ten"})
    assert mistyped["isError"] is True and "limit" in mistyped["content"][0]["text"]

    no_tool = client.request("tools/call", {"name": "drop_tables", "arguments": {}})
    assert no_tool["error"]["code"] == -32602
    assert "unknown tool 'drop_tables'" in no_tool["error"]["message"]

    # still alive and answering
    assert _rows(client.call("endpoints", {"route": "GET /users"}))[0]["count"] == 1
    assert client.close() == 0


def test_starts_without_an_index(home: Path, tmp_path: Path) -> None:
    c = LineClient(["--trace-dir", str(tmp_path / "trace")], clean_env(home), tmp_path)
    c.request(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}},
    )
    c.send({"method": "notifications/initialized"})
    result = c.call("summary", {})
    assert result["isError"] is True
    assert "run `tracetool index`" in result["content"][0]["text"]
    assert str(home) in result["content"][0]["text"]  # the default ~/.trace/data/<sha>/query.db
    assert c.close() == 0


def test_the_sdk_client_talks_to_it(shop: ShopIndex, home: Path, tmp_path: Path) -> None:
    anyio = pytest.importorskip("anyio")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tracetool", "query", "mcp", "--query-db", str(shop.query_db)],
        env=clean_env(home),
        cwd=str(tmp_path),
    )

    async def session() -> tuple[list[str], Any, Any]:
        with anyio.fail_after(DEADLINE):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    listed = await s.list_tools()
                    rows = await s.call_tool("find", {"type": "requests", "status": "4xx"})
                    err = await s.call_tool("recording", {"appmap": "nope"})
                    return [t.name for t in listed.tools], rows, err

    names, rows, err = anyio.run(session)
    assert {"endpoints", "find", "tree", "related", "hotspots", "compare", "search"} <= set(names)
    assert not rows.is_error
    assert [(r["method"], r["path"], r["status"]) for r in rows.structured_content["rows"]] == [
        ("GET", "/users/42", 404)
    ]
    assert err.is_error and "no such recording" in err.content[0].text


def test_paths_outside_the_project_are_refused(
    client: LineClient, shop: ShopIndex, home: Path, tmp_path: Path
) -> None:
    """Issue 19.5: a model-chosen `query_db` / `trace_dir` cannot open files elsewhere."""
    for arguments in (
        {"query_db": "/etc/passwd"},
        {"query_db": "../../../../etc/passwd"},
        {"trace_dir": "/"},
        {"trace_dir": str(Path(shop.trace_dir).parent.parent)},
        {"query_db": str(tmp_path / "link" / "x.db")},  # a symlink leading out
    ):
        if "link" in str(arguments.get("query_db", "")):
            (tmp_path / "link").symlink_to("/etc")
        refused = client.call("summary", arguments)
        assert refused["isError"] is True, arguments
        assert "is outside the project" in refused["content"][0]["text"], refused
    # inside: the project (the server's directory), the server's own index, ~/.trace/data
    inside = client.call("summary", {"query_db": str(tmp_path / "no.db")})
    assert "run `tracetool index`" in inside["content"][0]["text"]
    default = client.call("summary", {"query_db": str(home / ".trace" / "data" / "x" / "q.db")})
    assert "run `tracetool index`" in default["content"][0]["text"]
    own = client.call("summary", {"query_db": str(shop.query_db)})
    assert own.get("isError") is not True and own["structuredContent"]["recordings"] == 4
