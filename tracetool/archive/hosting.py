"""Archives stored as build artifacts on a code hosting service (GitHub Actions' API).

`restore --github-repo owner/name` lists the repository's artifacts and downloads the ones it
needs. Conventions and settings:

- Artifact names: `trace-archive-full_<revision>` and `trace-archive-incremental_<revision>`
  (upload `.trace/archive/<type>/<revision>.tar` under that name). Each artifact is a zip
  holding one `.tar`. Expired artifacts are ignored; of several with one name, the newest wins.
- The token comes from the environment variable `HOSTING_TOKEN` (required: a clear error
  otherwise) and is sent as `Authorization: Bearer …` to the API host only — redirects to
  another host (GitHub sends downloads to blob storage) do not carry it.
- The API base URL is `HOSTING_API_URL`, default `https://api.github.com`.
- Downloads land in the archive directory (`<archive-dir>/<type>/<revision>.tar`), so a second
  restore needs no network.
"""

from __future__ import annotations

import io
import os
import re
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tracetool.errors import TraceToolError, UsageError
from tracetool.trace.document import atomic_write_bytes

ENV_TOKEN = "HOSTING_TOKEN"
ENV_API_URL = "HOSTING_API_URL"
DEFAULT_API_URL = "https://api.github.com"
ARTIFACT = re.compile(r"^trace-archive-(full|incremental)_(.+?)(?:\.tar)?$")
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
MAX_PAGES = 50
TIMEOUT = 60


class HostingError(TraceToolError):
    """The hosting service could not be reached or refused a request."""


@dataclass(frozen=True)
class Artifact:
    type: str
    revision: str
    url: str  # archive_download_url
    created_at: str


class _NoAuthOnOtherHost(urllib.request.HTTPRedirectHandler):
    """Follow redirects, dropping the Authorization header when the host changes."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            old_host = urllib.parse.urlsplit(req.full_url).netloc
            if urllib.parse.urlsplit(newurl).netloc != old_host:
                new.remove_header("Authorization")
        return new


class HostingStore:
    """The artifacts of one repository (module doc)."""

    def __init__(self, repo: str, archive_dir: Path) -> None:
        if not _REPO.match(repo):
            raise UsageError(f"--github-repo must be owner/name, not {repo!r}")
        token = os.environ.get(ENV_TOKEN, "").strip()
        if not token:
            raise UsageError(
                f"--github-repo needs the environment variable {ENV_TOKEN} (a token that may "
                f"read the repository's build artifacts)"
            )
        self.repo = repo
        self.token = token
        self.api = os.environ.get(ENV_API_URL, "").strip().rstrip("/") or DEFAULT_API_URL
        self.archive_dir = archive_dir
        self._opener = urllib.request.build_opener(_NoAuthOnOtherHost())
        self._artifacts: dict[tuple[str, str], Artifact] | None = None

    def _get(self, url: str, accept: str = "application/vnd.github+json") -> bytes:
        host = urllib.parse.urlsplit(self.api).netloc
        headers = {
            "Accept": accept,
            "User-Agent": "tracetool",
            "X-GitHub-Api-Version": "2022-11-28",
        }
        if urllib.parse.urlsplit(url).netloc == host:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(url, headers=headers)
        try:
            with self._opener.open(request, timeout=TIMEOUT) as response:
                body: bytes = response.read()
                return body
        except urllib.error.HTTPError as exc:
            hint = " (check HOSTING_TOKEN)" if exc.code in (401, 403) else ""
            raise HostingError(f"{self.repo}: {url} answered HTTP {exc.code}{hint}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise HostingError(f"{self.repo}: cannot reach {url} ({reason})") from None

    def artifacts(self) -> dict[tuple[str, str], Artifact]:
        """(type, revision) → newest unexpired artifact."""
        if self._artifacts is not None:
            return self._artifacts
        found: dict[tuple[str, str], Artifact] = {}
        for page in range(1, MAX_PAGES + 1):
            url = f"{self.api}/repos/{self.repo}/actions/artifacts?per_page=100&page={page}"
            data = _json(self._get(url), url)
            items = data.get("artifacts") if isinstance(data, dict) else None
            if not isinstance(items, list) or not items:
                break
            for item in items:
                artifact = _artifact(item)
                if artifact is None:
                    continue
                key = (artifact.type, artifact.revision)
                if key not in found or artifact.created_at > found[key].created_at:
                    found[key] = artifact
            if len(items) < 100:
                break
        self._artifacts = found
        return found

    def fetch(self, type_: str, revision: str, filename: str) -> Path:
        """Download an artifact's tar into the archive directory; returns its path."""
        artifact = self.artifacts()[(type_, revision)]
        payload = self._get(artifact.url, accept="application/octet-stream")
        try:
            with zipfile.ZipFile(io.BytesIO(payload)) as archive:
                tars = [n for n in archive.namelist() if n.endswith(".tar") and not n.endswith("/")]
                if len(tars) != 1:
                    raise HostingError(
                        f"{self.repo}: artifact trace-archive-{type_}_{revision} holds "
                        f"{len(tars)} .tar files, expected one"
                    )
                data = archive.read(tars[0])
        except zipfile.BadZipFile:
            raise HostingError(
                f"{self.repo}: artifact trace-archive-{type_}_{revision} is not a zip file"
            ) from None
        target = self.archive_dir / type_ / filename
        atomic_write_bytes(target, data)
        return target


def _json(raw: bytes, url: str) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise HostingError(f"{url} did not answer JSON") from None


def _artifact(item: Any) -> Artifact | None:
    if not isinstance(item, dict) or item.get("expired"):
        return None
    match = ARTIFACT.match(str(item.get("name", "")))
    url = item.get("archive_download_url")
    if match is None or not isinstance(url, str):
        return None
    return Artifact(match.group(1), match.group(2), url, str(item.get("created_at") or ""))
