"""Serve the notes app: `python -m notes.server [--port N]` (default: an OS-chosen free port).

A threaded `wsgiref` server around Django's WSGI handler. Creates the tables on start and prints
`listening on http://127.0.0.1:<port>` once the socket listens.
"""

from __future__ import annotations

import argparse
import logging
import os
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "notes.settings")
    import django
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.management import call_command

    django.setup()
    database = os.environ.get("NOTES_DATABASE", "tmp/notes.db")
    if os.path.dirname(database):
        os.makedirs(os.path.dirname(database), exist_ok=True)
    call_command("migrate", run_syncdb=True, verbosity=0)
    server = make_server(
        args.host,
        args.port,
        WSGIHandler(),
        server_class=_ThreadingServer,
        handler_class=_QuietHandler,
    )
    print(f"listening on http://{args.host}:{server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
