"""The trace document (AppMap 1.x) held in memory, and how it is read and written.

A `TraceDocument` keeps the JSON exactly as loaded (plain dicts and lists from orjson): that is
the cheapest faithful model, round-trips unknown keys, and lets every feature read the fields it
needs. Reading is tolerant (DESIGN.md §3): missing `version`, `classMap` or `metadata`, events
before classMap, extra keys — all accepted. What is not a trace document at all fails with one
`TraceFormatError` line naming the file and the defect.

Writing is atomic: a temporary file in the target directory, fsync, rename
(`tracetool.trace.atomic`, the one writer; it also removes the temporary files of killed
writers, which `find_trace_files` does for every directory it walks).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tracetool.errors import NotFoundError, TraceFormatError
from tracetool.trace.atomic import (  # noqa: F401  (re-exported: the historical home)
    atomic_write_bytes,
    atomic_write_stream,
    remove_orphans,
)

FORMAT_VERSION = "1.12"
TRACE_SUFFIXES = (".trace.json", ".appmap.json")


@dataclass
class TraceDocument:
    """One recording. `data` is the whole JSON object; the properties are views into it."""

    data: dict[str, Any]
    path: Path | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def version(self) -> str | None:
        v = self.data.get("version")
        return None if v is None else str(v)

    @property
    def metadata(self) -> dict[str, Any]:
        md = self.data.get("metadata")
        if not isinstance(md, dict):
            md = {}
            self.data["metadata"] = md
        return md

    @property
    def class_map(self) -> list[dict[str, Any]]:
        cm = self.data.get("classMap")
        if not isinstance(cm, list):
            cm = []
            self.data["classMap"] = cm
        return cm

    @property
    def events(self) -> list[dict[str, Any]]:
        ev = self.data.get("events")
        if not isinstance(ev, list):
            ev = []
            self.data["events"] = ev
        return ev

    @events.setter
    def events(self, value: list[dict[str, Any]]) -> None:
        self.data["events"] = value

    @property
    def event_updates(self) -> dict[str, Any]:
        eu = self.data.get("eventUpdates")
        return eu if isinstance(eu, dict) else {}

    @property
    def name(self) -> str:
        """The recording's name: metadata.name, else the file name without its suffix."""
        name = self.metadata.get("name")
        if isinstance(name, str) and name:
            return name
        return recording_stem(self.path) if self.path else ""

    def to_bytes(self, *, indent: bool = False) -> bytes:
        return dumps(self.data, indent=indent)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC: building millions of acyclic containers triggers it needlessly."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def recording_stem(path: Path | str) -> str:
    """File name without `.trace.json` / `.appmap.json` (or `.json`)."""
    name = Path(path).name
    for suffix in (*TRACE_SUFFIXES, ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def is_trace_file(path: Path | str) -> bool:
    return str(path).endswith(TRACE_SUFFIXES)


def parse(raw: bytes | str, source: str = "<memory>") -> TraceDocument:
    """Parse JSON text into a TraceDocument, tolerating every known variant of the format."""
    try:
        with gc_paused():
            data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise TraceFormatError(f"{source}: not valid JSON ({exc})") from None
    return from_data(data, source)


def from_data(data: Any, source: str = "<memory>") -> TraceDocument:
    """Wrap already-parsed JSON, checking that it is a trace document."""
    if not isinstance(data, dict):
        raise TraceFormatError(
            f"{source}: not a trace document (top level is a {type(data).__name__}, not an object)"
        )
    if not any(key in data for key in ("events", "classMap", "metadata")):
        raise TraceFormatError(f"{source}: not a trace document (no events, classMap or metadata)")
    doc = TraceDocument(data)
    for key, kind in (("events", list), ("classMap", list), ("metadata", dict)):
        value = data.get(key)
        if value is not None and not isinstance(value, kind):
            raise TraceFormatError(
                f"{source}: not a trace document ({key} is a {type(value).__name__}, "
                f"expected {'an array' if kind is list else 'an object'})"
            )
    events = data.get("events")
    if events:
        kept = [e for e in events if isinstance(e, dict)]
        if len(kept) != len(events):
            doc.warnings.append(f"{source}: dropped {len(events) - len(kept)} non-object events")
            data["events"] = kept
    return doc


def load(path: Path | str) -> TraceDocument:
    """Read a trace document from disk."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise TraceFormatError(f"{p}: is a directory, not a trace document") from None
    except OSError as exc:
        raise TraceFormatError(f"{p}: cannot read ({exc.strerror})") from None
    if not raw.strip():
        raise TraceFormatError(f"{p}: empty file, not a trace document")
    doc = parse(raw, str(p))
    doc.path = p
    return doc


def dumps(data: Any, *, indent: bool = False) -> bytes:
    option = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
    if indent:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(data, option=option)


def save(doc: TraceDocument | dict[str, Any], path: Path | str, *, indent: bool = False) -> Path:
    """Write a trace document atomically; returns the path written."""
    data = doc.data if isinstance(doc, TraceDocument) else doc
    target = Path(path)
    atomic_write_bytes(target, dumps(data, indent=indent))
    if isinstance(doc, TraceDocument):
        doc.path = target
    return target


# Folders never searched for recordings (VCS, dependencies, virtualenvs, caches).
SKIP_DIRS = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}
)
_SKIP_DIRS = SKIP_DIRS


def find_trace_files(root: Path | str) -> list[Path]:
    """Every `*.trace.json` / `*.appmap.json` below `root`, sorted; a file root is returned as is.

    Skips VCS, dependency and virtualenv folders and hidden temp files of atomic writes; removes
    the temp files killed writers left (`tracetool.trace.atomic.remove_orphans`).
    """
    base = Path(root)
    if base.is_file():
        return [base]
    if not base.is_dir():
        raise NotFoundError(f"{base}: no such directory")
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        remove_orphans(dirpath, [f for f in filenames if f.endswith(".tmp")])
        for fname in filenames:
            if fname.endswith(TRACE_SUFFIXES) and not fname.startswith("."):
                found.append(Path(dirpath) / fname)
    found.sort()
    return found
