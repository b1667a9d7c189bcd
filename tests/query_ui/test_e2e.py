"""`tracetool query ui` as a real subprocess: its URL line, its JSON over HTTP, and the page as
headless Chromium renders it."""

from __future__ import annotations

import http.client
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import orjson
import pytest

from tests.query_mcp.shop_index import ROUTES, ShopIndex, clean_env
from tests.realparts.chromium import FLAGS, chromium

pytestmark = pytest.mark.e2e
DEADLINE = 30.0


@dataclass
class Ui:
    url: str
    port: int
    proc: subprocess.Popen[bytes]
    stdout: list[bytes]


def _pump(stream: IO[bytes], sink: list[bytes], lines: queue.Queue[bytes] | None = None) -> None:
    for line in stream:
        sink.append(line)
        if lines is not None:
            lines.put(line)


@pytest.fixture(scope="module")
def ui(shop: ShopIndex, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ui]:
    home = tmp_path_factory.mktemp("home")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracetool", "query", "ui", "--query-db", str(shop.query_db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(home),
        cwd=home,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out: list[bytes] = []
    err: list[bytes] = []
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, out, lines), daemon=True).start()
    threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True).start()
    try:
        first = lines.get(timeout=DEADLINE).decode().strip()
    except queue.Empty:
        proc.kill()
        raise AssertionError(f"no URL line; stderr: {b''.join(err).decode()}") from None
    match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/", first)
    assert match, first
    yield Ui(first, int(match.group(1)), proc, out)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=DEADLINE) == 0, b"".join(err).decode()
    # The URL was the only thing on stdout (machine-readable).
    assert b"".join(out).decode() == first + "\n"


def get(ui: Ui, path: str, headers: dict[str, str] | None = None, method: str = "GET") -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=DEADLINE)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        body = response.read()
        return response.status, response.headers, body
    finally:
        conn.close()


def get_json(ui: Ui, path: str, **kw: Any) -> tuple[int, Any]:
    status, headers, body = get(ui, path, **kw)
    assert headers["Content-Type"] == "application/json"
    return status, orjson.loads(body)


def test_json_endpoints(ui: Ui) -> None:
    status, summary = get_json(ui, "/api/summary")
    assert status == 200
    assert (summary["recordings"], summary["requests"], summary["routes"]) == (4, 5, 3)
    assert summary["by_test_status"] == {"failed": 1, "succeeded": 3}

    _, endpoints = get_json(ui, "/api/endpoints")
    assert {(r["method"], r["route"]) for r in endpoints["rows"]} == {
        ("GET", "/users/{id}"),
        ("POST", "/orders"),
        ("GET", "/users"),
    }
    _, failing = get_json(ui, "/api/endpoints?status=%3E%3D500")
    assert [r["route"] for r in failing["rows"]] == ["/orders"]

    _, hot = get_json(ui, "/api/hotspots?by=queries&limit=2")
    assert hot["count"] == 2 and hot["rows"][0]["name"] == "SELECT count(*) FROM orders"

    _, recordings = get_json(ui, "/api/recordings?branch=main")
    assert {r["name"] for r in recordings["rows"]} == {"users show", "orders create", "report job"}
    _, searched = get_json(ui, "/api/recordings?text=PaymentError")
    assert [r["recording"] for r in searched["rows"]] == ["main/orders_create.trace.json"]

    _, tree = get_json(ui, "/api/tree?appmap=" + quote("main/orders_create.trace.json"))
    assert [(r["depth"], r["kind"], r["label"]) for r in tree["rows"]] == [
        (0, "http_server", "POST /orders"),
        (1, "function", "OrdersController#create"),
        (2, "function", "OrderService#place"),
        (3, "sql", "INSERT INTO orders (user_id, total) VALUES (?, ?)"),
        (3, "sql", "SELECT * FROM users WHERE id = ?"),
    ]
    _, info = get_json(ui, "/api/recording?appmap=orders_create")
    assert (info["test_status"], info["failure"]) == ("failed", "expected 201, got 500")
    _, exceptions = get_json(ui, "/api/find?type=exceptions")
    assert [e["class"] for e in exceptions["rows"]] == ["PaymentError"]


def test_errors_and_refusals(ui: Ui) -> None:
    assert get_json(ui, "/api/tree?appmap=nope")[0] == 404
    status, body = get_json(ui, "/api/endpoints?status=lots")
    assert status == 400 and "bad --status" in body["error"]
    assert get_json(ui, "/api/endpoints?trace_dir=/")[0] == 400
    assert get_json(ui, "/api/nope")[0] == 404
    assert get_json(ui, "/nope.html")[0] == 404
    assert get_json(ui, "/api/summary", method="POST")[0] == 405
    # DNS rebinding and other sites' pages are refused; our own origin is fine.
    assert get_json(ui, "/api/summary", headers={"Host": "evil.example"})[0] == 403
    assert get_json(ui, "/", headers={"Host": "evil.example:80"})[0] == 403
    assert get_json(ui, "/api/summary", headers={"Origin": "http://evil.example"})[0] == 403
    own = {"Origin": f"http://127.0.0.1:{ui.port}", "Host": f"localhost:{ui.port}"}
    assert get_json(ui, "/api/summary", headers=own)[0] == 200


def test_static_app(ui: Ui) -> None:
    status, headers, body = get(ui, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert headers["X-Frame-Options"] == "DENY"
    html = body.decode()
    assert '<script src="/app.js"' in html and "http" not in html.replace("http-equiv", "")
    status, headers, body = get(ui, "/app.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert b"fetch(`/api/" in body
    assert get(ui, "/app.css")[0] == 200
    assert get(ui, "/favicon.svg")[1]["Content-Type"] == "image/svg+xml"


def test_missing_index_exits_with_the_prompt(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tracetool", "query", "ui", "--trace-dir", str(tmp_path)],
        capture_output=True,
        env=clean_env(tmp_path),
        cwd=tmp_path,
        timeout=DEADLINE,
    )
    assert done.returncode != 0
    assert done.stdout == b""
    assert b"run `tracetool index`" in done.stderr
    assert len(done.stderr.decode().strip().splitlines()) == 1


# ---------------------------------------------------------------- headless Chromium


def render(url: str, tmp_path: Path, screenshot: Path | None = None) -> str:
    """The DOM of `url` after its scripts ran (or a screenshot of it)."""
    args = [
        chromium(),
        *FLAGS,
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        # Lets the page's fetches finish before the DOM is dumped.
        "--virtual-time-budget=10000",
        "--window-size=1280,900",
    ]
    args += [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    done = subprocess.run(
        [*args, url], capture_output=True, timeout=60, env={**os.environ, "HOME": str(tmp_path)}
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done.stdout.decode()


def test_browser_renders_the_dashboard(ui: Ui, tmp_path: Path) -> None:
    dom = render(ui.url, tmp_path)
    assert 'data-ready="dashboard"' in dom, dom[-3000:]
    assert "data-error" not in dom
    for route in ROUTES:
        assert f">{route}</a>" in dom  # the slowest-endpoints panel links every route
    for name in ("users show", "orders create", "users index", "report job"):
        assert f">{name}</a>" in dom  # latest recordings
    assert "ReportJob#perform" in dom  # hotspots
    assert "/trace" in dom  # the header names the recordings directory


def test_browser_renders_endpoints_and_traces(ui: Ui, tmp_path: Path) -> None:
    dom = render(ui.url + "#/endpoints?status=4xx", tmp_path)
    assert 'data-ready="endpoints"' in dom
    assert "1 routes" in dom and ">/users/{id}</a>" in dom and ">/orders</a>" not in dom

    dom = render(ui.url + "#/recordings?text=users", tmp_path)
    assert 'data-ready="recordings"' in dom
    names = re.findall(r'<a href="#/recording/[^"]+" title="[^"]+">([^<]+)</a>', dom)
    assert sorted(names) == ["orders create", "users index", "users show"]


def test_browser_renders_a_recording(ui: Ui, tmp_path: Path) -> None:
    page = ui.url + "#/recording/" + quote("main/orders_create.trace.json", safe="")
    dom = render(page, tmp_path)
    assert 'data-ready="recording"' in dom, dom[-3000:]
    assert "expected 201, got 500" in dom  # the failure
    for label in (
        "POST /orders",
        "OrdersController#create",
        "OrderService#place",
        "INSERT INTO orders (user_id, total) VALUES (?, ?)",
    ):
        assert f">{label}</span>" in dom
    assert ">users show</a>" in dom  # related recordings

    shot = tmp_path / "recording.png"
    render(page, tmp_path, screenshot=shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
