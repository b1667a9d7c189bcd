"""The plugin on the example shop (examples/shop, Flask + SQLite): remote mode against the app
started as a real server with ``TRACETOOL=true``, and in-process mode on its own test suite."""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pytest_plugin.helpers import by_name, read_recordings

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.usefixtures("clean_env"),
    pytest.mark.skipif(not (SHOP / "shop").is_dir(), reason="examples/shop is not there"),
]

# What the `.pth` hook does at start-up with TRACETOOL=true, done explicitly so the test does not
# depend on how the package was installed (an editable install may lack the .pth).
SERVER = (
    "import runpy, sys; from tracetool.agent.startup import activate_from_env; "
    "assert activate_from_env(), 'agent not activated'; "
    "sys.argv = ['shop.server', '--port', '0']; runpy.run_module('shop.server', run_name='__main__')"
)

CLIENT_TESTS = """
import json, os, urllib.request

URL = os.environ["SHOP_URL"]
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(URL + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with OPENER.open(request, timeout=10) as response:
        return response.status, json.loads(response.read())

def test_lists_products():
    status, products = call("GET", "/products")
    assert status == 200 and len(products) == 3

def test_places_an_order():
    status, order = call("POST", "/orders", {"product_id": 2, "quantity": 3})
    assert status == 201
    assert order["total_cents"] == 999  # wrong on purpose: the test fails, the recording stays
"""


@pytest.fixture
def shop_server(tmp_path: Path) -> Iterator[str]:
    # the stub module alone: importing the `shop` package would load the whole app (Flask,
    # requests) into this test process, where it outlives the test
    spec = importlib.util.spec_from_file_location(
        "_shop_pricing_stub", SHOP / "shop" / "pricing_stub.py"
    )
    assert spec is not None and spec.loader is not None
    stub_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stub_module)
    stub = stub_module.PricingStub().start()
    env = {
        **os.environ,
        "TRACETOOL": "true",
        "TRACETOOL_CONFIG": str(SHOP / "trace.yml"),
        "TRACETOOL_TRACE_DIR": str(tmp_path / "server-trace"),
        "SHOP_DATABASE": str(tmp_path / "shop.db"),
        "SHOP_PRICING_URL": stub.url,
        "PYTHONPATH": str(SHOP),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        cwd=SHOP,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
    try:
        try:
            line = lines.get(timeout=30)  # polls with a deadline: the server's first line
        except queue.Empty:
            pytest.fail("the shop server did not start within 30 s")
        assert line.startswith("listening on "), line
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        stub.stop()


def _routes(doc: dict[str, Any]) -> list[str]:
    return [
        f"{e['http_server_request']['request_method']} {e['http_server_request']['path_info']}"
        for e in doc["events"]
        if e.get("event") == "call" and "http_server_request" in e
    ]


def _sql(doc: dict[str, Any]) -> list[str]:
    return [e["sql_query"]["sql"] for e in doc["events"] if "sql_query" in e]


def test_remote_recording_of_the_shop_server(
    pytester: pytest.Pytester, shop_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_URL", shop_server)
    pytester.makepyfile(test_shop_client=CLIENT_TESTS)
    result = pytester.runpytest_subprocess("--trace-url", shop_server)
    result.assert_outcomes(passed=1, failed=1)
    out = pytester.path / "tmp" / "trace" / "pytest"
    result.stdout.fnmatch_lines([f"tracetool: 2 recordings from {shop_server} written to {out}"])
    assert "warning" not in result.stdout.str()
    docs = by_name(read_recordings(out))
    assert set(docs) == {"lists products", "places an order"}

    products = docs["lists products"]
    assert _routes(products) == ["GET /products"]
    assert any("products" in sql.lower() for sql in _sql(products))
    meta = products["metadata"]
    assert meta["recorder"] == {"name": "pytest", "type": "tests"}
    assert meta["labels"][:2] == ["pytest", "passed"]
    assert meta["test_status"] == "succeeded"
    assert meta["app"] == "shop"
    names = [f["name"] for f in meta["frameworks"]]
    assert names[0] == "pytest" and "flask" in [n.lower() for n in names]

    order = docs["places an order"]
    assert _routes(order) == ["POST /orders"]
    assert order["metadata"]["test_status"] == "failed"
    assert "999" in order["metadata"]["test_failure"]["message"]
    # the order's outgoing call to the pricing service was recorded by the server too
    assert any("http_client_request" in e for e in order["events"])


def test_in_process_recording_of_the_shop_suite(pytester: pytest.Pytester) -> None:
    # the shop's own suite (Flask test client, in-process) with --trace-record
    for item in ("shop", "tests", "conftest.py", "trace.yml"):
        source = SHOP / item
        target = pytester.path / item
        if source.is_dir():
            import shutil

            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    result = pytester.runpytest_subprocess("--trace-record", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0, result.stdout.str()
    out = pytester.path / "tmp" / "trace"
    # every request the tests made is in its test's document: no per-request files
    assert sorted(p.name for p in out.iterdir()) == ["pytest"]
    docs = by_name(read_recordings(out / "pytest"))
    assert len(docs) == outcomes["passed"]
    listing = docs["lists every product"]
    assert _routes(listing) == ["GET /products"]
    assert any("products" in sql.lower() for sql in _sql(listing))
    assert json.dumps(listing["metadata"]["frameworks"]).lower().count("flask") == 1
    order = docs["places an order priced by the pricing service"]
    assert [r.split()[0] for r in _routes(order)] == ["POST", "GET"]
    # functions of the recorded package (trace.yml: shop) called by the request
    assert any(e.get("method_id") == "place_order" for e in order["events"])
