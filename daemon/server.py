"""JSON-RPC 2.0 over HTTP on 127.0.0.1: a threaded stdlib server in front of `registry.dispatch`.

Contract:

- Binds 127.0.0.1 only (never a wildcard address); port 0 lets the OS choose, `port` tells.
- `POST /` with a JSON-RPC request or batch answers 200 `application/json` (204 with an empty
  body when every request was a notification). Other paths → 404, other methods → 405.
- Refused before anything is read: a request from another site — a `Host` that is not loopback
  or an allowed host (DNS rebinding), a malformed or repeated Host, an `Origin` that is not a
  loopback or allowed http(s) origin (a web page in the user's browser) — → 403
  (`tracetool.hostcheck`, allowed hosts from `$TRACETOOL_ALLOWED_HOSTS` and trace.yml); a body
  without `Content-Length` → 411; a body larger than `max_body` bytes → 413. Refusals carry a
  one-line JSON body `{"error": "..."}`. A batch longer than `registry.MAX_BATCH` calls is a
  JSON-RPC error (registry).
- HTTP/1.1 keep-alive on a bounded pool of worker threads with a per-request deadline
  (`tracetool_daemon.httpbase`: slow or idle clients are disconnected, a vanished client
  leaves no traceback). `serve()` blocks in `select` with no timeout, so an idle server makes
  no wake-ups; `shutdown()` interrupts it through a pipe (`wakeup`, which the daemon also points
  signals at: `tracetool_daemon.wakeup`).
"""

from __future__ import annotations

import logging
import selectors
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from tracetool_daemon.httpbase import BoundedHTTPServer, GuardedHandler
from tracetool_daemon.wakeup import Wakeup

from tracetool.hostcheck import configured_allowed_hosts

log = logging.getLogger("tracetool.daemon.http")

DEFAULT_MAX_BODY = 8 * 1024 * 1024


class _Handler(GuardedHandler):
    server: RpcHttpServer
    server_version = "tracetool"
    # Small answers must not wait for the client's delayed ACK (Nagle): ~40 ms per request.
    disable_nagle_algorithm = True

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _refuse(self, status: int, message: str, *, close: bool = False) -> None:
        if close:
            self.close_connection = True
        body = ('{"error": "' + message.replace('"', "'") + '"}\n').encode()
        self._send(status, body)

    def _guard(self) -> bool:
        return not self.refused()

    def do_POST(self) -> None:
        if not self._guard():
            return
        if urlsplit(self.path).path not in ("/", "/rpc"):
            self._refuse(404, "no such endpoint; POST JSON-RPC to /", close=True)
            return
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            self._refuse(411, "Content-Length required", close=True)
            return
        try:
            length = int(length_header)
        except ValueError:
            self._refuse(400, "bad Content-Length", close=True)
            return
        if length < 0 or length > self.server.max_body:
            # The body is not read: close so its bytes are not taken for the next request.
            self._refuse(413, f"request body over {self.server.max_body} bytes", close=True)
            return
        body = self.rfile.read(length)
        answer = self.server.handle_body(body)
        if answer:
            self._send(200, answer)
        else:
            self._send(204, b"")

    def _not_allowed(self) -> None:
        if not self._guard():
            return
        self.send_response(405)
        self.send_header("Allow", "POST")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = _not_allowed
    do_PUT = _not_allowed
    do_DELETE = _not_allowed
    do_PATCH = _not_allowed


class RpcHttpServer(BoundedHTTPServer):
    def __init__(
        self,
        handle_body: Callable[[bytes], bytes],
        *,
        port: int = 0,
        max_body: int = DEFAULT_MAX_BODY,
        allowed_hosts: tuple[str, ...] | None = None,
        **limits: Any,
    ) -> None:
        self.handle_body = handle_body
        self.max_body = max_body
        if allowed_hosts is None:
            allowed_hosts = configured_allowed_hosts()
        super().__init__(("127.0.0.1", port), _Handler, allowed_hosts=allowed_hosts, **limits)
        self.wakeup = Wakeup()
        self._stopped = threading.Event()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def serve(self) -> None:
        """Serve until `shutdown()` — or until a signal wakes `wakeup`, when the caller points
        signals at it (`Wakeup.on_signals`); sleeps in select() without a timeout when idle."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.socket, selectors.EVENT_READ, "accept")
            selector.register(self.wakeup, selectors.EVENT_READ, "wake")
            try:
                while True:
                    for key, _ in selector.select():
                        if key.data == "wake":
                            return
                        self._handle_request_noblock()  # type: ignore[attr-defined]
            finally:
                self._stopped.set()

    def shutdown(self) -> None:
        self.wakeup.wake()

    def server_close(self) -> None:
        super().server_close()
        self.wakeup.close()
