"""A framework-free WSGI app served by `wsgiref` (threaded): `python plain_wsgi.py`.

Prints `listening on http://127.0.0.1:<port>` (OS-chosen port). Nothing in here knows tracetool:
with TRACETOOL=true the agent hooks wsgiref's handler."""

from __future__ import annotations

import json
import sqlite3
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


def count_rows() -> int:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE hits (n INTEGER)")
    conn.execute("INSERT INTO hits VALUES (1)")
    (n,) = conn.execute("SELECT COUNT(*) FROM hits").fetchone()
    conn.close()
    return int(n)


def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    body = json.dumps({"path": environ["PATH_INFO"], "rows": count_rows()}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    server = make_server("127.0.0.1", 0, app, server_class=_Server, handler_class=_Quiet)
    print(f"listening on http://127.0.0.1:{server.server_port}", flush=True)
    server.serve_forever()
