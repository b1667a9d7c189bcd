"""Serve the shop: `python -m shop.server [--port N]` (default: an OS-chosen free port).

Prints `listening on http://127.0.0.1:<port>` on stdout once the socket is bound, so scripts
and tests can wait for that line. Threaded, so concurrent requests are served concurrently.
"""

from __future__ import annotations

import argparse
import logging

from werkzeug.serving import make_server

from shop import create_app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    server = make_server(args.host, args.port, create_app(), threaded=True)
    print(f"listening on http://{args.host}:{server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
