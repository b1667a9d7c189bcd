"""Index and query recordings the agent made of the example shop (a real Flask server process).

The server runs with TRACETOOL=true and TRACETOOL_RECORD_REQUESTS=true, so every request below
becomes one recording; then `tracetool index` and `tracetool query` run as real processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent_e2e.conftest import EXAMPLE_DEPS, AppServer, request, start_app, stub_url

pytestmark = pytest.mark.e2e
__all__ = ["stub_url"]  # the fixture, imported for this module


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, stub_url: str) -> Iterator[Path]:
    import importlib.util

    if importlib.util.find_spec("flask") is None or importlib.util.find_spec("requests") is None:
        pytest.skip(f"the example shop needs {', '.join(EXAMPLE_DEPS[:1])} and requests")
    tmp = tmp_path_factory.mktemp("agent_shop")
    server: AppServer = start_app("shop", tmp, stub_url, TRACETOOL_RECORD_REQUESTS="true")
    try:
        for path in ("/products", "/products/1", "/products/2", "/products/999"):
            assert request(server.url, "GET", path).status in (200, 404)
        created = request(server.url, "POST", "/orders", {"product_id": 1, "quantity": 2})
        assert created.status == 201
        assert request(server.url, "POST", "/orders", {"quantity": 2}).status == 400
        assert request(server.url, "GET", f"/orders/{created.json()['id']}").status == 200
        assert request(server.url, "GET", "/boom").status == 500
    finally:
        server.stop()
    trace = tmp / "shop" / "trace"
    assert len(list(trace.rglob("*.trace.json"))) == 8
    return trace


def tracetool(home: Path, *args: str) -> Any:
    out = subprocess.run(
        [sys.executable, "-m", "tracetool", *args],
        capture_output=True,
        text=True,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    return out


def test_index_and_query_agent_recordings(recorded: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    index = tracetool(home, "index", "--trace-dir", str(recorded), "--json")
    result = json.loads(index.stdout)
    assert len(result["added"]) == 8 and result["skipped"] == []

    def query(*args: str) -> Any:
        return json.loads(
            tracetool(home, "query", *args, "--trace-dir", str(recorded), "--json").stdout
        )

    endpoints = query("endpoints")
    assert [(r["method"], r["route"], r["count"], r["statuses"]) for r in endpoints] == [
        ("GET", "/boom", 1, {"500": 1}),
        ("POST", "/orders", 2, {"201": 1, "400": 1}),
        ("GET", "/orders/{order_id}", 1, {"200": 1}),
        ("GET", "/products", 1, {"200": 1}),
        ("GET", "/products/{product_id}", 3, {"200": 2, "404": 1}),
    ]
    assert all(r["p50_ms"] is not None and r["p50_ms"] > 0 for r in endpoints)
    errors = query("find", "requests", "--status", ">=500")
    assert [(r["method"], r["path"], r["status"]) for r in errors] == [("GET", "/boom", 500)]
    client_errors = query("find", "requests", "--status", "400-499")
    assert sorted((r["method"], r["path"]) for r in client_errors) == [
        ("GET", "/products/999"),
        ("POST", "/orders"),
    ]
    exceptions = query("find", "exceptions", "--route", "GET /boom", "--class", "RuntimeError")
    assert [(e["class"], e["message"]) for e in exceptions][:1] == [
        ("builtins.RuntimeError", "the shop exploded")
    ]
    inserts = query("find", "queries", "--route", "POST /orders", "--table", "orders")
    assert len(inserts) == 1 and inserts[0]["sql"].upper().startswith("INSERT INTO ORDERS")
    logs = query("find", "logs", "--route", "POST /orders")
    assert any("created" in r["message"] for r in logs)
    place = query("find", "calls", "--method", "place_order")
    assert [(r["count"], r["function"].endswith("place_order")) for r in place] == [
        (1, True),
        (1, True),
    ]
