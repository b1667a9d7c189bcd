"""The UI server in-process: local-only guards, the API mapping, the CLI's --open and errors."""

from __future__ import annotations

import http.client
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from tracetool_daemon.ui import UiServer
from tracetool_daemon.ui.api import ROUTES, handle, parse_query

from tests.query_mcp.shop_index import ShopIndex
from tracetool.cli import cli
from tracetool.errors import IndexMissingError, UsageError


def test_api_maps_endpoints_to_tools(shop: ShopIndex) -> None:
    q = str(shop.query_db)
    status, body = handle("/api/recordings", {"text": "orders"}, q)
    assert status == 200
    assert [r["recording"] for r in body["rows"]] == [
        "main/orders_create.trace.json",
        "jobs/report_job.trace.json",  # SELECT count(*) FROM orders
    ]
    status, body = handle("/api/tree", parse_query("appmap=users_show&depth=0&fold=false"), q)
    assert status == 200 and [r["label"] for r in body["rows"]] == ["GET /users/42", "GET /users/7"]
    assert handle("/api/summary/", {}, q)[1]["recordings"] == 4
    assert set(ROUTES) >= {"/api/summary", "/api/endpoints", "/api/hotspots", "/api/recordings"}


@pytest.mark.parametrize(
    ("path", "query", "status", "message"),
    [
        ("/api/nope", {}, 404, "no such endpoint /api/nope"),
        ("/api/tree", {"appmap": "nope"}, 404, "nope: no such recording"),
        ("/api/endpoints", {"status": "lots"}, 400, "bad --status 'lots'"),
        ("/api/tree", {"appmap": "users_show", "depth": "x"}, 400, "depth must be an integer"),
        ("/api/endpoints", {"query_db": "/etc/passwd"}, 400, "query_db cannot be set here"),
        ("/api/recordings", {"type": "calls"}, 400, "/api/recordings does not take type"),
        ("/api/find", {"type": "requests", "class": "X"}, 400, "does not apply"),
        ("/api/endpoints", {"bogus": "1"}, 400, "'bogus' was unexpected"),
    ],
)
def test_api_errors(
    shop: ShopIndex, path: str, query: dict[str, str], status: int, message: str
) -> None:
    got, body = handle(path, query, str(shop.query_db))
    assert got == status
    assert message in body["error"]


def test_parse_query_last_value_wins() -> None:
    assert parse_query("a=1&b=&a=2&c=x%20y") == {"a": "2", "c": "x y"}


@pytest.fixture
def running(shop: ShopIndex, tmp_path: Path) -> Iterator[tuple[UiServer, Path]]:
    copy = tmp_path / "copy.db"
    shutil.copy(shop.query_db, copy)
    server = UiServer(query_db=str(copy))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, copy
    server.shutdown()
    server.close()
    thread.join(timeout=10)


def _get(server: UiServer, path: str, headers: dict[str, str] | None = None) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, orjson.loads(body)


def test_a_vanished_index_is_503_with_the_prompt(running: tuple[UiServer, Path]) -> None:
    server, copy = running
    assert _get(server, "/api/summary")[0] == 200
    copy.unlink()
    status, body = _get(server, "/api/summary")
    assert status == 503
    assert "run `tracetool index`" in body["error"]


def test_a_busy_port_is_a_usage_error(shop: ShopIndex) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=f"port {port} on 127.0.0.1 is in use"):
            UiServer(query_db=str(shop.query_db), port=port)


def test_missing_index_fails_before_listening(tmp_path: Path) -> None:
    with pytest.raises(IndexMissingError, match="run `tracetool index`"):
        UiServer(trace_dir=str(tmp_path))


@pytest.mark.parametrize(
    ("flag", "opened"), [(None, False), ("--open", True), ("--no-open", False)]
)
def test_open_flag(
    shop: ShopIndex, monkeypatch: pytest.MonkeyPatch, flag: str | None, opened: bool
) -> None:
    calls: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url: calls.append(url))
    monkeypatch.setattr(UiServer, "serve_forever", lambda self: None)
    args = ["query", "ui", "--query-db", str(shop.query_db), *([flag] if flag else [])]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    url = result.stdout.strip()
    assert url.startswith("http://127.0.0.1:") and "\n" not in url
    # CliRunner's stdout is not a terminal, so the default is not to open
    assert calls == ([url] if opened else [])
