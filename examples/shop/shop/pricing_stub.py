"""A stand-in pricing service for tests and demos: `GET /quote?product_id&quantity&unit_cents`
answers `{"total_cents": …}` with 10% off from 3 units. Serve it with `PricingStub().start()`
(127.0.0.1, OS-chosen port, a daemon thread) — `.url` is its base URL, `.stop()` ends it.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != "/quote":
            self._send(404, {"error": "not found"})
            return
        query = parse_qs(parts.query)
        try:
            quantity = int(query["quantity"][0])
            unit = int(query["unit_cents"][0])
        except (KeyError, ValueError):
            self._send(400, {"error": "quantity and unit_cents are required"})
            return
        total = unit * quantity
        if quantity >= 3:
            total = total * 9 // 10
        self._send(200, {"total_cents": total})

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass


class PricingStub:
    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> PricingStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
