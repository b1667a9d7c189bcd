"""Indexing one recording file: read, hash, parse, extract, write its sidecar.

`process(task)` runs in a worker process (or inline for small jobs) and never raises for a bad
file: it returns `Indexed`, `Same` (the content hash is one the caller already knows — a touched
or renamed file, nothing to parse) or `Skipped` with a one-line reason. Bad input is data, not an
error; only the caller decides whether skips fail the run (`--strict`).

A recording over `STREAM_THRESHOLD` bytes is read event by event (`_extract_streamed`): hashed
in blocks, then its call trees extracted (`tracetool.index.extract.Extractor`), digested and freed
in batches as they finish, so memory follows the biggest unfinished call tree, not the file. The
rows, sidecar and digests are those of the whole-file read, with one exception a well-formed
recording never shows: a return naming a call whose tree already finished (its caller returned
first) is ignored, where a whole read would still pair it with that call.

A file is skipped when it changes while it is read (still being written), is not JSON or not a
trace document, or cannot be modelled at all; or when it is larger than `task.max_bytes` (the
default is derived from available memory, see `tracetool.index.indexer`, and then spares the
recordings read event by event; `task.hard_limit`, an explicit `--max-size`, caps them all).

Within one index run (`Task.run`), a process returns each code object's row once: a later
recording names it with None in `Extract.items` (`_sent_once`), and the writer takes the row it
kept (`tracetool.index.writer.Writer`). Results must then reach the writer in the order each
process returned them, as `tracetool.index.indexer._completed` yields them.

Digest hooks: `DIGEST_HOOKS` maps a digest name to `"module:function"`; the function receives
the normalized `TraceDocument` and returns a string (or None). A target ending in `:bound`
(`"module:function:bound"`) receives the recording's bound call tree instead
(`tracetool.filters.Bound`: the document, its call tree and every call's code object, built once
by `extract_bound` for the rows and the digests alike). A target ending in `:batches`
(`"module:factory:batches"`) names a factory of accumulators: `factory()` once per recording,
`.add(bound)` with its call trees bound in batches (whole trees, in document order; the batches
of a recording read event by event have an empty `doc` and `events`), `.result()` for the digest;
a whole-file read is one batch. Only
this form works on a recording read event by event: there the others read None (there is no
whole document or tree to give them). The sequence-diagram digest is
`tracetool.diagram.BoundDigests` (`bound_digest` of the whole tree, batch by batch). A hook whose
module does not exist yet is skipped; a hook that raises reads None.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import operator
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import orjson

from tracetool import __version__, sql
from tracetool.errors import NotFoundError, TraceToolError
from tracetool.filters import Bound
from tracetool.index import sidecar
from tracetool.index.extract import (
    Extract,
    Extractor,
    extract_resolved,
    first_timestamp,
    release_bound,
)
from tracetool.index.overhead import event_sums, extract_named, named_rows, recording_overhead
from tracetool.index.sqlcache import encoded
from tracetool.sql import SqlInfo
from tracetool.stats._collect import Key
from tracetool.trace import TraceDocument, gc_paused, parse
from tracetool.trace.normalize import apply_event_updates
from tracetool.trace.reader import describe, diagnose, open_regular
from tracetool.trace.stream import STREAM_THRESHOLD, open_stream
from tracetool.trace.tree import CallNode, CallTreeBuilder, release

# name -> "module:function(TraceDocument) -> str | None", "module:function(Bound):bound" or
# "module:factory:batches" (module doc). Wired by the lead to tracetool.diagram.
DIGEST_HOOKS: dict[str, str] = {
    "sequence_diagram": "tracetool.diagram:BoundDigests:batches",
}
# Calls held before finished call trees are extracted and freed (a streamed recording).
HELD_CALLS = 10_000
# After a recording this big was read whole and freed, the C heap's free pages go back to the
# system (`_trim`): else a worker stays as big as the biggest recording it read, all run long.
TRIM_BYTES = 1_000_000


@dataclass(frozen=True)
class Task:
    path: str  # absolute path of the recording
    relpath: str  # POSIX path relative to trace_dir (the database key)
    size: int
    mtime_ns: int
    sidecar: str  # where to write the sidecar
    max_bytes: int
    known: tuple[str, ...] = ()  # sha256 values meaning "content already indexed"
    # False: `max_bytes` only guards what is read whole (a file over STREAM_THRESHOLD is read
    # event by event, in memory that does not grow with it); True: it caps every file.
    hard_limit: bool = False
    # The index run this task belongs to ("": none): within one, a process sends each code
    # object's row once (`Indexed.data.items`, see `_sent_once`).
    run: str = ""


@dataclass
class Indexed:
    relpath: str
    size: int
    mtime_ns: int
    sha256: str
    # `data.items` maps every code object the recording touches to its row, or to None when
    # this process sent that row earlier in the same run (`Task.run`, `_sent_once`)
    data: Extract
    digests: dict[str, str | None]
    # SQL analyses this process made anew while indexing it, as tracetool.index.sqlcache
    # stores them (`sqlcache.encoded`: keyed by a digest of the text, plain lists)
    sql: dict[str, list[Any]] = field(default_factory=dict)
    # what directory-mode stats sums of it (JSON, `tracetool.stats._collect.file_overhead`, or
    # the same by `tracetool.index.overhead`); None when stats would skip it as malformed
    overhead: str | None = None


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

# A hook as called: what it takes ("document", "bound" or "batches") and the function.
_Hook = tuple[str, Callable[..., Any]]
_hooks: dict[str, _Hook] | None = None


def _digest_hooks() -> dict[str, _Hook]:
    global _hooks
    if _hooks is None:
        _hooks = {}
        for name, target in DIGEST_HOOKS.items():
            form = "document"
            for suffix in ("bound", "batches"):
                if target.endswith(f":{suffix}"):
                    form, target = suffix, target[: -len(suffix) - 1]
            module_name, _, attr = target.partition(":")
            try:
                func = getattr(importlib.import_module(module_name), attr, None)
            except ImportError:  # the module does not exist (yet)
                continue
            if callable(func):
                _hooks[name] = (form, func)
    return _hooks


def warm_up(tokenizer: bool = True) -> None:
    """Import what `process` imports lazily (digest hooks; the SQL tokenizer unless
    `tokenizer` is False), so processes forked from this one start with it: a pool that replaces
    its workers now and then would have each pay the imports again. A pool whose workers live
    for the whole run leaves the tokenizer out: sqlglot's ~10 MB would be resident in the parent
    too, for nothing (peak memory is that of the process tree)."""
    _digest_hooks()
    if tokenizer:
        from tracetool.sql import analyze

        analyze("SELECT 1")


class _Digests:
    """The digest hooks of one recording, fed its bound call trees a batch at a time (`add`);
    `whole` is the recording bound in one batch, for the hooks that take a whole one."""

    def __init__(self) -> None:
        self.batched: dict[str, Any] = {}
        self.values: dict[str, str | None] = {}
        for name, (form, hook) in _digest_hooks().items():
            self.values[name] = None
            if form == "batches":
                acc = _optional(hook)
                self.batched[name] = None if acc is _FAILED else acc

    def add(self, bound: Bound) -> None:
        for name, acc in self.batched.items():
            if acc is not None and _optional(acc.add, bound) is _FAILED:
                self.batched[name] = None

    def whole(self, bound: Bound) -> None:
        for name, (form, hook) in _digest_hooks().items():
            if form != "batches":
                self.values[name] = _text(_optional(hook, bound if form == "bound" else bound.doc))
        self.add(bound)

    def result(self) -> dict[str, str | None]:
        for name, acc in self.batched.items():
            self.values[name] = None if acc is None else _text(_optional(acc.result))
        return self.values


_FAILED: Any = object()


def _optional(func: Callable[..., Any], *args: Any) -> Any:
    try:
        return func(*args)
    except Exception:  # a digest is optional; the recording is still indexed
        return _FAILED


def _text(value: Any) -> str | None:
    return None if value is None or value is _FAILED else str(value)


def _trim() -> None:
    """Hand the C heap's free pages back to the system (glibc; elsewhere nothing)."""
    from tracetool.trace import libc

    malloc_trim = libc.function("malloc_trim")
    if malloc_trim is not None:
        malloc_trim(0)


def _mb(n: int) -> str:
    return f"{n / 1e6:.0f} MB"


def _changed(before: os.stat_result, after: os.stat_result) -> bool:
    return (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns)


def _hash_file(path: str) -> tuple[str, int]:
    """sha256 and length of a file, read in blocks."""
    sha, length = hashlib.sha256(), 0
    with open_regular(path) as handle:
        while block := handle.read(1 << 20):
            sha.update(block)
            length += len(block)
    return sha.hexdigest(), length


def _extract_streamed(path: str, rel: str) -> tuple[Extract, dict[str, str | None]]:
    """`extract_bound` and the digests of a recording read event by event: call trees are
    extracted, digested and freed in batches as they finish, once more than `HELD_CALLS` calls
    are held, so memory follows the biggest unfinished tree, not the file.

    Digest hooks in the "batches" form get each batch; the others (a whole document or call
    tree) cannot be given one and read None."""
    stream = open_stream(path)
    extractor = Extractor(stream.class_map)
    hooks = _Digests()
    builder = CallTreeBuilder()
    n_events, recorded_at, has_http = 0, None, False

    def flush(roots: list[CallNode]) -> None:
        if roots:
            batch = extractor.add(roots, has_http)
            try:
                hooks.add(batch)
            finally:
                release(roots)
                batch.code_objects.clear()

    try:
        for block in stream.event_blocks():
            n_events += len(block)
            if recorded_at is None:
                recorded_at = first_timestamp(block)
            if not has_http:
                has_http = any(map(_IS_REQUEST, block))
            builder.add(block)
            del block
            if len(builder.nodes) > HELD_CALLS:
                flush(builder.take_finished())
        roots, builder.roots = builder.roots, []
        flush(roots)
        data = extractor.finish(TraceDocument(stream.header), rel, n_events, recorded_at)
    finally:
        release(builder.roots)
        extractor.release()
    return data, hooks.result()


_IS_REQUEST = operator.methodcaller("__contains__", "http_server_request")


def process(task: Task, threshold: int | None = None) -> Result:
    """Index one file (see module doc); a file over `threshold` bytes (default
    `STREAM_THRESHOLD`) is read event by event (`_extract_streamed`).

    No cyclic GC until it returns: the document is a few hundred thousand containers, and
    the extract breaks its own cycles, so reference counting frees it all (a collection with
    the document alive costs ms per recording). The collector counts allocations net of
    frees: ended once all but the result is freed (the sidecar's payloads too), the pause
    leaves a collection due after one recording in fifteen instead of one in two, and that
    one walks the result only."""
    with gc_paused():
        return _process(task, threshold)


def _process(task: Task, threshold: int | None) -> Result:
    rel = task.relpath
    streamed = False
    try:
        before = os.stat(task.path)
        streamed = before.st_size > (STREAM_THRESHOLD if threshold is None else threshold)
        if before.st_size > task.max_bytes and (task.hard_limit or not streamed):
            return Skipped(
                rel,
                f"too large to index in memory ({_mb(before.st_size)} > {_mb(task.max_bytes)})",
            )
        if streamed:
            digest, length = _hash_file(task.path)
            raw = b""
        else:
            with open_regular(task.path) as handle:
                raw = handle.read()
            digest, length = "", len(raw)
        after = os.stat(task.path)
    except (FileNotFoundError, NotFoundError):
        return Skipped(rel, "deleted while indexing")
    except TraceToolError as exc:
        return Skipped(rel, str(exc).replace(f"{task.path}: ", "", 1))
    except MemoryError:
        return Skipped(rel, f"too large to index in memory ({_mb(before.st_size)})")
    except OSError as exc:
        return Skipped(rel, f"cannot read ({exc.strerror})")
    if _changed(before, after) or length != after.st_size:
        return Skipped(rel, "changed while being read (still being written?)")
    if not streamed:
        digest = hashlib.sha256(raw).hexdigest()
    if digest in task.known:
        return Same(rel, after.st_size, after.st_mtime_ns, digest)
    try:
        with sql.computed() as analyzed:
            if streamed:
                overhead = _overhead(task.path, None)
                data, digests = _extract_streamed(task.path, rel)
            else:
                doc = parse(raw, rel)
                apply_event_updates(doc)
                # stats' sums paired from the parse now, named after the extract by the code
                # objects it resolved (`extract_named`); else from stats' scan of `raw`
                paired = event_sums(doc.events)
                sums = None if paired is not None else _parsed_sums(raw, doc)
                if paired is None and sums is None:
                    overhead = _overhead_text(task.path, raw, None)
                del raw
                with sql.returned() as analyses:
                    data, bound, resolved = extract_resolved(doc, rel)
                if paired is not None:
                    sums = extract_named(paired, resolved, bound.static, doc.class_map)
                    del paired, resolved
                    if sums is None:  # (naming failed: stats' pass over the file decides)
                        overhead = _overhead_text(task.path, None, None)
                del doc
                if sums is not None:  # (its SQL named from the extract's analyses)
                    overhead = _overhead_text(task.path, None, sums, analyses)
                try:
                    hooks = _Digests()
                    hooks.whole(bound)
                    digests = hooks.result()
                finally:
                    release_bound(bound)
                del bound
        if not streamed and after.st_size >= TRIM_BYTES:
            _trim()
        if streamed and _changed(after, os.stat(task.path)):
            return Skipped(rel, "changed while being read (still being written?)")
    except (FileNotFoundError, NotFoundError):
        return Skipped(rel, "deleted while indexing")
    except TraceToolError as exc:
        reason = str(exc)
        for prefix in (f"{rel}: ", f"{task.path}: "):
            if reason.startswith(prefix):
                reason = reason[len(prefix) :]
                break
        if "not valid JSON" in reason:
            reason += " (partial file, still being written?)"
        return Skipped(rel, reason)
    except MemoryError:
        return Skipped(rel, f"too large to index in memory ({_mb(after.st_size)})")
    except Exception as exc:  # one odd file must not stop the whole run
        return Skipped(rel, diagnose(task.path) or describe(exc))
    try:
        canonical, fingerprints = sidecar.fingerprinted(digest, data.canonical)
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
                "canonical": canonical,
                "fingerprints": fingerprints,
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
    data.items = _sent_once(data.items, task.run)
    return Indexed(
        rel, after.st_size, after.st_mtime_ns, digest, data, digests, encoded(analyzed), overhead
    )


class _Sent(threading.local):
    """The code objects whose rows this process (thread, in a thread pool) returned in run
    `run` (`_sent_once`)."""

    run = ""

    def __init__(self) -> None:
        self.fqids: set[str] = set()


_sent = _Sent()


def _sent_once(items: dict[str, Any], run: str) -> dict[str, Any]:
    """`items` with the rows this process returned earlier in `run` replaced by None: the
    parent keeps every row it received in a run (`tracetool.index.writer.Writer`), most of a
    recording's code objects are ones an earlier recording touched, and their rows were about
    half of what a result pickled. Called only as an `Indexed` result is returned: a recording
    skipped after its extract sent nothing, so marked nothing sent. Results reach the parent in
    the order each process (or thread) returned them (`tracetool.index.indexer._completed`)."""
    if not run:
        return items
    state = _sent
    if run != state.run:
        state.fqids = set()
        state.run = run
    once = dict.fromkeys(items)  # (C loops: most rows were sent before)
    new = items.keys() - state.fqids
    for fqid in new:
        once[fqid] = items[fqid]
    state.fqids.update(new)
    return once


def _overhead(path: str, raw: bytes | None, doc: TraceDocument | None = None) -> str | None:
    """What `stats` sums of this recording (`raw`: its bytes, when read whole; `doc`: them
    parsed, read by `tracetool.index.overhead` instead of decoding them again where it can), as
    JSON; None for a recording `stats` skips as malformed (it reads that one itself, and
    warns). Applies `doc`'s eventUpdates. `process` runs it in two steps (`_parsed_sums`, then
    `_overhead_text` after the extract, whose SQL analyses name the sums' SQL)."""
    return _overhead_text(path, raw, _parsed_sums(raw, doc))


def _parsed_sums(raw: bytes | None, doc: TraceDocument | None) -> dict[Key, list[float]] | None:
    """`recording_overhead` of `doc` (its eventUpdates applied); None without one, or when
    `file_overhead` must read the file instead."""
    if doc is None:
        return None
    apply_event_updates(doc)
    return recording_overhead(doc.events, doc.class_map, raw)


def _overhead_text(
    path: str,
    raw: bytes | None,
    sums: dict[Key, list[float]] | None,
    analyses: dict[Any, SqlInfo] | None = None,
) -> str | None:
    """`_overhead`'s JSON of `_parsed_sums`' sums (None: of `file_overhead`'s, which reads the
    file unless `raw` is given); `analyses`: `sql.analyze` results made already, by its
    arguments (`sql.returned`), which name a SQL key as `sql_fqid` would."""
    rows = None if sums is None else named_rows(sums, analyses)
    if rows is None:
        from tracetool.stats._collect import file_overhead

        try:
            rows = file_overhead(Path(path), raw)
        except TraceToolError:
            return None
    if not all(math.isfinite(row[2]) for row in rows):  # JSON has no inf or nan
        return None
    return orjson.dumps(rows).decode()
