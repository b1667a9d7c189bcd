"""E2E fixtures: example apps started as real server processes with TRACETOOL=true, a stub of the
services they call, and a small HTTP client.

Each server binds an OS-chosen port on 127.0.0.1 and prints `listening on <url>`; we wait for that
line, then poll `GET /_trace/record` until the agent answers (deadlines, no sleeps). Recordings and
databases go to a temporary directory (TRACETOOL_TRACE_DIR and the apps' own env settings).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import queue
import site
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qs, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
APPS = Path(__file__).resolve().parent / "apps"
START_TIMEOUT = 30.0


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


def request(
    url: str,
    method: str = "GET",
    path: str = "/",
    body: Optional[Any] = None,
    headers: Optional[dict[str, str]] = None,
    timeout: float = 15.0,
) -> Response:
    """One HTTP request over a fresh connection (JSON-encodes a non-bytes body)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    hdrs = {"Accept": "application/json", **(headers or {})}
    data: Optional[bytes] = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    try:
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


def agent_hook_installed() -> bool:
    """Whether the `.pth` start-up hook is in this interpreter's site-packages."""
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    return any(
        "tracetool" in p.name and p.suffix == ".pth" and "editable" not in p.name
        for d in dirs
        if Path(d).is_dir()
        for p in Path(d).iterdir()
    )


def launch_command(target: str) -> list[str]:
    """Command starting `target` (`-m module` or a script path) as an unmodified app.

    With the `.pth` hook installed, TRACETOOL=true alone activates the agent. Without it (a
    checkout whose package was installed before the hook existed) the agent's own start-up
    function is called first, exactly what the hook does."""
    is_module = not target.endswith(".py")
    if agent_hook_installed():
        return [sys.executable, "-m", target] if is_module else [sys.executable, target]
    run = (
        f"runpy.run_module({target!r}, run_name='__main__', alter_sys=True)"
        if is_module
        else f"runpy.run_path({target!r}, run_name='__main__')"
    )
    code = (
        "import runpy, sys; from tracetool.agent.startup import activate_from_env; "
        f"activate_from_env(); sys.argv = [{target!r}]; {run}"
    )
    return [sys.executable, "-c", code]


class AppServer:
    """An app served by a real process; `.url`, `.stop()`, `.stderr_text()`."""

    def __init__(self, cwd: Path, target: str, env: dict[str, str], log: Path) -> None:
        self.log = log
        self._stderr = log.open("wb")
        self.process = subprocess.Popen(
            launch_command(target),
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._drain, args=(lines,), daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        self.url = ""
        while not self.url:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"{target} did not start:\n{self.stderr_text()}")
            try:
                line = lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if line.startswith("listening on "):
                self.url = line.split()[-1]
        while True:  # the agent answers once the app serves requests
            try:
                if request(self.url, "GET", "/_trace/record", timeout=2).status == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"{target}: no agent at /_trace/record:\n{self.stderr_text()}")
            time.sleep(0.05)  # poll interval of a deadline-bounded wait, not a wait by itself

    def _drain(self, lines: queue.Queue[str]) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            lines.put(line.strip())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()

    def stderr_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


class _StubHandler(BaseHTTPRequestHandler):
    """The services the examples call: pricing `/quote`, rates `/rates`, weather `/weather`."""

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if parts.path == "/quote":
            total = int(query.get("unit_cents", 0)) * int(query.get("quantity", 1))
            body: Any = {"total_cents": total}
        else:
            body = {"service": parts.path.strip("/"), "query": query}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def stub_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StubHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def e2e_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("agent_e2e")


def app_env(tmp: Path, stub: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETOOL")}
    env.update(
        TRACETOOL="true",
        TRACETOOL_TRACE_DIR=str(tmp / "trace"),
        PYTHONUNBUFFERED="1",
        SHOP_DATABASE=str(tmp / "shop.db"),
        SHOP_PRICING_URL=stub,
        INVENTORY_RATES_URL=stub,
        NOTES_DATABASE=str(tmp / "notes.db"),
        NOTES_WEATHER_URL=stub,
    )
    env.update(extra)
    return env


# name -> (working directory, module or script)
APP_TARGETS = {
    "shop": (EXAMPLES / "shop", "shop.server"),
    "fastapi": (EXAMPLES / "fastapi_app", "inventory.server"),
    "django": (EXAMPLES / "django_app", "notes.server"),
    "plain_wsgi": (APPS, "plain_wsgi.py"),
    "plain_asgi": (APPS, "plain_asgi.py"),
}


def start_app(name: str, tmp: Path, stub: str, **extra: str) -> AppServer:
    cwd, target = APP_TARGETS[name]
    workdir = tmp / name
    workdir.mkdir(exist_ok=True)
    return AppServer(cwd, target, app_env(workdir, stub, **extra), workdir / "stderr.log")


EXAMPLE_DEPS = ("flask", "fastapi", "uvicorn", "django", "sqlalchemy", "httpx", "requests")


@pytest.fixture(scope="session")
def servers(e2e_tmp: Path, stub_url: str) -> Iterator[dict[str, AppServer]]:
    """Every app, started in parallel (each start is mostly interpreter and import time)."""
    import importlib.util

    missing = [m for m in EXAMPLE_DEPS if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the examples need {', '.join(missing)} (pip install -e '.[examples]')")
    with started_apps(APP_TARGETS, e2e_tmp, stub_url) as started:
        yield started


@contextlib.contextmanager
def started_apps(names: Iterable[str], tmp: Path, stub: str) -> Iterator[dict[str, AppServer]]:
    """Start example apps in parallel (each start is mostly interpreter and import time); stop all."""
    started: dict[str, AppServer] = {}
    errors: list[BaseException] = []

    def run(name: str) -> None:
        try:
            started[name] = start_app(name, tmp, stub)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        if errors:
            raise errors[0]
        yield started
    finally:
        for server in started.values():
            server.stop()


def record(server: AppServer, drive: Any) -> dict[str, Any]:
    """POST /_trace/record, run `drive(url)`, DELETE: the returned trace document."""
    assert request(server.url, "POST", "/_trace/record").status == 200
    try:
        drive(server.url)
    finally:
        response = request(server.url, "DELETE", "/_trace/record")
    assert response.status == 200, response
    assert response.content_type.startswith("application/json")
    return response.json()  # type: ignore[no-any-return]
