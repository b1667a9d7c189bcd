"""Fixtures for the pytest plugin's tests: generated projects run in real pytest subprocesses
(`pytester`), a fake app and a fake daemon on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any
from wsgiref.simple_server import make_server

import pytest

from tests.pytest_plugin.helpers import FakeApp, FakeDaemon, QuietHandler, ThreadingWSGIServer

ENV_VARS = ("TRACETOOL", "TRACETOOL_URL", "TRACETOOL_TRACE_DIR", "TRACETOOL_CONFIG")


def pytest_configure(config: pytest.Config) -> None:
    # `pytest_plugins` is refused in a non-root conftest.py; registering pytester here works the
    # same (its fixtures and options are picked up on registration).
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Subprocesses must not inherit recording switches from whoever runs this suite."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("TRACETOOL_RECORD_REQUESTS", raising=False)


@pytest.fixture
def fake_app() -> Iterator[FakeApp]:
    app = FakeApp()
    server = make_server(
        "127.0.0.1", 0, app, server_class=ThreadingWSGIServer, handler_class=QuietHandler
    )
    app.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield app
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def fake_daemon() -> Iterator[FakeDaemon]:
    daemon = FakeDaemon()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        request = json.loads(environ["wsgi.input"].read(length))
        daemon.requests.append(request)
        body = json.dumps({"jsonrpc": "2.0", "result": {"queued": 1}, "id": request["id"]})
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body.encode()]

    server = make_server(
        "127.0.0.1", 0, app, server_class=ThreadingWSGIServer, handler_class=QuietHandler
    )
    daemon.port = server.server_port
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield daemon
    finally:
        server.shutdown()
        server.server_close()
