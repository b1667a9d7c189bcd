"""A JSON-RPC client of the daemon that serves one project, starting it when none runs.

Contract:

- `DaemonClient(directory, trace_dir, env=None)`: `directory` is the project (its trace.yml),
  `trace_dir` its recordings directory. `call(method, **params)` returns the method's result or
  raises `DaemonCallError` (a `TraceToolError` with the JSON-RPC `code` and one-line message).
- The daemon is found by its discovery file (`tracetool.paths.read_discovery`); when there is
  none, `tracetool rpc -d DIRECTORY` is started (this interpreter, its own session, stdout read
  for the `{"port": N}` line, stderr to a log file beside query.db). If another process started
  one at the same moment, that one's exit status 3 sends us to the discovery file again.
  A daemon we started is stopped by `close()` (SIGTERM, then kill); one we found is left alone.
- `TRACETOOL_INDEX_WORKERS` and the rest of the environment pass through `env`.

The language server uses it (so it reads what the CLI and the VS Code extension read).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from tracetool.errors import TraceToolError

START_TIMEOUT = 60.0
CALL_TIMEOUT = 120.0
_PORT_IN_MESSAGE = re.compile(r"127\.0\.0\.1:(\d+)")


class DaemonCallError(TraceToolError):
    """The daemon answered a JSON-RPC error (or could not be reached / started)."""

    def __init__(self, message: str, code: int = -32000) -> None:
        super().__init__(message)
        self.code = code


class DaemonClient:
    def __init__(
        self, directory: Path, trace_dir: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.directory = directory
        self.trace_dir = trace_dir
        self.env = dict(env if env is not None else os.environ)
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._ids = 0

    # -- finding or starting the daemon ---------------------------------------------------------

    def _discover(self) -> int | None:
        from tracetool.paths import read_discovery

        info = read_discovery(self.trace_dir)
        return info.port if info is not None and info.port else None

    def ensure(self) -> int:
        with self._lock:
            if self.port is not None and (self.proc is None or self.proc.poll() is None):
                return self.port
            self.port = self._discover() or self._start()
            return self.port

    def _start(self) -> int:
        from tracetool.paths import data_dir_for

        log_dir = data_dir_for(self.trace_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / "daemon-lsp.log"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tracetool", "rpc", "-d", str(self.directory)],
                stdout=subprocess.PIPE,
                stderr=log,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=str(self.directory),
                start_new_session=True,
            )
        assert proc.stdout is not None
        line = proc.stdout.readline()  # {"port": N}, or EOF when it exits
        try:
            port = int(orjson.loads(line)["port"])
        except (ValueError, KeyError, TypeError):
            status = proc.wait(timeout=START_TIMEOUT)
            tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            last = tail[-1] if tail else f"exit status {status}"
            found = _PORT_IN_MESSAGE.search(last)
            if status == 3 and found:  # another daemon serves it (started at the same moment)
                return int(found.group(1))
            raise DaemonCallError(
                f"could not start `tracetool rpc` for {self.directory}: {last}"
            ) from None
        # The daemon prints a second line, then nothing; keep the pipe drained and open.
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        self.proc = proc
        atexit.register(self.close)  # an editor that kills us without `shutdown`
        return port

    # -- calls ----------------------------------------------------------------------------------

    def call(self, method: str, **params: Any) -> Any:
        port = self.ensure()
        self._ids += 1
        body = orjson.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=CALL_TIMEOUT) as response:
                answer = orjson.loads(response.read())
        except (urllib.error.URLError, ConnectionError, OSError) as exc:
            with self._lock:
                self.port = None  # gone: find or start one on the next call
            raise DaemonCallError(f"tracetool daemon on port {port} unreachable ({exc})") from None
        if "error" in answer:
            error = answer["error"] or {}
            raise DaemonCallError(str(error.get("message")), int(error.get("code") or -32000))
        return answer.get("result")

    def close(self) -> None:
        proc, self.proc = self.proc, None
        self.port = None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def wait_ready(client: DaemonClient, timeout: float = START_TIMEOUT) -> dict[str, Any]:
    """`index.status` once the daemon's first indexing pass is done."""
    deadline = time.monotonic() + timeout
    while True:
        status: dict[str, Any] = client.call("index.status")
        if status.get("state") not in ("starting", "indexing") or time.monotonic() > deadline:
            return status
        time.sleep(0.05)
