"""Serve the inventory with uvicorn: `python -m inventory.server [--port N]` (default: an
OS-chosen free port). Prints `listening on http://127.0.0.1:<port>` once the socket is bound."""

from __future__ import annotations

import argparse
import logging
import socket

import uvicorn

from inventory.main import create_app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)  # connections queue until uvicorn accepts them
    config = uvicorn.Config(create_app(), log_level="warning")
    server = uvicorn.Server(config)
    print(f"listening on http://{args.host}:{sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
