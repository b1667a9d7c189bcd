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

import functools
import gc
import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import orjson

from tracetool.errors import TraceFormatError
from tracetool.trace.atomic import (  # noqa: F401  (re-exported: the historical home)
    atomic_write_bytes,
    atomic_write_stream,
    remove_orphans,
)
from tracetool.trace.checks import (
    bytes_defect,
    document_defect,
    dropped_events_warning,
    event_updates_warning,
    kind,
)
from tracetool.trace.reader import SKIP_DIRS, TRACE_SUFFIXES, describe, guarded, read_file
from tracetool.trace.reader import find_trace_files as find_trace_files

FORMAT_VERSION = "1.12"


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


_F = TypeVar("_F", bound=Callable[..., Any])


def gc_paused_call(function: _F) -> _F:
    """`function`, run with the cyclic GC paused (as in `gc_paused`): for the query verbs,
    which read thousands of rows (tuples, `sqlite3.Row`s) into acyclic results. Their
    allocations otherwise set off collections that walk every object of the process (a
    daemon's, or the last recording's of a command that read one): `compare` and `endpoints`
    took up to twice as long from one call to the next."""

    # (not `with gc_paused()`: its generator is a container, allocated while the collector is
    # still on, so the call could start the very collection it is there to avoid)
    @functools.wraps(function)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():  # (paused already: by a caller, or by another thread's verb)
            return function(*args, **kwargs)
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            gc.enable()

    return cast(_F, paused)


# What `dispose` kept for the process's exit to free (a one-shot command: `free_at_exit`), as
# (object, release) pairs; None: dispose frees at once.
_KEPT: list[tuple[Any, Callable[[Any], None] | None]] | None = None


def free_at_exit() -> None:
    """In a one-shot command: let `dispose` leave the last recording's objects to the exit,
    and the command's caller end the process without freeing any object (`left_to_exit`: the
    interpreter's own teardown costs ~0.02 s).

    Freeing a big recording's events, call tree and actions one object at a time costs ~0.15 s
    of CPU per 60 MB, which a process about to exit need not pay: the command's caller then
    ends it at once (tracetool.cli.common.run_cli does, `left_to_exit`), whose memory goes back at
    once. Only one recording's objects are kept: `dispose_kept` (which `dispose` callers run
    before reading the next recording) frees the ones kept before, so the peak does not grow
    with the number of recordings (it grows by what was freed before writing the output: the
    events and call tree, ~25 MB of ~300 MB for a 60 MB recording's JSON diagram).
    """
    global _KEPT
    if _KEPT is None:
        _KEPT = []


def dispose(obj: Any, release: Callable[[Any], None] | None = None) -> None:
    """Free `obj` (after `release(obj)`, which breaks its reference cycles), or keep it for the
    exit (`free_at_exit`)."""
    if _KEPT is not None:
        _KEPT.append((obj, release))
        # out of the cyclic GC's sight: the first collection after a paused build would
        # otherwise walk every object kept (they were all made while it was paused)
        gc.freeze()
    elif release is not None:
        release(obj)


def dispose_kept() -> None:
    """Free what `dispose` kept (before the next recording is read)."""
    if _KEPT:
        kept = _KEPT[:]
        _KEPT.clear()
        for obj, release in kept:
            if release is not None:
                release(obj)
        gc.unfreeze()


def left_to_exit() -> bool:
    """Whether the command called `free_at_exit`: its caller then ends the process at once,
    without freeing any object (`tracetool.cli.common.exit_at_once`; tracetool's one-shot
    commands register no exit handler that this would skip)."""
    return _KEPT is not None


_MALLOC_TUNED: list[bool] = []


def reuse_freed_buffers() -> None:
    """Have glibc keep freed multi-megabyte buffers for reuse (once per process; elsewhere a
    no-op). By default it maps each such buffer afresh and unmaps it when freed, so a reader
    that reads and decodes a big file a block at a time faults every page of every block in
    again: on a 60 MB recording streamed twice, 0.1–0.15 s of system time for nothing. Buffers
    under 32 MiB then come from the heap, which keeps up to 64 MiB free before shrinking; peak
    memory does not change (the freed blocks are the next ones' room)."""
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED.append(True)
    from tracetool.trace import libc

    mallopt = libc.function("mallopt")  # (glibc's: musl has none)
    if mallopt is not None:
        mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: fixed, no longer raised and lowered
        mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD


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
    with guarded(source):
        try:
            with gc_paused():
                data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise TraceFormatError(f"{source}: {bytes_defect(raw) or describe(exc)}") from None
        return from_data(data, source)


def from_data(data: Any, source: str = "<memory>") -> TraceDocument:
    """Wrap already-parsed JSON, checking that it is a trace document."""
    defect = document_defect(
        {key: kind(value) for key, value in data.items()} if isinstance(data, dict) else None,
        kind(data),
    )
    if defect is not None:
        raise TraceFormatError(f"{source}: {defect}")
    doc = TraceDocument(data)
    warning = event_updates_warning(
        kind(data["eventUpdates"]) if "eventUpdates" in data else None, source
    )
    if warning is not None:
        doc.warnings.append(warning)
    events = data.get("events")
    if events and not all(map(isinstance, events, itertools.repeat(dict))):
        kept = [e for e in events if isinstance(e, dict)]
        if len(kept) != len(events):
            doc.warnings.append(dropped_events_warning(len(events) - len(kept), source))
            data["events"] = kept
    return doc


def load(path: Path | str) -> TraceDocument:
    """Read a trace document from disk (regular files only: `tracetool.trace.reader`)."""
    p = Path(path)
    raw = read_file(p)
    assert raw is not None
    if not raw.strip():
        raise TraceFormatError(f"{p}: empty file, not a trace document")
    with guarded(p):
        doc = parse(raw, str(p))
    doc.path = p
    return doc


def dumps(data: Any, *, indent: bool = False) -> bytes:
    option = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
    if indent:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(data, option=option)


_END: Any = object()


def dumps_deep(data: Any) -> bytes:
    """Compact JSON of a value nested deeper than orjson writes (255 levels), iteratively.

    Containers are walked with an explicit stack; each scalar is still written by orjson
    (into one growing buffer: orjson's result objects over-allocate, so keeping each of them
    would cost kilobytes per value). The output is what `dumps(data)` would be without the limit.
    """
    out = bytearray()
    stack: list[tuple[Iterator[Any], bool, list[bool]]] = []
    value: Any = data
    key: Any
    while True:
        if isinstance(value, dict) and value:
            out += b"{"
            stack.append((iter(value.items()), True, [True]))
        elif isinstance(value, (list, tuple)) and value:
            out += b"["
            stack.append((iter(value), False, [True]))
        else:
            out += dumps(value)  # a scalar, or an empty container
        while stack:
            items, is_dict, first = stack[-1]
            item = next(items, _END)
            if item is _END:
                stack.pop()
                out += b"}" if is_dict else b"]"
                continue
            if first[0]:
                first[0] = False
            else:
                out += b","
            if is_dict:
                key, value = item
                out += dumps(key if isinstance(key, str) else str(key))
                out += b":"
            else:
                value = item
            break
        else:
            return bytes(out)


def save(doc: TraceDocument | dict[str, Any], path: Path | str, *, indent: bool = False) -> Path:
    """Write a trace document atomically; returns the path written."""
    data = doc.data if isinstance(doc, TraceDocument) else doc
    target = Path(path)
    atomic_write_bytes(target, dumps(data, indent=indent))
    if isinstance(doc, TraceDocument):
        doc.path = target
    return target


# Walking directories for recordings lives in `tracetool.trace.reader` (re-exported here).
_SKIP_DIRS = SKIP_DIRS
