"""openapi and stats on what our own agent records from the example apps (real servers)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from tests.agent_e2e.conftest import (
    EXAMPLE_DEPS,
    _StubHandler,
    record,
    request,
    started_apps,
)
from tests.openapi.conftest import assert_valid

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

BEARER = {"Authorization": "Bearer e2e-token"}


def _shop(url: str) -> None:
    assert request(url, "GET", "/products?q=Tea", headers=BEARER).status == 200
    assert request(url, "GET", "/products/2").status == 200
    assert request(url, "GET", "/products/999").status == 404
    created = request(url, "POST", "/orders", {"product_id": 2, "quantity": 3})
    assert created.status == 201
    assert request(url, "POST", "/orders", {"product_id": 2}).status in (400, 201)
    assert request(url, "GET", f"/orders/{created.json()['id']}").status == 200
    assert request(url, "GET", "/boom").status == 500


def _fastapi(url: str) -> None:
    assert request(url, "GET", "/v1/items?limit=1", headers={"X-API-Key": "k"}).status == 200
    assert request(url, "GET", "/v1/items/2").status == 200
    assert request(url, "GET", "/v1/items/99").status == 404
    assert request(url, "POST", "/v1/items", {"name": "washer", "stock": 7}).status == 201
    assert request(url, "GET", "/rates?currency=USD").status == 200


def _django(url: str) -> None:
    created = request(url, "POST", "/notes/", {"title": "e2e", "tag": "work"})
    assert created.status == 201
    assert request(url, "GET", f"/notes/{created.json()['id']}/").status == 200
    assert request(url, "GET", "/tags/work/").status == 200
    assert request(url, "GET", "/weather/?city=Oslo").status == 200


DRIVERS = {"shop": _shop, "fastapi": _fastapi, "django": _django}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One remote recording per example app, written into one trace directory."""
    import importlib.util

    missing = [m for m in EXAMPLE_DEPS if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the examples need {', '.join(missing)} (pip install -e '.[examples]')")
    tmp = tmp_path_factory.mktemp("openapi_examples")
    stub = ThreadingHTTPServer(("127.0.0.1", 0), _StubHandler)
    stub.daemon_threads = True
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    stub_url = f"http://127.0.0.1:{stub.server_address[1]}"
    try:
        with started_apps(DRIVERS, tmp, stub_url) as servers:
            trace_dir = tmp / "recordings"
            trace_dir.mkdir()
            for name, drive in DRIVERS.items():
                doc = record(servers[name], drive)
                (trace_dir / f"{name}.trace.json").write_bytes(orjson.dumps(doc))
            yield trace_dir
    finally:
        stub.shutdown()
        stub.server_close()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracetool", *args], capture_output=True, text=True, check=False
    )


def test_openapi_of_the_example_apps(recordings: Path) -> None:
    proc = _run("openapi", "--trace-dir", str(recordings))
    assert proc.returncode == 0, proc.stderr
    doc = yaml.safe_load(proc.stdout)
    assert_valid(doc)
    paths = doc["paths"]

    def param(path: str, method: str, name: str) -> dict[str, Any]:
        return next(p for p in paths[path][method]["parameters"] if p["name"] == name)

    # shop (Flask)
    assert param("/products/{product_id}", "get", "product_id") == {
        "name": "product_id",
        "in": "path",
        "required": True,
        "schema": {"type": "integer"},
    }
    assert set(paths["/products/{product_id}"]["get"]["responses"]) == {"200", "404"}
    assert param("/products", "get", "q")["in"] == "query"
    assert paths["/products"]["get"]["security"] == [{"bearer": []}]
    body = paths["/orders"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["product_id"] == {"type": "integer"}
    assert param("/orders/{order_id}", "get", "order_id")["required"] is True
    assert "500" in paths["/boom"]["get"]["responses"]
    # fastapi
    assert param("/v1/items/{item_id}", "get", "item_id")["schema"] == {"type": "integer"}
    assert set(paths["/v1/items/{item_id}"]["get"]["responses"]) == {"200", "404"}
    assert paths["/v1/items"]["get"]["security"] == [{"x_api_key": []}]
    item = paths["/v1/items"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(item["properties"]) >= {"name", "stock"}
    assert param("/rates", "get", "currency")["in"] == "query"
    # django: path() and re_path() routes
    assert param("/notes/{note_id}/", "get", "note_id")["schema"] == {"type": "integer"}
    assert param("/tags/{slug}/", "get", "slug")["schema"] == {"type": "string"}
    assert "post" in paths["/notes/"]
    schemes = doc["components"]["securitySchemes"]
    assert schemes["bearer"] == {"type": "http", "scheme": "bearer"}
    assert schemes["x_api_key"]["type"] == "apiKey"


def test_stats_of_the_example_apps(recordings: Path) -> None:
    proc = _run("stats", str(recordings), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["recordings"] == 3 and data["warnings"] == []
    for name in DRIVERS:
        proc = _run("stats", "-a", str(recordings / f"{name}.trace.json"), "-f", "json")
        assert proc.returncode == 0, proc.stderr
        single = json.loads(proc.stdout)
        assert all(f["count"] > 0 and f["size"] > 0 for f in single["functions"])
