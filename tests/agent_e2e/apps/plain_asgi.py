"""A framework-free ASGI app served by uvicorn: `python plain_asgi.py`.

Prints `listening on http://127.0.0.1:<port>` (OS-chosen port). Nothing in here knows tracetool:
with TRACETOOL=true the agent wraps the app uvicorn loads."""

from __future__ import annotations

import json
import socket
from typing import Any

import uvicorn


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = json.dumps({"path": scope["path"]}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


if __name__ == "__main__":
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off")).run(sockets=[sock])
