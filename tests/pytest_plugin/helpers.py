"""Helpers for the pytest plugin's tests: reading recordings, a fake app serving
``/_trace/record`` per the spec's state table, a fake daemon, WSGI servers in threads."""

from __future__ import annotations

import json
import socketserver
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer


def read_recordings(directory: Path) -> dict[str, dict[str, Any]]:
    """``{file name: document}`` of every ``*.trace.json`` directly in `directory`."""
    return {
        p.name: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(directory.glob("*.trace.json"))
    }


def by_name(docs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Documents keyed by ``metadata.name``."""
    out: dict[str, dict[str, Any]] = {}
    for doc in docs.values():
        name = doc["metadata"]["name"]
        assert name not in out, f"two recordings named {name!r}"
        out[name] = doc
    return out


def line_of(path: Path, text: str) -> int:
    """1-based number of the first line of `path` containing `text`."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


@dataclass
class FakeApp:
    """A tiny app with the spec's ``/_trace/record`` state table.

    While a session runs, every other request is recorded as an ``http_server_request`` event,
    so a test's document shows which requests it made. ``GET /restart`` drops the session
    (a restarted app: the next DELETE answers 404).
    """

    url: str = ""
    recording: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)
    log: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        status, body, ctype = self._handle(method, path, environ.get("QUERY_STRING", ""))
        with self.lock:
            self.log.append((method, path, status))
        reason = {200: "OK", 404: "Not Found", 409: "Conflict"}.get(status, "X")
        headers = [("Content-Length", str(len(body)))]
        if ctype:
            headers.append(("Content-Type", ctype))
        start_response(f"{status} {reason}", headers)
        return [body]

    def _handle(self, method: str, path: str, query: str) -> tuple[int, bytes, str]:
        with self.lock:
            if path == "/_trace/record":
                if method == "GET":
                    return 200, json.dumps({"enabled": self.recording}).encode(), "application/json"
                if method == "POST":
                    if self.recording:
                        return 409, b"", ""
                    self.recording, self.events = True, []
                    return 200, b"", ""
                if method == "DELETE":
                    if not self.recording:
                        return 404, b"", ""
                    self.recording = False
                    return 200, json.dumps(self._document()).encode(), "application/json"
                return 405, b"", ""
            if path == "/restart":
                self.recording = False
            elif self.recording:
                call_id = len(self.events) + 1
                request = {"request_method": method, "path_info": path, "protocol": "HTTP/1.1"}
                if query:
                    request["query"] = query
                self.events.append(
                    {"id": call_id, "event": "call", "thread_id": 1, "http_server_request": request}
                )
                self.events.append(
                    {
                        "id": call_id + 1,
                        "event": "return",
                        "thread_id": 1,
                        "parent_id": call_id,
                        "elapsed": 0.001,
                        "http_server_response": {"status_code": 200},
                    }
                )
            return 200, b"ok", "text/plain"

    def _document(self) -> dict[str, Any]:
        return {
            "version": "1.12",
            "metadata": {
                "app": "fakeapp",
                "language": {"name": "python", "engine": "CPython", "version": "3"},
                "frameworks": [{"name": "fakeweb", "version": "1.0"}],
                "client": {"name": "tracetool", "url": "https://example.invalid"},
                "recorder": {"name": "remote", "type": "remote"},
                "labels": ["from-app"],
            },
            "classMap": [],
            "events": self.events,
        }


@dataclass
class FakeDaemon:
    """Answers JSON-RPC ``index.files`` on 127.0.0.1 and remembers what it was told."""

    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
