"""restore --github-repo against a fake artifacts API on 127.0.0.1."""

from __future__ import annotations

import io
import json
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.archive.conftest import Project, ok, recording, run

TOKEN = "s3cret-token"


class FakeHosting:
    """An artifacts API (list + download redirect) and a blob host on another port."""

    def __init__(self) -> None:
        self.artifacts: list[dict[str, Any]] = []
        self.blobs: dict[str, bytes] = {}
        self.seen: list[tuple[str, str, str | None]] = []  # (server, path, Authorization)
        self.api = self._server("api")
        self.blob = self._server("blob")

    def _server(self, role: str) -> ThreadingHTTPServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: bytes, kind: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                auth = self.headers.get("Authorization")
                fake.seen.append((role, self.path, auth))
                if role == "blob":
                    blob = fake.blobs.get(self.path)
                    if blob is None or auth is not None:
                        self._send(403 if blob else 404, b"{}")
                    else:
                        self._send(200, blob, "application/zip")
                    return
                if auth != f"Bearer {TOKEN}":
                    self._send(401, b'{"message": "Bad credentials"}')
                elif self.path.startswith("/repos/acme/shop/actions/artifacts?"):
                    page = 1 if "page=1" in self.path else 2
                    items = fake.artifacts if page == 1 else []
                    self._send(
                        200, json.dumps({"total_count": len(items), "artifacts": items}).encode()
                    )
                elif self.path.startswith("/download/"):
                    self.send_response(302)
                    self.send_header(
                        "Location", f"{fake.blob_url}{self.path.replace('/download', '')}"
                    )
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self._send(404, b"{}")

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        return server

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api.server_address[1]}"

    @property
    def blob_url(self) -> str:
        return f"http://127.0.0.1:{self.blob.server_address[1]}"

    def publish(self, type_: str, revision: str, tar: Path, *, expired: bool = False) -> None:
        key = f"/{len(self.artifacts) + 1}"
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr(tar.name, tar.read_bytes())
        self.blobs[key] = buffer.getvalue()
        self.artifacts.append(
            {
                "id": len(self.artifacts) + 1,
                "name": f"trace-archive-{type_}_{revision}",
                "expired": expired,
                "created_at": "2026-01-01T00:00:00Z",
                "archive_download_url": f"{self.api_url}/download{key}",
            }
        )

    def close(self) -> None:
        for server in (self.api, self.blob):
            server.shutdown()
            server.server_close()


@pytest.fixture
def hosting(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHosting]:
    fake = FakeHosting()
    monkeypatch.setenv("HOSTING_API_URL", fake.api_url)
    yield fake
    fake.close()


def test_restore_without_token_fails_clearly(project: Project) -> None:
    c1 = project.commit("one")
    result = run("restore", "-r", c1, "--github-repo", "acme/shop")
    assert result.code == 2
    assert "HOSTING_TOKEN" in result.stderr and result.stderr.count("\n") == 1


def test_restore_downloads_artifacts(
    project: Project, hosting: FakeHosting, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    c1 = project.commit("one")
    project.record({"t/a.trace.json": recording("a")})
    built = Path(
        json.loads(ok("archive", "--json", "--output-dir", str(tmp_path / "ci")).stdout)["path"]
    )
    hosting.publish("full", c1, built)
    hosting.publish("full", "f" * 40, built, expired=True)
    c2 = project.commit("two")

    monkeypatch.setenv("HOSTING_TOKEN", "wrong")
    result = run("restore", "-r", c2, "--github-repo", "acme/shop", "--output-dir", "out")
    assert result.code == 1 and "HTTP 401" in result.stderr and "HOSTING_TOKEN" in result.stderr

    monkeypatch.setenv("HOSTING_TOKEN", TOKEN)
    out = json.loads(
        ok(
            "restore", "-r", c2, "--github-repo", "acme/shop", "--output-dir", "out", "--json"
        ).stdout
    )
    assert out["revision"] == c1  # nearest archived ancestor
    assert (Path("out") / "t/a.trace.json").read_bytes() == (
        project.trace_dir / "t/a.trace.json"
    ).read_bytes()
    # the download is kept in the archive directory: the next restore needs no network
    assert (Path(".trace/archive/full") / f"{c1}.tar").is_file()
    # the token went to the API host only, never to the blob host it redirected to
    blob_requests = [s for s in hosting.seen if s[0] == "blob"]
    assert blob_requests and all(auth is None for _, _, auth in blob_requests)
    assert all(auth == f"Bearer {TOKEN}" for role, _, auth in hosting.seen[1:] if role == "api")

    result = run("restore", "-r", c2, "--exact", "--github-repo", "acme/shop", "--output-dir", "x")
    assert result.code == 1 and "acme/shop" in result.stderr


def test_bad_repository_name(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTING_TOKEN", TOKEN)
    c1 = project.commit("one")
    result = run("restore", "-r", c1, "--github-repo", "not a repo")
    assert result.code == 2 and "owner/name" in result.stderr
