"""The recording viewer outside VS Code: a local HTTP server that serves editors/vscode/media
and passes `POST /rpc` to a real daemon, so media/standalone.html runs the same page script
(media/viewer.js) the webview runs, against real data. Used by the Chromium tests and
scripts/screenshots.
"""

from __future__ import annotations

import mimetypes
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MEDIA = Path(__file__).resolve().parents[2] / "editors" / "vscode" / "media"


def _handler(daemon_port: int) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            name = self.path.split("?", 1)[0].lstrip("/") or "standalone.html"
            path = (MEDIA / name).resolve()
            if MEDIA not in path.parents or not path.is_file():
                self._send(404, b"not found", "text/plain")
                return
            kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            self._send(200, path.read_bytes(), kind)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = urllib.request.Request(
                f"http://127.0.0.1:{daemon_port}/",
                data=body,
                method="POST",
                headers={"Content-Type": "application/json"},
            )
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with opener.open(request, timeout=60) as response:
                self._send(200, response.read(), "application/json")

    return Handler


@contextmanager
def viewer_host(daemon_port: int) -> Iterator[str]:
    """The base URL (`http://127.0.0.1:N/`) of the viewer pages, while the block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(daemon_port))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
