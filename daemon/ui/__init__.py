"""`tracetool query ui`: a local web UI over the query database.

Contract:

- `UiServer(trace_dir=None, query_db=None, port=0)` resolves query.db once (flag > env >
  trace.yml > default, as every `query` verb), raises `IndexMissingError` if it is missing or
  outdated, and binds 127.0.0.1 only (`port` 0 = OS-chosen; a taken port is a `UsageError`).
  `url` is `http://127.0.0.1:<port>/`; `serve_forever()` serves until `shutdown()` (another
  thread) or Ctrl+C; `close()` releases the socket.
- `GET /` is a single-page app (index.html, app.js, app.css shipped in this package: plain
  HTML, vanilla JS and CSS, no CDN, no build step); `GET /api/...` answers JSON from the query
  tools (see `tracetool_daemon.ui.api`). Each request opens the database afresh, so a re-index
  shows up on reload.
- Refused with 403 before anything else: a request from another site — a `Host` that is not
  loopback or an allowed host (DNS rebinding), a malformed or repeated Host, an `Origin` that is
  not a loopback or allowed http(s) origin (another site's page in the user's browser); one
  check for every local server, `tracetool.hostcheck`. Methods other than GET/HEAD get 405.
  Connections are served by a bounded pool with a per-request deadline and a listen backlog of
  256 (`tracetool_daemon.httpbase`). Responses carry a strict
  Content-Security-Policy (same-origin scripts, styles and fetches only), `nosniff`, no
  framing, no referrer and `no-store`.
"""

from __future__ import annotations

import errno
import logging
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import orjson
from tracetool_daemon.httpbase import BoundedHTTPServer, GuardedHandler

from tracetool.errors import UsageError
from tracetool.hostcheck import configured_allowed_hosts

log = logging.getLogger("tracetool.daemon.ui")

STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
    "/favicon.svg": ("favicon.svg", "image/svg+xml"),
}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def static_file(name: str) -> bytes:
    return resources.files(__name__).joinpath(name).read_bytes()


class _Handler(GuardedHandler):
    server_version = "tracetool-ui"
    server: _HttpServer

    def refusal_headers(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in SECURITY_HEADERS.items() if k != "Cache-Control"]

    def _send(self, status: int, body: bytes, content_type: str, head: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in SECURITY_HEADERS.items():
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, status: int, obj: Any, head: bool = False) -> None:
        body = orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)
        self._send(status, body, "application/json", head)

    def _allowed(self) -> bool:
        return not self.refused()

    def _get(self, head: bool) -> None:
        if not self._allowed():
            return
        from tracetool_daemon.ui import api

        parts = urlsplit(self.path)
        if parts.path.startswith("/api/") or parts.path == "/api":
            status, obj = api.handle(parts.path, api.parse_query(parts.query), self.server.query_db)
            self._json(status, obj, head)
            return
        static = STATIC.get(parts.path)
        if static is None:
            self._json(404, {"error": f"no such page {parts.path}"}, head)
            return
        name, content_type = static
        self._send(200, static_file(name), content_type, head)

    def do_GET(self) -> None:
        self._get(head=False)

    def do_HEAD(self) -> None:
        self._get(head=True)

    def _not_allowed(self) -> None:
        if self._allowed():
            self.close_connection = True
            self._json(405, {"error": f"{self.command} is not supported; the UI is read-only"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed


class _HttpServer(BoundedHTTPServer):
    query_db: str


class UiServer:
    """The UI's HTTP server on 127.0.0.1 (module doc)."""

    def __init__(
        self, trace_dir: str | None = None, query_db: str | None = None, port: int = 0
    ) -> None:
        from tracetool.query import open_db, query_db_path

        path = query_db_path(trace_dir, query_db)
        open_db(query_db=path).close()  # IndexMissingError before we listen
        try:
            self._http = _HttpServer(
                ("127.0.0.1", port), _Handler, allowed_hosts=configured_allowed_hosts()
            )
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise UsageError(f"port {port} on 127.0.0.1 is in use; pick another or 0") from None
            raise UsageError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
        self._http.query_db = str(path)
        self.query_db = path
        self.port: int = self._http.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"

    def serve_forever(self) -> None:
        self._http.serve_forever(poll_interval=0.5)

    def shutdown(self) -> None:
        self._http.shutdown()

    def close(self) -> None:
        self._http.server_close()


__all__ = ["UiServer"]
