"""Fixtures for the daemon tests: HOME in a temp dir, small recordings, a real daemon process,
and a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

DEADLINE = 20.0


def poll(condition: Callable[[], Any], timeout: float = DEADLINE, interval: float = 0.02) -> Any:
    """Call `condition` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s (last value: {last!r})")


def recording(
    name: str,
    *,
    method: str = "GET",
    path: str = "/users/42",
    route: str = "/users/{id}",
    status: int = 200,
    sql: str = "SELECT * FROM users WHERE id = 42",
    cls: str = "User",
    func: str = "find",
    test_status: str = "succeeded",
) -> dict[str, Any]:
    """A small valid recording: request → controller → model → SQL."""
    events = [
        {
            "id": 1,
            "event": "call",
            "thread_id": 1,
            "http_server_request": {
                "request_method": method,
                "path_info": path,
                "normalized_path_info": route,
            },
        },
        {
            "id": 2,
            "event": "call",
            "thread_id": 1,
            "defined_class": "app.controllers.UsersController",
            "method_id": "show",
            "path": "app/controllers/users.py",
            "lineno": 10,
            "static": False,
        },
        {
            "id": 3,
            "event": "call",
            "thread_id": 1,
            "defined_class": f"app.models.{cls}",
            "method_id": func,
            "path": "app/models.py",
            "lineno": 20,
            "static": True,
        },
        {
            "id": 4,
            "event": "call",
            "thread_id": 1,
            "sql_query": {"database_type": "sqlite", "sql": sql},
        },
        {"id": 5, "event": "return", "thread_id": 1, "parent_id": 4, "elapsed": 0.001},
        {"id": 6, "event": "return", "thread_id": 1, "parent_id": 3, "elapsed": 0.002},
        {"id": 7, "event": "return", "thread_id": 1, "parent_id": 2, "elapsed": 0.003},
        {
            "id": 8,
            "event": "return",
            "thread_id": 1,
            "parent_id": 1,
            "elapsed": 0.004,
            "http_server_response": {"status_code": status},
        },
    ]
    class_map = [
        {
            "type": "package",
            "name": "app",
            "children": [
                {
                    "type": "package",
                    "name": "controllers",
                    "children": [
                        {
                            "type": "class",
                            "name": "UsersController",
                            "children": [
                                {
                                    "type": "function",
                                    "name": "show",
                                    "location": "app/controllers/users.py:10",
                                    "static": False,
                                }
                            ],
                        }
                    ],
                },
                {
                    "type": "package",
                    "name": "models",
                    "children": [
                        {
                            "type": "class",
                            "name": cls,
                            "children": [
                                {
                                    "type": "function",
                                    "name": func,
                                    "location": "app/models.py:20",
                                    "static": True,
                                }
                            ],
                        }
                    ],
                },
            ],
        }
    ]
    return {
        "version": "1.12",
        "metadata": {
            "name": name,
            "labels": ["test"],
            "language": {"name": "python"},
            "recorder": {"name": "pytest", "type": "tests"},
            "test_status": test_status,
            "git": {"branch": "main", "commit": "abc123"},
        },
        "classMap": class_map,
        "events": events,
    }


def write_recording(path: Path, doc: dict[str, Any]) -> Path:
    """Write like the agent does: temp file beside it, then rename into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    os.replace(tmp, path)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    for name in ("TRACETOOL_AI_BASE_URL", "TRACETOOL_AI_MODEL", "TRACETOOL_AI_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TRACETOOL_TRACE_DIR", "TRACETOOL_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with trace.yml (trace_dir: tmp/trace) and three recordings."""
    return make_project(tmp_path / "proj")


def make_project(root: Path) -> Path:
    trace = root / "tmp" / "trace"
    trace.mkdir(parents=True)
    (root / "trace.yml").write_text("name: proj\ntrace_dir: tmp/trace\n", encoding="utf-8")
    write_recording(trace / "users" / "show_user.trace.json", recording("show user"))
    write_recording(
        trace / "orders" / "list_orders.trace.json",
        recording(
            "list orders",
            path="/orders",
            route="/orders",
            sql="SELECT * FROM orders WHERE paid = 1",
            cls="Order",
            func="unpaid",
        ),
    )
    write_recording(
        trace / "orders" / "create_order_fails.trace.json",
        recording(
            "create order fails",
            method="POST",
            path="/orders",
            route="/orders",
            status=500,
            sql="INSERT INTO orders (total) VALUES (10)",
            cls="Order",
            func="create",
            test_status="failed",
        ),
    )
    return root


class DaemonProcess:
    """`tracetool <args>` as a real process; `port` from its first stdout line."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.args = args
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tracetool", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.stdout_lines: list[str] = []
        self.stderr_text = ""
        self.port = 0

    def read_ready(self, timeout: float = DEADLINE) -> int:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        buffer = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while b"\n" not in buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise AssertionError(f"no ready line; stderr: {self.stderr_now()}")
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    raise AssertionError(f"daemon exited: {self.stderr_now()}")
                buffer += chunk
        self.stdout_lines = buffer.decode().splitlines()
        self.port = int(json.loads(self.stdout_lines[0])["port"])
        return self.port

    def _abort(self) -> str:
        """Stop a daemon that hangs: SIGABRT makes faulthandler (PYTHONFAULTHANDLER, `daemon_env`)
        dump every thread's stack to stderr; its stderr, read to the end (a full pipe would block
        the dump)."""
        self.proc.send_signal(signal.SIGABRT)
        try:
            _, err = self.proc.communicate(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        self.stderr_text = (err or b"").decode(errors="replace")
        return self.stderr_text

    def stderr_now(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        if self.proc.stderr is None or self.proc.stderr.closed:
            return self.stderr_text
        self.stderr_text = self.proc.stderr.read().decode(errors="replace")
        return self.stderr_text

    def post(self, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=DEADLINE) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def rpc(self, method: str, params: Any = None) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
        if params is not None:
            body["params"] = params
        status, raw = self.post(json.dumps(body).encode())
        assert status == 200, (status, raw)
        answer: dict[str, Any] = json.loads(raw)
        return answer

    def call(self, method: str, params: Any = None) -> Any:
        answer = self.rpc(method, params)
        assert "error" not in answer, answer
        return answer["result"]

    def stop(self, timeout: float = 3 * DEADLINE) -> int:
        """SIGTERM, wait, keep what it wrote on stderr in `stderr_text`; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"the daemon did not stop within {timeout} s; its threads and stderr:\n"
                + self._abort()[-8000:]
            ) from None
        finally:
            if self.proc.stderr is not None and not self.proc.stderr.closed:
                self.stderr_text = self.proc.stderr.read().decode(errors="replace")
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


def daemon_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACETOOL_", "OPENAI_"))}
    # One indexing worker: the pool is exercised, and parallel test runs stay light.
    env.update(HOME=str(home), USERPROFILE=str(home), PYTHONPATH=str(ROOT))
    # PYTHONFAULTHANDLER: a daemon that does not stop dumps its threads' stacks (`_abort`).
    env.update(TRACETOOL_INDEX_WORKERS="1", PYTHONFAULTHANDLER="1", **extra)
    env.pop("http_proxy", None)
    env.pop("HTTP_PROXY", None)
    return env


@pytest.fixture
def start_daemon(home: Path) -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def start(
        *args: str, cwd: Path, env: dict[str, str] | None = None, ready: bool = True
    ) -> DaemonProcess:
        proc = DaemonProcess(list(args), cwd, env or daemon_env(home))
        started.append(proc)
        if ready:
            proc.read_ready()
        return proc

    yield start
    for proc in started:
        if proc.proc.poll() is None:
            proc.stop()


class FakeAI:
    """An OpenAI-compatible chat-completions endpoint that records what it was sent."""

    def __init__(self, reply: str = "The orders endpoint runs one INSERT.") -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                if fake.status != 200:
                    payload = json.dumps({"error": {"message": "model overloaded"}}).encode()
                    self.send_response(fake.status)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for word in fake.reply.split(" "):
                        chunk = {"choices": [{"index": 0, "delta": {"content": word + " "}}]}
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                payload = json.dumps(
                    {
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": fake.reply}}
                        ]
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_ai() -> Iterator[FakeAI]:
    fake = FakeAI()
    yield fake
    fake.close()
