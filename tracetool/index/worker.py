"""Indexing one recording file: read, hash, parse, extract, write its sidecar.

`process(task)` runs in a worker process (or inline for small jobs) and never raises for a bad
file: it returns `Indexed`, `Same` (the content hash is one the caller already knows — a touched
or renamed file, nothing to parse) or `Skipped` with a one-line reason. Bad input is data, not an
error; only the caller decides whether skips fail the run (`--strict`).

A file is skipped when it is larger than `task.max_bytes` (the default is derived from available
memory, see `tracetool.index.indexer`), changes while it is read (still being written), is not
JSON or not a trace document, or cannot be modelled at all.

Digest hooks: `DIGEST_HOOKS` maps a digest name to `"module:function"`; the function receives
the normalized `TraceDocument` and returns a string (or None). A target ending in `:bound`
(`"module:function:bound"`) receives the recording's bound call tree instead
(`tracetool.filters.Bound`: the document, its call tree and every call's code object, built once
by `extract_bound` for the rows and the digests alike). A hook whose module does not exist yet
is skipped, so the sequence-diagram digest appears in sidecars and in
`recordings.diagram_digest` as soon as `tracetool.diagram` provides it.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from tracetool import __version__
from tracetool.errors import NotFoundError, TraceToolError
from tracetool.filters import Bound
from tracetool.index import sidecar
from tracetool.index.extract import Extract, extract_bound, release_bound
from tracetool.trace import gc_paused, parse
from tracetool.trace.reader import describe, diagnose, open_regular

# name -> "module:function(TraceDocument) -> str | None", or "module:function(Bound):bound".
# Wired by the lead to tracetool.diagram.
DIGEST_HOOKS: dict[str, str] = {
    "sequence_diagram": "tracetool.diagram:bound_digest:bound",
}


@dataclass(frozen=True)
class Task:
    path: str  # absolute path of the recording
    relpath: str  # POSIX path relative to trace_dir (the database key)
    size: int
    mtime_ns: int
    sidecar: str  # where to write the sidecar
    max_bytes: int
    known: tuple[str, ...] = ()  # sha256 values meaning "content already indexed"


@dataclass
class Indexed:
    relpath: str
    size: int
    mtime_ns: int
    sha256: str
    data: Extract
    digests: dict[str, str | None]


@dataclass(frozen=True)
class Same:
    relpath: str
    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True)
class Skipped:
    relpath: str
    reason: str


Result = Union[Indexed, Same, Skipped]

# name -> (function, whether it takes the Bound rather than the document)
_hooks: dict[str, tuple[Callable[[Any], Any], bool]] | None = None


def _digest_hooks() -> dict[str, tuple[Callable[[Any], Any], bool]]:
    global _hooks
    if _hooks is None:
        _hooks = {}
        for name, target in DIGEST_HOOKS.items():
            takes_bound = target.endswith(":bound")
            module_name, _, attr = target.removesuffix(":bound").partition(":")
            try:
                func = getattr(importlib.import_module(module_name), attr, None)
            except ImportError:  # the module does not exist (yet)
                continue
            if callable(func):
                _hooks[name] = (func, takes_bound)
    return _hooks


def warm_up() -> None:
    """Import what `process` imports lazily (digest hooks, the SQL tokenizer), so processes
    forked from this one start with it: a pool replaces its workers now and then, and each would
    pay the imports again."""
    from tracetool.sql import analyze

    _digest_hooks()
    analyze("SELECT 1")


def _digests(bound: Bound) -> dict[str, str | None]:
    digests: dict[str, str | None] = {}
    for name, (hook, takes_bound) in _digest_hooks().items():
        try:
            value = hook(bound if takes_bound else bound.doc)
        except Exception:  # a digest is optional; the recording is still indexed
            value = None
        digests[name] = None if value is None else str(value)
    return digests


def _mb(n: int) -> str:
    return f"{n / 1e6:.0f} MB"


def process(task: Task) -> Result:
    """Index one file (see module doc)."""
    rel = task.relpath
    try:
        before = os.stat(task.path)
        if before.st_size > task.max_bytes:
            return Skipped(
                rel,
                f"too large to index in memory ({_mb(before.st_size)} > {_mb(task.max_bytes)})",
            )
        with open_regular(task.path) as handle:
            raw = handle.read()
        after = os.stat(task.path)
    except (FileNotFoundError, NotFoundError):
        return Skipped(rel, "deleted while indexing")
    except TraceToolError as exc:
        return Skipped(rel, str(exc).replace(f"{task.path}: ", "", 1))
    except MemoryError:
        return Skipped(rel, f"too large to index in memory ({_mb(before.st_size)})")
    except OSError as exc:
        return Skipped(rel, f"cannot read ({exc.strerror})")
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns) or len(
        raw
    ) != after.st_size:
        return Skipped(rel, "changed while being read (still being written?)")
    digest = hashlib.sha256(raw).hexdigest()
    if digest in task.known:
        return Same(rel, after.st_size, after.st_mtime_ns, digest)
    try:
        # No cyclic GC while building: the document is a few hundred thousand containers, and
        # extract() breaks its own cycles, so reference counting frees it all before the
        # collector runs again (a collection with the document alive costs ms per recording).
        with gc_paused():
            doc = parse(raw, rel)
            del raw
            data, bound = extract_bound(doc, rel)
            del doc
            try:
                digests = _digests(bound)
            finally:
                release_bound(bound)
            del bound
    except TraceToolError as exc:
        reason = str(exc)
        if reason.startswith(f"{rel}: "):
            reason = reason[len(rel) + 2 :]
        if "not valid JSON" in reason:
            reason += " (partial file, still being written?)"
        return Skipped(rel, reason)
    except MemoryError:
        return Skipped(rel, f"too large to index in memory ({_mb(after.st_size)})")
    except Exception as exc:  # one odd file must not stop the whole run
        return Skipped(rel, diagnose(task.path) or describe(exc))
    try:
        sidecar.write(
            Path(task.sidecar),
            {
                "version": sidecar.SIDECAR_VERSION,
                "tool": f"tracetool {__version__}",
                "recording": rel,
                "size": after.st_size,
                "mtime_ns": after.st_mtime_ns,
                "sha256": digest,
                "metadata": data.metadata,
                "classMap": data.class_map,
                "canonical": data.canonical,
                "fingerprints": sidecar.fingerprints(digest, data.canonical),
                "digests": digests,
                "stats": {
                    key: data.recording.get(key)
                    for key in ("events", "requests", "queries", "calls", "exceptions")
                },
            },
        )
    except OSError as exc:
        return Skipped(rel, f"cannot write its sidecar {task.sidecar} ({exc.strerror})")
    # What the parent needs is the rows; the sidecar payloads stay here.
    data.class_map = []
    data.canonical = {}
    data.metadata = {}
    return Indexed(rel, after.st_size, after.st_mtime_ns, digest, data, digests)
