"""Live servers in tests, recorded in-process (real pytest subprocesses, real servers on
127.0.0.1): a server thread started by a module- or session-scoped fixture (werkzeug's
`make_server(...).serve_forever`, uvicorn in a thread) serves each test, and every request it
handles during a test is in THAT test's recording — also when the test drives it from a
ThreadPoolExecutor. The app's own outgoing httpx calls are recorded under in-process clients
(Starlette's TestClient, httpx.ASGITransport)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.pytest_plugin.helpers import by_name, read_recordings

pytestmark = pytest.mark.usefixtures("clean_env")

TRACE_YML = """
name: live
packages:
  - path: livepkg
"""

WEB = """
import os

import httpx
from flask import Flask
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

flask_app = Flask("live")


@flask_app.route("/greet/<name>")
def greet(name):
    return greeting(name)


def greeting(name):
    return f"hello {name}"


async def square(request):
    return PlainTextResponse(str(squared(int(request.path_params["n"]))))


def squared(n):
    return n * n


async def relay(request):
    async with httpx.AsyncClient() as client:
        upstream = await client.get(os.environ["UPSTREAM_URL"] + "/weather")
    return PlainTextResponse(upstream.text)


star_app = Starlette(routes=[Route("/square/{n}", square), Route("/relay", relay)])
"""

TESTS = """
import asyncio
import os
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import uvicorn
from starlette.testclient import TestClient
from werkzeug.serving import make_server

from livepkg.web import flask_app, star_app


class Upstream(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"sunny"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="session", autouse=True)
def upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    os.environ["UPSTREAM_URL"] = f"http://127.0.0.1:{server.server_port}"
    yield
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def werkzeug_url():
    server = make_server("127.0.0.1", 0, flask_app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(10)


@pytest.fixture(scope="session")
def uvicorn_url():
    config = uvicorn.Config(star_app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def test_werkzeug_first(werkzeug_url):
    assert get(werkzeug_url + "/greet/ann") == "hello ann"


def test_werkzeug_second(werkzeug_url):
    assert get(werkzeug_url + "/greet/bob") == "hello bob"


def test_werkzeug_from_a_pool(werkzeug_url):
    with ThreadPoolExecutor(3) as pool:
        got = list(pool.map(get, [f"{werkzeug_url}/greet/p{i}" for i in range(3)]))
    assert got == ["hello p0", "hello p1", "hello p2"]


def test_uvicorn_first(uvicorn_url):
    assert get(uvicorn_url + "/square/3") == "9"


def test_uvicorn_second(uvicorn_url):
    assert get(uvicorn_url + "/square/4") == "16"


def test_testclient_relay():
    assert TestClient(star_app).get("/relay").text == "sunny"


def test_asgi_transport_relay():
    async def main():
        transport = httpx.ASGITransport(app=star_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
            return (await client.get("/relay")).text

    assert asyncio.run(main()) == "sunny"
"""

INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
"""


def _server_paths(doc: dict[str, Any]) -> list[str]:
    return sorted(
        e["http_server_request"]["path_info"] for e in doc["events"] if "http_server_request" in e
    )


def _client_urls(doc: dict[str, Any]) -> list[str]:
    return sorted(
        e["http_client_request"]["url"] for e in doc["events"] if "http_client_request" in e
    )


def _functions(doc: dict[str, Any]) -> set[str]:
    return {e["method_id"] for e in doc["events"] if e["event"] == "call" and "method_id" in e}


def test_each_request_of_a_live_server_belongs_to_the_running_test(
    pytester: pytest.Pytester, appmap_validate: Callable[[Iterable[Path]], int]
) -> None:
    pytester.makefile(".yml", trace=TRACE_YML)
    pytester.makeini(INI)
    pkg = pytester.mkpydir("livepkg")
    (pkg / "web.py").write_text(WEB, encoding="utf-8")
    pytester.makepyfile(test_live=TESTS)
    result = pytester.runpytest_subprocess("--trace-record", "-p", "no:randomly")
    result.assert_outcomes(passed=7)
    docs = by_name(read_recordings(pytester.path / "tmp" / "trace" / "pytest"))

    first, second = docs["werkzeug first"], docs["werkzeug second"]
    assert _server_paths(first) == ["/greet/ann"]
    assert _server_paths(second) == ["/greet/bob"]  # the server thread is not test 1's
    assert {"greet", "greeting"} <= _functions(second)

    pool = docs["werkzeug from a pool"]
    assert _server_paths(pool) == ["/greet/p0", "/greet/p1", "/greet/p2"]
    assert len(_client_urls(pool)) == 3  # urllib calls made by the pool's workers

    assert _server_paths(docs["uvicorn first"]) == ["/square/3"]
    assert _server_paths(docs["uvicorn second"]) == ["/square/4"]
    assert "squared" in _functions(docs["uvicorn second"])

    for name in ("testclient relay", "asgi transport relay"):
        doc = docs[name]
        assert _server_paths(doc) == ["/relay"], name
        urls = _client_urls(doc)
        # the test's call of the app and the app's own call upstream
        assert [u for u in urls if u.endswith("/weather")], (name, urls)
        assert [u for u in urls if u.endswith("/relay")], (name, urls)

    # the servers' start-up is not in the first test that used them
    setups = {n: d for n, d in docs.items() if "fixture.setup" in d["metadata"]["labels"]}
    assert {d["metadata"]["fixture"]["name"] for d in setups.values()} <= {
        "upstream",
        "werkzeug_url",
        "uvicorn_url",
    }
    appmap_validate(sorted((pytester.path / "tmp" / "trace" / "pytest").glob("*.trace.json")))
