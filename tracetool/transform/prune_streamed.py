"""Size-mode prune of a big recording, with memory that does not grow with it.

Contract:

- `prune_streamed(path, size)` returns None for a recording of at most `STREAM_THRESHOLD` bytes
  (pruned whole: faster), and for one the two passes below cannot reproduce byte for byte (read
  by the fallback reader, a return naming a call of a finished tree: `CallPairing`; one with
  eventUpdates, whose exact texts only a whole read has: they replace their events); callers then
  prune it whole (`tracetool.transform.prune.prune_document`).
- Otherwise the `PruneResult` the whole prune gives, with `data` empty: `chunks()` writes the
  same bytes, reading the file a second time.
- Pass 1 reads each event's call structure and exact JSON text (`MinimalEvent`s) and pairs
  returns with calls as the call tree does, without building it (`CallPairing`: memory follows
  the calls of unfinished trees): every call's code object, what each code object's calls
  weigh (the ranking of what to remove) and the events per code object. What to
  hide and the output size follow without writing anything (the whole prune's greedy choice,
  with sizes added up instead of measured). Pass 1 also notes the code object each event
  belongs to (its call's; none for a return paired with no call), 4 bytes an event — the one
  thing that grows with the recording, by 1–2% of its size — and the length of its text
  (as much again). Pass 2 decodes nothing: it cuts the file where pass 1 cut it and copies
  the text of each event whose code object is kept, in document order, found by those
  lengths (a block with more than a comma between two events is decoded again instead). The
  file's size and modification time must not change between the passes.
- With the C accelerator (`_speedups.c`, section prune), pass 1 decodes no `MinimalEvent`: it
  takes the block reader's texts alone (`_text_blocks`) and `prune_scan` reads from each what
  the decode, `CallPairing` and binding read, pairing and summing as `_Plan.add` does; a call
  is bound in Python (`_Plan.resolve`, in document order) once per distinct text of the fields
  binding reads, and any event it does not read plainly is decoded there whole. Whatever the
  Python pass would hand to the fallback reader makes it return None (pruned whole), so both
  give the same result, bytes and errors (tests/transform/test_prune_scan.py). Pass 2 copies
  the kept texts in C (`prune_join`). `TRACETOOL_NO_SPEEDUPS=1` runs the Python loops.
"""

from __future__ import annotations

import itertools
from array import array
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from tracetool import accel, filters
from tracetool.errors import TraceFormatError
from tracetool.filters import FilterState
from tracetool.filters.apply import BindState, bind_calls, class_map_of
from tracetool.trace.codeobjects import ClassMap, CodeObject
from tracetool.trace.document import gc_paused, reuse_freed_buffers
from tracetool.trace.reader import guarded
from tracetool.trace.slim import MinimalEvent
from tracetool.trace.stream import (
    STREAM_THRESHOLD,
    TraceStream,
    _event_arrays,
    _unchecked,
    file_size,
    run_pass,
)
from tracetool.trace.stream import file_stamp as _stamp
from tracetool.trace.tree import CallPairing
from tracetool.transform.prune import PruneResult, Ranking, Removed, document_pieces

# events per block when set (tests: blocks of a few events); else as the reader reads them
BLOCK = 0

# The first pass's scan of each event's text and the second pass's copy, in C (`_speedups.c`,
# section prune), or None: the Python loops below (`_Plan.add`, `_kept_texts`) run instead.
_NEW = accel.function("prune_new")
_SCAN = accel.function("prune_scan")
_TOTALS = accel.function("prune_totals")
_JOIN = accel.function("prune_join")
_ONE = msgspec.json.Decoder(MinimalEvent)


def prune_streamed(path: Path, size: int, threshold: int | None = None) -> PruneResult | None:
    """Prune a big recording to `size` bytes (module doc), or None to prune it whole."""
    limit = STREAM_THRESHOLD if threshold is None else threshold
    if file_size(path) <= limit:
        return None
    reuse_freed_buffers()  # both passes read the file a block at a time
    with gc_paused(), guarded(path):
        plan = _first_pass(path, limit)
        if plan is None:
            return None
        return plan.result(path, size)


class _Plan:
    """What the first pass learnt: every code object with its calls' bytes and events."""

    def __init__(self, stream: TraceStream, data: dict[str, Any], cmap: ClassMap) -> None:
        self.stream = stream
        self.data = data
        self.cmap = cmap
        self.static = {id(o) for o in cmap}
        self.state = BindState(cmap, sql_names=False)
        self.total = 0  # events read
        self.stamp = (0, 0)  # the file's size and modification time when pass 1 began
        # per event, its mark (0: none, the event is dropped): the number of its call's code
        # object and whether the ranking counts that call (`Ranking.counts`)
        self.marks = array("I")
        self.lengths = array("I")  # per event, the length of its text
        self.number: dict[tuple[int, bool], int] = {}  # (id(code object), counted) -> mark
        self.plain: dict[CodeObject, int] = {}  # code object -> mark, when the call does not matter
        # by mark (from 1): code object, counted, calls, their calls' and returns' bytes (+1
        # each) and events
        self.codes: list[CodeObject | None] = [None]
        self.counted: list[bool] = [False]
        self.calls: list[int] = [0]
        self.bytes: list[int] = [0]
        self.events: list[int] = [0]

    def add(self, items: list[Any], texts: list[Any], pairing: CallPairing) -> None:
        """Count a block of events (`MinimalEvent`s and their texts), paired by `pairing`."""
        calls = [event for event in items if event.event == "call"]
        cos = bind_calls(calls, self.cmap, self.state)
        # each call's mark, remembered by its code object (`plain`) unless the ranking's count
        # depends on the call; then every event's: a call's own, a paired return its call's,
        # else 0 (dropped)
        own: list[Any] = list(map(self.plain.get, cos))
        if None in own:
            for i, mark in enumerate(own):
                if mark is None:
                    own[i] = self._mark(cos[i], calls[i])
        block = pairing.add_values(items, own, 0)
        self.marks.fromlist(block)
        lengths = list(map(len, texts))
        self.lengths.fromlist(lengths)
        sizes = self.bytes
        for mark, size in zip(block, lengths):
            sizes[mark] += size
        # (+1 byte per event: its separator)
        events, counts = self.events, self.calls
        for mark, count in Counter(block).items():
            sizes[mark] += count
            events[mark] += count
        for mark, count in Counter(own).items():
            counts[mark] += count

    def resolve(self, text: Any) -> tuple[Any, Any, Any, Any, int] | None:
        """For `prune_scan`: an event's (event, id, thread_id, parent_id, mark) as `add` reads
        it (the mark of a call; else 0), binding a call as `add` binds it; None when its
        block's decode would fail (the recording is then pruned whole)."""
        try:
            event = _ONE.decode(text)
        except (msgspec.DecodeError, RecursionError):
            return None
        mark = 0
        if event.event == "call":
            co = bind_calls([event], self.cmap, self.state)[0]
            found = self.plain.get(co)
            mark = self._mark(co, event) if found is None else found
        return event.event, event.id, event.thread_id, event.parent_id, mark

    def add_totals(self, totals: list[tuple[int, int, int]]) -> None:
        """`prune_totals`' sums by mark: calls, their events' bytes (+1 each) and events."""
        for mark, (calls, nbytes, events) in enumerate(totals):
            self.calls[mark] += calls
            self.bytes[mark] += nbytes
            self.events[mark] += events

    def _mark(self, co: CodeObject, call: Any) -> int:
        """The mark of a call bound to `co`, numbered on first sight; remembered by `co` alone
        (`plain`) unless whether the ranking counts the call depends on the call."""
        depends = co.type == "function" and co.parent is None
        # `Ranking.counts(co, call)`, which looks at the call only for a function without parent
        key = (id(co), co.type == "function" and (not depends or Ranking.counts(co, call)))
        mark = self.number.get(key)
        if mark is None:
            mark = self.number[key] = len(self.codes)
            self.codes.append(co)
            self.counted.append(key[1])
            self.calls.append(0)
            self.bytes.append(0)
            self.events.append(0)
        if not depends:
            self.plain[co] = mark
        return mark

    def ranking(self) -> Ranking:
        """What each code object's counted calls weigh (the ranking of what to remove)."""
        ranking = Ranking()
        for mark, co in enumerate(self.codes):
            if co is not None and self.counted[mark]:
                ranking.add_totals(co, self.calls[mark], self.bytes[mark])
        return ranking

    def measure(self, hidden: list[str], prune_filter: FilterState | None) -> tuple[int, int]:
        """(output bytes, events) when the code objects named `hidden` are dropped."""
        kept = self._kept(hidden)
        text = sum([self.bytes[mark] for mark in kept])
        head = b"".join(document_pieces(self.data, self._class_map(kept), (), prune_filter))
        return len(head) + max(text - 1, 0), sum([self.events[mark] for mark in kept])

    def _kept(self, hidden: list[str]) -> list[int]:
        drop = set(hidden)
        return [m for m, co in enumerate(self.codes) if co is not None and co.fqid not in drop]

    def _class_map(self, kept: list[int]) -> list[dict[str, Any]]:
        codes = self.codes
        return class_map_of(self.cmap, self.static, (codes[m] for m in kept))  # type: ignore[misc]

    def result(self, source: Path, size: int) -> PruneResult:
        """The whole prune's choice (`prune_document`, size mode), measured instead of written."""
        original = self.stream.size
        removed: list[Removed] = []
        length = 0
        prune_filter: FilterState | None = None
        hidden: list[str] = []
        events_after = 0
        if original <= size:
            length, events_after = self.measure([], None)
        if length > size or not length:
            candidates = self.ranking().ranked()
            excess = (length if length else original) - size
            while candidates and excess > 0:
                item = candidates.pop(0)
                hidden.append(item.fqid)
                removed.append(item)
                excess -= item.bytes
            while True:
                prune_filter = filters.with_hidden_names(FilterState(), hidden)
                length, events_after = self.measure(hidden, prune_filter)
                if length <= size or not candidates:
                    break
                item = candidates.pop(0)
                hidden.append(item.fqid)
                removed.append(item)
        kept = self._kept(hidden)
        class_map = self._class_map(kept)
        keep = [False] * len(self.codes)
        for mark in kept:
            keep[mark] = True
        final_filter = prune_filter

        def pieces() -> Iterator[bytes]:
            with gc_paused():
                events = _kept_texts(self, keep)
                yield from document_pieces(self.data, class_map, events, final_filter)

        return PruneResult(
            source=source,
            size_before=original,
            size_after=length,
            events_before=self.total,
            events_after=events_after,
            removed=tuple(removed),
            prune_filter=filters.to_json(prune_filter) if prune_filter is not None else {},
            target=size,
            reached=length <= size,
            pieces=pieces,
        )


def _first_pass(path: Path, limit: int) -> _Plan | None:
    stamp = _stamp(path)
    options = {"threshold": limit, "header_keys": ("classMap",), "fields": MinimalEvent}
    return run_pass(path, lambda stream: _plan(stream, stamp), **options)  # type: ignore[no-any-return]


def _plan(stream: TraceStream, stamp: tuple[int, int]) -> _Plan | None:
    if not stream.streamed or stream.events_at < 0 or stream.updates:
        return None
    data = stream.before()
    if data is None:
        return None
    plan = _Plan(stream, data, accel.class_map(stream.class_map))
    plan.stamp = stamp
    if _SCAN is not None:
        return _scanned(stream, plan, data)
    pairing = CallPairing()
    blocks = _Blocks(stream)
    for items, texts in blocks:
        plan.add(items, texts, pairing)
    after = stream.after
    if blocks.odd or pairing.late or after is None or set(after) & set(data) or stream.cuts is None:
        return None
    data.update(after)
    plan.total = blocks.events
    return plan


def _scanned(stream: TraceStream, plan: _Plan, data: dict[str, Any]) -> _Plan | None:
    """`_plan`'s loop in C (`prune_scan`), over the events' texts alone: nothing decoded but
    the calls `resolve` binds."""
    state = _NEW()
    resolve = plan.resolve
    total = 0
    for texts in _text_blocks(stream):
        parts = [texts[i : i + BLOCK] for i in range(0, len(texts), BLOCK)] if BLOCK else [texts]
        for part in parts:
            found = _SCAN(state, part, resolve)
            if found is None:
                return None
            plan.marks.frombytes(found[0])
            plan.lengths.frombytes(found[1])
            total += len(part)
    late, totals = _TOTALS(state)
    after = stream.after
    if late or after is None or set(after) & set(data) or stream.cuts is None:
        return None
    plan.add_totals(totals)
    data.update(after)
    plan.total = total
    return plan


def _text_blocks(stream: TraceStream) -> Iterator[list[Any]]:
    """The events' exact texts a block at a time, as `TraceStream.raw_blocks` reads them but
    not decoded (`_event_arrays` has checked each block as JSON); stops where that reader
    would hand a block to its fallback (`stream.after` then stays None). Sets `stream.after`
    and `stream.cuts`, for the second pass, once the array was read to its plain end."""
    ended: list[Any] = [False]
    cuts: list[Any] = []
    with guarded(stream.path):
        for texts, block in _event_arrays(stream.path, stream.events_at, ended, cuts):
            if _unchecked(block):  # (what msgspec skips unchecked: the fallback reader's)
                return
            if texts:
                yield texts
    if ended[0]:
        stream.after = ended[1] if len(ended) > 1 else {}
        stream.cuts = cuts


class _Blocks:
    """A stream's events a block at a time, with their exact texts; stops, with `odd` set,
    where the fallback reader took over (dicts and re-encoded texts)."""

    def __init__(self, stream: TraceStream) -> None:
        self.stream = stream
        self.odd = False
        self.events = 0

    def __iter__(self) -> Iterator[tuple[list[Any], list[Any]]]:
        pairs = self.stream.raw_blocks()
        if BLOCK:
            flat = ((e, t) for items, texts in pairs for e, t in zip(items, texts))
            pairs = (
                ([e for e, _ in chunk], [t for _, t in chunk])
                for chunk in iter(lambda: list(itertools.islice(flat, BLOCK)), [])
            )
        for items, texts in pairs:
            if type(items[0]) is not MinimalEvent:
                self.odd = True
                return
            self.events += len(items)
            yield items, texts


def _kept_texts(plan: _Plan, keep: list[bool]) -> Iterator[Any]:
    """The second pass: the texts of the kept events, comma-separated, a block at a time."""
    stream, marks, lengths = plan.stream, plan.marks, plan.lengths
    if _stamp(stream.path) != plan.stamp:
        raise TraceFormatError(f"{stream.path}: changed while it was read")
    done = 0
    flags = bytes(keep)  # (for `prune_join`: a byte per mark)
    with guarded(stream.path):
        for view, count in stream.event_arrays():
            end = done + count
            if _JOIN is not None:
                joined = _JOIN(view, lengths, marks, done, count, flags)
                if joined is not None:
                    done = end
                    if joined:
                        yield joined
                    continue
            sizes = lengths[done:end]
            kept: list[Any]
            # each text's start, then the block's length and a comma
            starts = list(itertools.accumulate(map(_AND_COMMA, sizes), initial=0))
            if starts[-1] - 1 == len(view):  # `a,b,c`: a comma between two texts
                kept = [
                    view[at : at + n]
                    for at, n, mark in zip(starts, sizes, marks[done:end])
                    if keep[mark]
                ]
            else:
                texts = _TEXTS.decode(b"".join((b"[", view, b"]")))
                kept = [text for text, mark in zip(texts, marks[done:end]) if keep[mark]]
            done = end
            if kept:
                yield b",".join(kept)
    if done != len(marks) or _stamp(stream.path) != plan.stamp:
        raise TraceFormatError(f"{stream.path}: changed while it was read")


_AND_COMMA = (1).__add__
_TEXTS = msgspec.json.Decoder(list[msgspec.Raw])
