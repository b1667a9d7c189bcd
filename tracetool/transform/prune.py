"""Prune: drop events from a recording, by size target or by filter (spec `prune`).

Contract:

- Size mode (`size` bytes; `parse_size("15mb")` = 15·2^20, binary units b/kb/mb/gb): when the
  file is larger than the target, the function calls with the most bytes in the recording — the
  most repetitive calls — are dropped, one code object (fqid) at a time, largest first, until the
  output fits. HTTP server and client requests and SQL queries are never dropped (nor messages).
  A dropped call takes its return with it and its children move up to its caller.
- Filter mode (`filter`): the filter (`tracetool.filters`) is merged with the document's
  existing top-level `pruneFilter` (lists unioned, smallest hideElapsedTimeUnder, …) and applied.
  Both modes may be combined (filter first).
- The output keeps every surviving event byte for byte (eventUpdates applied), with its original
  id, so `parent_id`s stay valid and ids still match other tools' references; the classMap keeps
  only code objects with events; `pruneFilter` records what was hidden (`hideName` fqids in
  size mode, the merged filter in filter mode) so pruning again, or AppMap's editors, know it.
- `PruneResult` says what was removed (fqid, calls, bytes), sizes and event counts before and
  after, and whether the target was reached (it cannot be when requests and queries alone are
  larger; the result says so rather than failing). `chunks()` gives the pruned bytes: `data`,
  or for a recording over `STREAM_THRESHOLD` pruned by size alone, the same bytes read from
  the file as they are written (`tracetool.transform.prune_streamed`: memory that does not grow
  with the recording).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracetool import filters
from tracetool.errors import UsageError
from tracetool.filters import Bound, FilterState
from tracetool.trace import events as ev
from tracetool.trace.codeobjects import CodeObject
from tracetool.trace.document import dumps, gc_paused
from tracetool.trace.reader import guarded
from tracetool.trace.slim import MinimalEvent, SlimDocument, load_slim
from tracetool.trace.tree import CallNode

DEFAULT_SIZE = "15mb"
_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "m": 2**20, "mb": 2**20, "g": 2**30, "gb": 2**30}
_KEEP_KINDS = frozenset({ev.HTTP_SERVER, ev.HTTP_CLIENT, ev.SQL, ev.MESSAGE})


def parse_size(text: str) -> int:
    """`15mb` → 15 · 2^20 bytes (binary units: b, kb, mb, gb; case-insensitive)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?b?)\s*", str(text).lower())
    if not m:
        raise UsageError(f"--size {text!r}: expected a size such as 15mb, 800kb or 2gb")
    value = float(m.group(1)) * _UNITS[m.group(2)]
    if value <= 0:
        raise UsageError(f"--size {text!r}: the size must be positive")
    return int(value)


@dataclass(frozen=True)
class Removed:
    fqid: str
    calls: int
    bytes: int


@dataclass(frozen=True)
class PruneResult:
    source: Path
    size_before: int
    size_after: int
    events_before: int
    events_after: int
    removed: tuple[Removed, ...]
    prune_filter: dict[str, Any]
    target: int | None = None
    reached: bool = True
    data: bytes = field(default=b"", repr=False)
    # a big recording's pruned bytes, made as they are written (`chunks`), instead of `data`
    pieces: Callable[[], Iterator[bytes]] | None = field(default=None, repr=False, compare=False)

    def chunks(self) -> Iterator[bytes]:
        """The pruned recording's bytes in pieces (read from the file as they are written, for
        a recording pruned streamed: once)."""
        if self.pieces is not None:
            yield from self.pieces()
        else:
            yield self.data

    def summary(self) -> dict[str, Any]:
        return {
            "file": str(self.source),
            "sizeBefore": self.size_before,
            "sizeAfter": self.size_after,
            "eventsBefore": self.events_before,
            "eventsAfter": self.events_after,
            "target": self.target,
            "targetReached": self.reached,
            "removed": [{"fqid": r.fqid, "calls": r.calls, "bytes": r.bytes} for r in self.removed],
            "pruneFilter": self.prune_filter,
        }


def prune_file(
    path: Path | str, *, size: int | None = None, filter: FilterState | None = None
) -> PruneResult:
    """Prune one recording (module doc); the pruned JSON is `result.data`."""
    if size is None and filter is None:
        raise UsageError("prune needs a size target (-s/--size, e.g. 15mb) or a --filter")
    source = Path(path)
    if filter is None and size is not None:
        from tracetool.transform.prune_streamed import prune_streamed

        streamed = prune_streamed(source, size)
        if streamed is not None:
            return streamed
    with gc_paused():
        # Size-only pruning reads just the call structure; a filter needs the slim fields.
        doc = load_slim(source, raw=True, minimal=filter is None)
        original = source.stat().st_size
        with guarded(source):
            return prune_document(doc, source, original, size=size, filter=filter)


def prune_document(
    doc: SlimDocument,
    source: Path,
    original_size: int,
    *,
    size: int | None = None,
    filter: FilterState | None = None,
) -> PruneResult:
    prune_filter: FilterState | None = None
    if filter is not None:
        existing = doc.data.get("pruneFilter")
        prune_filter = filter
        if isinstance(existing, dict):
            prune_filter = filters.merge(filter, filters.decode(existing, source="pruneFilter"))
    needs_names = prune_filter is not None and filters.has_patterns(prune_filter)
    bound = filters.bind(doc, sql_names=needs_names)
    raws = _Raws(doc, bound)
    # the kept call nodes, in pre-order, and the set of their ids (what `filters` takes)
    nodes: list[CallNode] = bound.nodes
    kept = {id(n) for n in nodes}
    if prune_filter is not None:
        kept = filters.filter_nodes(bound, prune_filter)
        nodes = [n for n in nodes if id(n) in kept]

    removed: list[Removed] = []
    reached = True
    data = b""
    if size is None or filter is not None or original_size <= size:
        data = _serialize(doc, bound, raws, nodes, kept, prune_filter)
    if size is not None and (len(data) > size or not data):
        candidates = _candidates(bound, raws, nodes)
        # without a filter the output before pruning is the file itself, so skip encoding it
        excess = (len(data) if data else original_size) - size
        hidden: list[str] = []
        # greedy by bytes: the estimate is exact for the events; classMap shrink is a bonus
        while candidates and excess > 0:
            item = candidates.pop(0)
            hidden.append(item.fqid)
            removed.append(item)
            excess -= item.bytes
        cos = bound.code_objects
        distinct = {id(co): co for co in cos.values()}
        while True:
            drop = set(hidden)
            dropped = {key for key, co in distinct.items() if co.fqid in drop}
            nodes_now = [n for n in nodes if id(cos[id(n)]) not in dropped]
            kept_now = {id(n) for n in nodes_now}
            state = filters.with_hidden_names(prune_filter or FilterState(), hidden)
            data = _serialize(doc, bound, raws, nodes_now, kept_now, state)
            if len(data) <= size or not candidates:
                break
            item = candidates.pop(0)  # the estimate fell short (commas, classMap): one more
            hidden.append(item.fqid)
            removed.append(item)
        nodes = nodes_now
        prune_filter = state
        reached = len(data) <= size
    events_after = sum([1 if n.ret is None else 2 for n in nodes])
    return PruneResult(
        source=source,
        size_before=original_size,
        size_after=len(data),
        events_before=len(bound.events),
        events_after=events_after,
        removed=tuple(removed),
        prune_filter=filters.to_json(prune_filter) if prune_filter is not None else {},
        target=size,
        reached=reached,
        data=data,
    )


class _Raws:
    """Each event's exact JSON (bytes-like, never copied), eventUpdates applied."""

    def __init__(self, doc: SlimDocument, bound: Bound) -> None:
        self.by_id: dict[int, Any] = {}
        events = bound.events
        # minimal structs carry their own text (`event.raw`, read inline by the loops below);
        # dict events need a side table
        self.structs = bool(events) and isinstance(events[0], MinimalEvent)
        if not self.structs:
            self.by_id = _raw_events(doc, bound)

    def __getitem__(self, event: Any) -> Any:
        if isinstance(event, MinimalEvent) and event.raw is not None:
            return event.raw
        found = self.by_id.get(id(event))
        return found if found is not None else dumps(event)


def _raw_events(doc: SlimDocument, bound: Bound) -> dict[int, Any]:
    raws: dict[int, Any] = {}
    raw_list = doc.raw_events or []
    updates = doc.raw_updates
    for index, event in enumerate(doc.events):
        raws[id(event)] = raw_list[index] if index < len(raw_list) else dumps(event)
    if updates:
        for event in bound.events:
            if id(event) not in raws:
                key = str(event.get("id"))
                raws[id(event)] = updates[key] if key in updates else dumps(event)
    return raws


def _candidates(bound: Bound, raws: _Raws, kept: list[CallNode]) -> list[Removed]:
    """Function code objects ranked by the bytes their calls take (most first)."""
    ranking = Ranking()
    ranking.add(kept, bound.code_objects, raws)
    return ranking.ranked()


class Ranking:
    """`_candidates`, fed the call nodes in pre-order a batch at a time."""

    def __init__(self) -> None:
        self.calls: dict[int, int] = {}
        self.sizes: dict[int, int] = {}
        self.objects: dict[int, CodeObject] = {}
        self.skipped: set[int] = set()  # code objects that are never candidates

    def add(self, kept: list[CallNode], cos: dict[int, CodeObject], raws: _Raws) -> None:
        calls, sizes, objects, skipped = self.calls, self.sizes, self.objects, self.skipped
        structs = raws.structs
        for n in kept:
            co = cos[id(n)]
            key = id(co)
            if key not in objects:
                if key in skipped:
                    continue
                # a message or unknown call is bound to a bare function object: keep it
                if co.type != "function" or (co.parent is None and ev.kind(n.call) in _KEEP_KINDS):
                    if co.type != "function":
                        skipped.add(key)
                    continue
                objects[key] = co
            call, ret = n.call, n.ret  # MinimalEvent structs when `structs`
            raw = call.raw if structs else None  # type: ignore[attr-defined]
            nbytes = len(raws[call] if raw is None else raw) + 1
            if ret is not None:
                raw = ret.raw if structs else None  # type: ignore[attr-defined]
                nbytes += len(raws[ret] if raw is None else raw) + 1
            calls[key] = calls.get(key, 0) + 1
            sizes[key] = sizes.get(key, 0) + nbytes

    @staticmethod
    def counts(co: CodeObject, call: Any) -> bool:
        """Whether a call bound to `co` is counted (as `add` decides, call by call)."""
        return co.type == "function" and not (co.parent is None and ev.kind(call) in _KEEP_KINDS)

    def add_totals(self, co: CodeObject, calls: int, nbytes: int) -> None:
        """Count `calls` calls of `co` (counted ones: `counts`) and their events' `nbytes`."""
        key = id(co)
        self.objects.setdefault(key, co)
        self.calls[key] = self.calls.get(key, 0) + calls
        self.sizes[key] = self.sizes.get(key, 0) + nbytes

    def ranked(self) -> list[Removed]:
        by_fqid: dict[str, list[int]] = {}
        for key, co in self.objects.items():
            entry = by_fqid.setdefault(co.fqid, [0, 0])
            entry[0] += self.calls[key]
            entry[1] += self.sizes[key]
        ranked = sorted(by_fqid.items(), key=lambda item: (-item[1][1], -item[1][0], item[0]))
        return [Removed(fqid, c, b) for fqid, (c, b) in ranked]


def _serialize(
    doc: SlimDocument,
    bound: Bound,
    raws: _Raws,
    nodes: list[CallNode],
    kept: set[int],
    prune_filter: FilterState | None,
) -> bytes:
    """The pruned document: the calls and returns of `nodes` (pre-order, ids in `kept`)."""
    keep_events = _kept_events(nodes)
    if raws.structs:
        structs: list[Any] = bound.events
        kept_raws = [raws[e] if e.raw is None else e.raw for e in structs if id(e) in keep_events]
    else:
        kept_raws = [raws[e] for e in bound.events if id(e) in keep_events]
    class_map = filters.prune_class_map(bound, kept)
    # pieces, so the big event array is copied only once, at the end
    return b"".join(document_pieces(doc.data, class_map, [b",".join(kept_raws)], prune_filter))


def document_pieces(
    data: dict[str, Any],
    class_map: list[dict[str, Any]],
    events: Iterable[bytes],
    prune_filter: FilterState | None,
) -> Iterator[bytes]:
    """The pruned document's bytes: `data`'s members but events, eventUpdates and pruneFilter
    (version and metadata first, then classMap, then the others in order), the events array
    of `events` (pieces of comma-separated event texts) and `prune_filter`."""
    first = True

    def key(name: str) -> bytes:
        nonlocal first
        text = (b"" if first else b",") + dumps(name) + b":"
        first = False
        return text

    yield b"{"
    for name in ("version", "metadata"):
        if name in data:
            yield key(name) + dumps(data[name])
    yield key("classMap") + dumps(class_map)
    for name, value in data.items():
        if name not in ("version", "metadata", "classMap", "events", "eventUpdates", "pruneFilter"):
            yield key(name) + dumps(value)
    yield key("events") + b"["
    separator = b""
    for piece in events:
        if piece:
            yield separator + piece if separator else piece
            separator = b","
    yield b"]"
    if prune_filter is not None:
        yield key("pruneFilter") + dumps(filters.to_json(prune_filter))
    yield b"}"


def _kept_events(nodes: list[CallNode]) -> set[int]:
    """ids of the calls and returns of `nodes`."""
    calls = {id(n.call) for n in nodes}
    returns = {id(n.ret) for n in nodes if n.ret is not None}
    return calls | returns


def output_path(source: Path, output_dir: Path) -> Path:
    return output_dir / source.name


def human(size: float) -> str:
    for unit in ("bytes", "KB", "MB"):
        if size < 1024 or unit == "MB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def describe(result: PruneResult) -> Iterable[str]:
    """Human lines for the text format."""
    yield (
        f"{result.source}: {human(result.size_before)} → {human(result.size_after)}, "
        f"{result.events_before} → {result.events_after} events"
    )
    if result.removed:
        yield "The following has been pruned:"
        for r in result.removed:
            yield f"  {r.fqid} ({r.calls} calls, {human(r.bytes)})"
    elif result.prune_filter:
        yield f"Filter applied: {filters.describe(filters.decode(result.prune_filter))}"
    if not result.reached and result.target is not None:
        yield (
            f"warning: could not reach {human(result.target)}: HTTP requests and SQL "
            "queries are always kept"
        )
