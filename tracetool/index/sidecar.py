"""Index sidecars: one JSON file per recording, beside query.db, never inside trace_dir.

AppMap writes a directory of 16 small files next to every recording; we write one file per
recording under `<query.db>-sidecars/`, mirroring the recording's path relative to trace_dir:
`tmp/trace/minitest/a.trace.json` →
`~/.trace/data/<sha>/query.db-sidecars/minitest/a.trace.index.json`.
The recordings directory stays exactly as the agent wrote it (and `archive` tars only
recordings).

A sidecar is keyed by the recording's size, mtime (ns) and sha256, and holds what AppMap's index
directory holds: `metadata` (git.status removed), the bound `classMap` (dynamic http/route/
database/query objects included), the `canonical` forms of every algorithm with their
`fingerprints` (sha256 of each form's compact JSON, in AppMap's legacy fingerprint shape), and
`digests` — the sequence-diagram digest when `tracetool.diagram` provides one (see
`tracetool.index.worker.DIGEST_HOOKS`).

Sidecars are a cache: they are written with rename (readers never see half a file) but without
fsync; a sidecar lost in a crash is rebuilt on the next run.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import orjson

from tracetool.trace.atomic import atomic_write_bytes

SIDECAR_VERSION = "2"


def sidecar_root(query_db: Path) -> Path:
    return query_db.with_name(query_db.name + "-sidecars")


def sidecar_path(query_db: Path, relpath: str) -> Path:
    """Where the sidecar of the recording at `relpath` (POSIX, relative to trace_dir) lives."""
    # String work, one Path made: a re-index asks this of every recording (1000 Paths joined
    # part by part cost ~40 ms). `relpath` is normalized POSIX, as `_relpath` writes it.
    return Path(sidecar_file(str(sidecar_root(query_db)), relpath))


def sidecar_file(root: str, relpath: str) -> str:
    """`sidecar_path` as text, given `str(sidecar_root(query_db))`: no Path made (a cold index
    asks this of every recording before its first worker starts)."""
    folder, _, name = relpath.rpartition("/")
    if name.endswith(".json"):
        name = name[:-5]
    return f"{root}/{folder}/{name}.index.json" if folder else f"{root}/{name}.index.json"


def fingerprints(sha256: str, canonical: dict[str, list[Any]]) -> list[dict[str, str]]:
    """AppMap's fingerprint records: one per canonicalization algorithm."""
    return _fingerprints(sha256, {name: orjson.dumps(values) for name, values in canonical.items()})


def fingerprinted(
    sha256: str, canonical: dict[str, list[Any]]
) -> tuple[dict[str, orjson.Fragment], list[dict[str, str]]]:
    """(`canonical` with each form as its compact JSON, `fingerprints(sha256, canonical)`):
    each form serialized once, for its digest and, spliced as it is, for the sidecar `write`
    writes (the same bytes as the forms themselves)."""
    texts = {name: orjson.dumps(values) for name, values in canonical.items()}
    return {name: orjson.Fragment(text) for name, text in texts.items()}, _fingerprints(
        sha256, texts
    )


def _fingerprints(sha256: str, texts: dict[str, bytes]) -> list[dict[str, str]]:
    from hashlib import sha256 as digest_of

    return [
        {
            "appmap_digest": sha256,
            "canonicalization_algorithm": name,
            "digest": digest_of(text).hexdigest(),
            "fingerprint_algorithm": "sha256",
        }
        for name, text in texts.items()
    ]


def write(path: Path, sidecar: dict[str, Any]) -> None:
    """Write atomically with respect to readers (temp file + rename; no fsync: it is a cache)."""
    try:
        payload = orjson.dumps(sidecar)
    except orjson.JSONEncodeError:  # metadata or classMap nested deeper than orjson writes
        from tracetool.trace.document import dumps_deep

        payload = dumps_deep(sidecar)
    atomic_write_bytes(path, payload, fsync=False)


def read(path: Path) -> dict[str, Any] | None:
    """The sidecar at `path`, or None when it is missing, unreadable or of another version."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("version") != SIDECAR_VERSION:
        return None
    return data


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    # Drop now-empty folders up to the sidecar root, so deleted trees leave nothing behind.
    parent = path.parent
    while parent.name and not parent.name.endswith("-sidecars"):
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


def move(old: Path, new: Path, relpath: str) -> None:
    """Follow a renamed recording: move its sidecar and record the new path in it."""
    data = read(old)
    if data is None:
        return
    data["recording"] = relpath
    write(new, data)
    if old != new:
        remove(old)
