"""Fixtures for the integration tests: integrations installed for this folder only, a recording
session around each test, and a local HTTP server on 127.0.0.1 for the HTTP client tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tracetool.agent import integrations
from tracetool.agent.recorder import get_recorder


@pytest.fixture(scope="package", autouse=True)
def installed() -> Iterator[None]:
    integrations.install_all()
    yield
    integrations.uninstall_all()


class Recording:
    """A recording session; `.stop()` returns the document, `.calls(kind)` filters events."""

    def __init__(self) -> None:
        self.doc: dict[str, Any] | None = None

    def stop(self) -> dict[str, Any]:
        if self.doc is None:
            self.doc = get_recorder().stop() or {}
        return self.doc

    def events(self) -> list[dict[str, Any]]:
        return list(self.stop().get("events", []))

    def calls(self, key: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e.get("event") == "call" and key in e]

    def return_of(self, call: dict[str, Any]) -> dict[str, Any]:
        for e in self.events():
            if e.get("event") == "return" and e.get("parent_id") == call["id"]:
                return e
        raise AssertionError(f"no return for call {call['id']}")


@pytest.fixture
def recording() -> Iterator[Recording]:
    rec = get_recorder()
    if rec.is_recording():
        rec.stop()
    assert rec.start()
    session = Recording()
    yield session
    if session.doc is None:
        rec.stop()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", "/hello?from=redirect")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        status = 404 if self.path.startswith("/missing") else 200
        body = json.dumps({"path": self.path}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Stub", "yes")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="package")
def http_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
