"""The archive manifest and the layout of archived and restored data.

Layout (the same inside an archive tar and in a restored directory):

    trace-archive.json                      the manifest (first member of every tar)
    <relpath of each recording>             recordings exactly as found in trace_dir
    .analysis/openapi.yml                   OpenAPI document of all recordings
    .analysis/<name>/sequence.json          sequence diagram (compare filter), AppMap's shape
    .analysis/<name>/index.json             metadata, classMap, canonical forms, counts

`<name>` is a recording's relpath without `.trace.json` / `.appmap.json` (AppMap's "appmap
name", e.g. `minitest/Users_edit`). The restored directory can be used as a trace_dir: the
analysis sits in a hidden folder and the manifest's name does not end in `.trace.json`.

Manifest (JSON object, `format` = "tracetool-archive", `version` = "1"):

| key | meaning |
|---|---|
| type | `full` or `incremental` |
| revision / baseRevision | the git revision archived; the base it is incremental against |
| createdAt, tool | ISO-8601 UTC time; `tracetool <version>` |
| traceDir, config | trace_dir relative to the project root; trace.yml as read |
| analysis | `{analyzed, filter, version}`: what produced the derived files |
| files | `{path: {sha256, size, kind}}` — the complete state at `revision` (kind: recording, diagram, index, openapi) |
| members | paths stored in this tar (all of `files` for a full archive) |
| deleted | paths of the base state gone at `revision` (incremental only) |
| recordings | `{relpath: {name, test_status, recorder_type}}` |
| failedTests, oversized, warnings | listings made while archiving |

A restored directory holds the manifest of the state it contains: `files` as extracted,
`revision` the last archive applied, `applied` the archives in the order they were applied.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from tracetool.errors import TraceFormatError, UsageError

MANIFEST_NAME = "trace-archive.json"
ANALYSIS_DIR = ".analysis"
OPENAPI_PATH = f"{ANALYSIS_DIR}/openapi.yml"
FORMAT = "tracetool-archive"
FORMAT_VERSION = "1"
# Bumped when the derived files change shape: a base made by another version is not reused.
ANALYSIS_VERSION = "2"

KIND_RECORDING = "recording"
KIND_DIAGRAM = "diagram"
KIND_INDEX = "index"
KIND_OPENAPI = "openapi"

_CHUNK = 1 << 20


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (metadata is read tolerantly)."""
    return value if isinstance(value, dict) else {}


def diagram_path(name: str) -> str:
    return f"{ANALYSIS_DIR}/{name}/sequence.json"


def index_path(name: str) -> str:
    return f"{ANALYSIS_DIR}/{name}/index.json"


def recording_name(relpath: str) -> str:
    """`minitest/a.trace.json` → `minitest/a` (AppMap's appmap name)."""
    for suffix in (".trace.json", ".appmap.json", ".json"):
        if relpath.endswith(suffix):
            return relpath[: -len(suffix)]
    return relpath


def revision_filename(revision: str) -> str:
    """A revision name as a file or directory name (`feature/x` → `feature_x`).

    archive, restore and compare all name files this way, so they find each other's output.
    """
    cleaned = re.sub(r"[^A-Za-z0-9._@+-]", "_", revision.strip())
    if not cleaned or cleaned.strip(".") == "":
        raise UsageError(f"not a usable revision name: {revision!r}")
    return cleaned


def sha256_file(path: Path) -> tuple[str, int]:
    """(sha256 hex, size) of a file, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def safe_relpath(name: str) -> str:
    """A member path that stays inside its directory, in POSIX form; else TraceFormatError."""
    pure = PurePosixPath(name)
    if (
        not name
        or pure.is_absolute()
        or "\\" in name
        or any(part in ("..", "") for part in name.split("/"))
        or ":" in pure.parts[0]
    ):
        raise TraceFormatError(f"unsafe path {name!r} in archive")
    return pure.as_posix()


@dataclass
class Manifest:
    """A parsed manifest (module doc). `data` keeps every key, known or not."""

    data: dict[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:
        return str(self.data.get("type", "full"))

    @property
    def revision(self) -> str:
        return str(self.data.get("revision", ""))

    @property
    def base_revision(self) -> str | None:
        value = self.data.get("baseRevision")
        return str(value) if value else None

    @property
    def files(self) -> dict[str, dict[str, Any]]:
        files = self.data.get("files")
        return files if isinstance(files, dict) else {}

    @property
    def members(self) -> list[str]:
        members = self.data.get("members")
        return [str(m) for m in members] if isinstance(members, list) else list(self.files)

    @property
    def deleted(self) -> list[str]:
        deleted = self.data.get("deleted")
        return [str(d) for d in deleted] if isinstance(deleted, list) else []

    @property
    def recordings(self) -> dict[str, dict[str, Any]]:
        recs = self.data.get("recordings")
        return recs if isinstance(recs, dict) else {}

    @property
    def analysis(self) -> Mapping[str, Any]:
        value = self.data.get("analysis")
        return value if isinstance(value, dict) else {}

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def parse_manifest(raw: bytes, source: str) -> Manifest:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise TraceFormatError(f"{source}: manifest is not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise TraceFormatError(f"{source}: not a tracetool archive manifest")
    if str(data.get("version")) != FORMAT_VERSION:
        raise TraceFormatError(
            f"{source}: archive format version {data.get('version')!r} is not supported "
            f"(this tracetool reads version {FORMAT_VERSION})"
        )
    if data.get("type") not in ("full", "incremental") or not data.get("revision"):
        raise TraceFormatError(f"{source}: manifest has no valid type and revision")
    files = data.get("files")
    if not isinstance(files, dict):
        raise TraceFormatError(f"{source}: manifest has no files table")
    for path in (*files, *(data.get("members") or []), *(data.get("deleted") or [])):
        safe_relpath(str(path))
    return Manifest(data)


def read_manifest(directory: Path) -> Manifest | None:
    """The manifest of a restored directory, or None when it has none."""
    path = directory / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_manifest(raw, str(path))
