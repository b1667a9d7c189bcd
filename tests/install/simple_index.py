"""A PEP 503 "simple" package index on 127.0.0.1, served from a folder by a real HTTP server.

The lock tools (uv, poetry, pdm, pipenv) resolve against it as the project's only source, so a
lock never needs the internet: `offline_env()` also points every proxy variable at a closed
loopback port (loopback itself excepted), so a tool that tried PyPI would fail loudly.
"""

from __future__ import annotations

import hashlib
import html
import http.server
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path


def normalized(project: str) -> str:
    """PEP 503 name normalisation."""
    return re.sub(r"[-_.]+", "-", project).lower()


class SimpleIndex:
    """`root/simple/<project>/index.html` linking the wheels copied into `root/files/`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = ""  # set while served
        (root / "files").mkdir(parents=True, exist_ok=True)
        (root / "simple").mkdir(exist_ok=True)

    def publish(self, *wheels: Path) -> None:
        """Add wheel files, then rewrite the project pages (with each file's sha256)."""
        for wheel in wheels:
            shutil.copyfile(wheel, self.root / "files" / wheel.name)
        projects: dict[str, list[Path]] = {}
        for path in sorted((self.root / "files").glob("*.whl")):
            projects.setdefault(normalized(path.name.split("-")[0]), []).append(path)
        for project, files in projects.items():
            links = "".join(
                f'<a href="/files/{html.escape(f.name)}#sha256='
                f'{hashlib.sha256(f.read_bytes()).hexdigest()}">{html.escape(f.name)}</a><br>\n'
                for f in files
            )
            page = self.root / "simple" / project / "index.html"
            page.parent.mkdir(exist_ok=True)
            page.write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")
        names = "".join(f'<a href="{p}/">{p}</a><br>\n' for p in sorted(projects))
        (self.root / "simple" / "index.html").write_text(
            f"<!DOCTYPE html>\n<html><body>\n{names}</body></html>\n"
        )


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(index: SimpleIndex) -> Iterator[SimpleIndex]:
    """Serve `index` on an ephemeral 127.0.0.1 port; `index.url` is its `/simple` URL."""
    handler = partial(_Quiet, directory=str(index.root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    index.url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def offline_env() -> dict[str, str]:
    """Proxy variables that make any non-loopback HTTP(S) request fail at once."""
    closed = "http://127.0.0.1:9"
    env = {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = closed
    return env
