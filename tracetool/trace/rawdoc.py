"""Event-at-a-time rewriting of a trace document's bytes, for recordings of any size.

A parsed 50 MB recording takes ~7x its size in Python objects, so `trim` and `sanitize` never
hold the parsed document: msgspec splits the bytes into the top-level values and the raw bytes of
each event (zero-copy, no Python objects per field); each event is then parsed, rewritten,
re-serialized and dropped. Peak memory is about the input bytes, the output bytes and, when
normalizing, one small dict per event.

Contract:
- `split(raw, source)` checks the document as `tracetool.trace.from_data` does (same one-line
  `TraceFormatError` messages naming the file) and returns a `RawDocument`.
- `RawDocument.normalized_events()` yields the events exactly as `tracetool.trace.normalize`
  would leave them (event updates applied, legacy shapes coerced, unreturned calls balanced with
  synthetic returns, ids renumbered 1..N) — it runs the core's `balance` / `renumber` on
  per-event heads (id, event, thread, parent and the signature fields) and applies the result
  while each full event is parsed. `tests/transform/test_stream.py` proves the equivalence on the
  shared corpus.
- `RawDocument.events()` yields the events as they are (no normalization).
- `RawDocument.assemble(values)` writes the document back: top-level keys in their original order,
  untouched values byte for byte, replaced values (`values[key]`: bytes, `Chunks` of bytes, or a
  JSON-able object) re-serialized, `None` dropping a key; new keys are appended. `parts(values)`
  gives the same bytes as pieces, made as they are asked for (to hash a document without joining
  it, or to write one whose events come from a file: `tracetool.transform.streamed`).
- `Renumbering` is normalization of balanced events one at a time (the fast path of
  `normalized_events`, and `sanitize`'s for a recording read a block at a time).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson

from tracetool.errors import TraceFormatError
from tracetool.trace.checks import (
    bytes_defect,
    clean_structure,
    cleaned_warning,
    document_defect,
    kind_of_raw,
    maybe_huge_number,
    recursion_room,
    utf8_defect,
)
from tracetool.trace.normalize import balance, coerce_event, renumber

# Private key carried by a head through balance/renumber: the index of its raw event.
_INDEX = "\x00index"
_SIGNATURE_KEYS = ("defined_class", "method_id", "path", "static")
_HEAD_KEYS = ("id", "event", "thread_id", "parent_id", *_SIGNATURE_KEYS)
_DUMPS_OPTION = orjson.OPT_NON_STR_KEYS
_CONTAINERS = (list, dict)


class _Head(msgspec.Struct):
    """What normalization needs of an event; msgspec skips every other field unparsed.

    Missing id / event / thread_id read as None, which is how balance() reads them (.get);
    a missing parent_id must stay distinguishable from null.
    """

    id: Any = None
    event: Any = None
    thread_id: Any = None
    parent_id: Any = msgspec.UNSET


class _Signature(msgspec.Struct):
    """What matches a return without parent_id to its call (needed only then)."""

    defined_class: Any = msgspec.UNSET
    method_id: Any = msgspec.UNSET
    path: Any = msgspec.UNSET
    static: Any = msgspec.UNSET


# Bytes of events parsed per orjson call (see RawDocument._parsed): a parsed batch takes ~10x its
# size, so a batch is at most 1 MB and at most 1/16 of the document (32 KB at least).
_BATCH_BYTES = 1 << 20
_MIN_BATCH_BYTES = 32 << 10
_ARRAY_START = re.compile(rb"\s*\[")
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_HEADS = msgspec.json.Decoder(list[_Head])
_HEAD = msgspec.json.Decoder(_Head)
_SIGNATURES = msgspec.json.Decoder(list[_Signature])
_SIGNATURE = msgspec.json.Decoder(_Signature)


def dumps(obj: Any, source: str = "<memory>") -> bytes:
    """Compact JSON; a value orjson cannot write (nested > 255 deep) is a TraceFormatError."""
    try:
        return orjson.dumps(obj, option=_DUMPS_OPTION)
    except orjson.JSONEncodeError as exc:
        raise TraceFormatError(f"{source}: cannot write a value back ({exc})") from None


def _kind_name(raw: msgspec.Raw) -> str:
    first = memoryview(raw)[:1].tobytes()  # msgspec strips surrounding whitespace; no copy
    return {
        b"{": "object",
        b"[": "array",
        b'"': "str",
        b"t": "bool",
        b"f": "bool",
        b"n": "null",
    }.get(first, "number")


@dataclass
class RawDocument:
    """A trace document as top-level raw values plus one raw slice per event."""

    source: str
    size: int
    top: dict[str, msgspec.Raw]
    metadata: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    _updates: dict[str, Any] | None = None
    _replaced: dict[int, dict[str, Any]] = field(default_factory=dict)
    _raw_events: list[msgspec.Raw] | None = None
    raw: bytes = b""  # the whole document, for the shared verdict on a defect (trace.checks)
    _cleaned: set[int] = field(default_factory=set)

    @property
    def events_array(self) -> msgspec.Raw | None:
        """The raw events array (None when the document has none)."""
        raw = self.top.get("events")
        return raw if raw is not None and _kind_name(raw) == "array" else None

    @property
    def raw_events(self) -> list[msgspec.Raw]:
        """One raw slice per event (decoded on first use: small documents never need it)."""
        if self._raw_events is None:
            array = self.events_array
            self._raw_events = [] if array is None else list(self._deep(_RAW_LIST.decode, array))
        return self._raw_events

    @property
    def keys(self) -> list[str]:
        return list(self.top)

    def event_updates(self) -> dict[str, Any]:
        if self._updates is None:
            raw = self.top.get("eventUpdates")
            value = orjson.loads(memoryview(raw)) if raw is not None else None
            self._updates = value if isinstance(value, dict) else {}
        return self._updates

    def _parsed(self) -> Iterator[Any]:
        """Every raw event parsed, in order (a non-object as whatever it is).

        A compact events array (one "," between events, no whitespace: what orjson, our agent
        and most agents write) is parsed ~1 MB of events per orjson call — about twice as fast
        as one call per event for small events, with memory still bounded by the batch. Other
        layouts are parsed event by event.
        """
        events = self.events_array
        if events is None:
            return
        limit = min(_BATCH_BYTES, max(_MIN_BATCH_BYTES, self.size // 16))
        if len(events) <= limit:  # the whole array is one batch
            try:
                batch = orjson.loads(memoryview(events))
            except orjson.JSONDecodeError as exc:
                raise self._defect(f"events unreadable ({exc})") from None
            yield from batch
            return
        raws = self.raw_events
        lengths = [len(raw) for raw in raws]
        array = memoryview(events)
        if len(array) != 2 + sum(lengths) + len(lengths) - 1:
            for index in range(len(raws)):
                try:
                    yield orjson.loads(memoryview(raws[index]))
                except orjson.JSONDecodeError as exc:
                    raise self._defect(f"event {index + 1} unreadable ({exc})") from None
            return
        start = 1  # after "["
        first = 0
        while first < len(lengths):
            last, size = first, 0
            while last < len(lengths) and (size < limit or last == first):
                size += lengths[last] + 1
                last += 1
            chunk = b"[" + array[start : start + size - 1].tobytes() + b"]"
            try:
                batch = orjson.loads(chunk)
            except orjson.JSONDecodeError as exc:
                raise self._defect(f"events unreadable ({exc})") from None
            del chunk
            yield from batch
            del batch
            start += size
            first = last

    def events(self) -> Iterator[tuple[msgspec.Raw, dict[str, Any]]]:
        """(raw bytes, parsed event) of every object event as written; non-objects are dropped
        with a warning."""
        dropped = 0
        for raw, event in zip(self.raw_events, self._parsed()):
            if not isinstance(event, dict):
                dropped += 1
                continue
            yield raw, event
        if dropped:
            self.warnings.append(f"{self.source}: dropped {dropped} non-object events")

    def _defect(self, fallback: str) -> TraceFormatError:
        """The error for a defect met in the events: the shared verdict on the whole document
        (`tracetool.trace.checks.bytes_defect`), so every read path words it the same."""
        return TraceFormatError(f"{self.source}: {bytes_defect(self.raw) or fallback}")

    def _deep(self, decode: Callable[[Any], Any], raw: Any) -> Any:
        """`decode(raw)` by msgspec, which counts Python's recursion: a document within
        `MAX_DEPTH` levels is decoded with room enough, a deeper one refused in shared words."""
        try:
            return decode(raw)
        except RecursionError:
            defect = bytes_defect(self.raw)
            if defect is not None:
                raise TraceFormatError(f"{self.source}: {defect}") from None
            with recursion_room():
                return decode(raw)

    def _decode_heads(self, decoder: Any, single: Any) -> list[Any]:
        """One struct per raw event (None for a non-object event), decoded in C."""
        try:
            return list(self._deep(decoder.decode, self.top["events"]))
        except msgspec.ValidationError:  # a non-object event somewhere: decode one by one
            heads: list[Any] = []
            for raw in self.raw_events:
                try:
                    heads.append(self._deep(single.decode, raw))
                except msgspec.ValidationError:
                    heads.append(None)
            return heads

    def _balanced(self, heads: list[Any]) -> bool:
        """Whether core `balance` would change nothing and `renumber` only renumbers in order.

        True when: no event updates, no non-object events, integer call ids used once each,
        and every return closes the innermost open call of its thread by `parent_id`, with
        none left open. Most recordings (ours, AppMap's agents) are written like that; for
        them normalization is just "id = position, parent_id = position of the matched call",
        which `normalized_events` applies while streaming, without a head per event. The
        corpus test compares both paths with `tracetool.trace.normalize`.
        """
        if self.event_updates():
            return False
        stacks: dict[Any, list[Any]] = {}
        calls: set[int] = set()
        for head in heads:
            if head is None or head.thread_id.__class__ in _CONTAINERS:
                return False
            if head.event == "call":
                if head.id.__class__ is not int or head.id in calls:
                    return False
                calls.add(head.id)
                stack = stacks.get(head.thread_id)
                if stack is None:
                    stack = stacks[head.thread_id] = []
                stack.append(head.id)
            elif head.event == "return":
                stack = stacks.get(head.thread_id)
                if not stack or head.parent_id != stack[-1] or head.parent_id.__class__ is not int:
                    return False
                stack.pop()
        return not any(stacks.values())

    def _heads(self, heads: list[Any]) -> list[dict[str, Any]]:
        """What balance/renumber read of each event, as small dicts (+ the raw index)."""
        # The signature fields matter only to match returns that lack parent_id.
        signatures: list[Any] = []
        if any(
            h is not None and h.parent_id is msgspec.UNSET and h.event == "return" for h in heads
        ):
            signatures = self._decode_heads(_SIGNATURES, _SIGNATURE)
        updates = self.event_updates()
        out: list[dict[str, Any]] = []
        dropped = 0
        for index, head in enumerate(heads):
            if head is None:
                dropped += 1
                continue
            update = updates.get(str(head.id)) if updates else None
            if isinstance(update, dict):  # an update replaces the whole event (AppMap's rule)
                self._replaced[index] = update
                stub = {k: update[k] for k in _HEAD_KEYS if k in update}
            else:
                stub = {"id": head.id, "event": head.event, "thread_id": head.thread_id}
                if head.parent_id is not msgspec.UNSET:
                    stub["parent_id"] = head.parent_id
                if signatures:
                    sig = signatures[index]
                    for key in _SIGNATURE_KEYS:
                        value = getattr(sig, key)
                        if value is not msgspec.UNSET:
                            stub[key] = value
            if clean_structure(stub):  # an id that is an array... (tracetool.trace.checks)
                self._cleaned.add(index)
            stub[_INDEX] = index
            out.append(stub)
        if dropped:
            self.warnings.append(f"{self.source}: dropped {dropped} non-object events")
        if self._cleaned:
            self.warnings.append(cleaned_warning(len(self._cleaned), self.source))
        return out

    def _plan(self) -> tuple[list[Any], list[Any]] | None:
        """Normalized order: per output position a raw index or a synthetic return, and the
        parent id each return gets (None: leave the event's own); None when the events are
        balanced (see `_balanced`)."""
        if self.events_array is None:
            return [], []
        decoded = self._decode_heads(_HEADS, _HEAD)
        if self._balanced(decoded):
            return None
        heads, dropped = balance(self._heads(decoded), coerce=False)
        del decoded
        if dropped:
            self.warnings.append(f"dropped {dropped} return events without a matching call")
        renumber(heads)
        order: list[Any] = []
        parents: list[Any] = []
        for head in heads:
            index = head.pop(_INDEX, None)
            order.append(head if index is None else index)
            is_return = head.get("event") == "return" and "parent_id" in head
            parents.append(head["parent_id"] if is_return else None)
        return order, parents

    def normalized_events(self) -> Iterator[dict[str, Any]]:
        """The events as `tracetool.trace.normalize` leaves them (module doc), one at a time."""
        plan = self._plan()  # the heads are freed here: only the plan is kept
        if plan is None:  # balanced: ids become positions, parents their call's position
            renumbering = Renumbering(rising=False)  # (_balanced() checked the ids are unique)
            apply = renumbering.apply
            for event in self._parsed():  # _balanced() saw only objects
                apply(event)
                yield event
            return
        order, parents = plan
        parsed = enumerate(self._parsed())  # plan indices only increase: read them in order
        for position, item in enumerate(order):
            if not isinstance(item, int):  # a synthetic return made by balance()
                yield item
                continue
            index, event = next(parsed)
            while index != item:  # skip returns that balance() dropped
                index, event = next(parsed)
            replaced = self._replaced.pop(item, None)
            if replaced is not None:
                event = replaced
            if item in self._cleaned:
                clean_structure(event)
            event["id"] = position + 1
            parent = parents[position]
            if parent is not None:
                event["parent_id"] = parent
            coerce_event(event)
            yield event

    def assemble(self, values: dict[str, Any]) -> bytes:
        """The document's bytes with `values` replacing top-level values (module doc)."""
        return b"".join(self.parts(values))

    def parts(self, values: dict[str, Any]) -> Iterator[Any]:
        """The pieces `assemble` joins (bytes-like), made as they are asked for: to hash a
        document without joining it, or to write one whose events come from a file."""
        yield b"{"
        first = True
        for key in (*self.top, *(k for k in values if k not in self.top)):
            if key in values:
                value = values[key]
                if value is None:
                    continue
            else:
                value = bytes(self.top[key])
            if not first:
                yield b","
            first = False
            yield dumps(key, self.source)
            yield b":"
            if isinstance(value, (bytes, bytearray)):
                yield bytes(value)
            elif isinstance(value, Chunks):
                yield from value.parts
            else:
                yield dumps(value, self.source)
        yield b"}"


class Renumbering:
    """Normalization of balanced events (`RawDocument._balanced`) one at a time: ids become
    positions, a return's `parent_id` its call's position, legacy shapes are coerced.

    `apply(event)` returns False, leaving the event as it was, at the first event that breaks
    `_balanced`'s rule; with `rising`, call ids must also rise (unique without a set of them
    all: what a streamed read checks). `open()`: whether a call was left without its return
    (the events were then not balanced either)."""

    def __init__(self, rising: bool = True) -> None:
        self.rising = rising
        self.stacks: dict[Any, list[tuple[Any, int]]] = {}
        self.position = 0
        self.last: Any = None

    def apply(self, event: dict[str, Any]) -> bool:
        thread = event.get("thread_id")
        if thread.__class__ in _CONTAINERS:
            return False
        kind = event.get("event")
        position = self.position + 1
        if kind == "call":
            call_id = event.get("id")
            if call_id.__class__ is not int:
                return False
            if self.rising:
                if self.last is not None and call_id <= self.last:
                    return False
                self.last = call_id
            stack = self.stacks.get(thread)
            if stack is None:
                stack = self.stacks[thread] = []
            stack.append((call_id, position))
        elif kind == "return":
            stack = self.stacks.get(thread)
            parent = event.get("parent_id")
            if not stack or parent.__class__ is not int or parent != stack[-1][0]:
                return False
            event["parent_id"] = stack.pop()[1]
        self.position = position
        event["id"] = position
        coerce_event(event)
        return True

    def open(self) -> bool:
        return any(self.stacks.values())


class Chunks:
    """An already-serialized JSON value given as pieces (an iterable: `assemble` joins them,
    a streamed write reads them as it writes)."""

    def __init__(self, parts: Iterable[Any]) -> None:
        self.parts = parts


class ArrayWriter:
    """Builds a JSON array from events (dicts, serialized in batches) and raw slices.

    orjson's per-call overhead is paid once per batch rather than once per event; untouched
    raw events are copied as they are.
    """

    BATCH = 1024

    def __init__(self, source: str = "<memory>") -> None:
        self.source = source
        self._parts: list[Any] = []
        self._batch: list[Any] = []

    def _flush(self) -> None:
        if self._batch:
            self._parts.append(dumps(self._batch, self.source)[1:-1])
            self._batch = []

    def add(self, event: Any) -> None:
        self._batch.append(event)
        if len(self._batch) >= self.BATCH:
            self._flush()

    def add_all(self, events: Iterator[Any], each: Callable[[Any], Any] | None = None) -> None:
        """`add` for each event, after `each(event)` if given (one call per batch, not per
        event)."""
        self._flush()
        batch = self._batch
        size = self.BATCH
        for event in events:
            if each is not None:
                each(event)
            batch.append(event)
            if len(batch) >= size:
                self._parts.append(dumps(batch, self.source)[1:-1])
                batch.clear()
        self._flush()

    def add_raw(self, raw: msgspec.Raw | bytes) -> None:
        self._flush()
        self._parts.append(raw)

    def done(self) -> Chunks:
        """The array for `RawDocument.assemble`."""
        return Chunks([b"[", *self.pieces(), b"]"])

    def pieces(self) -> list[Any]:
        """The items added since the last call, with the commas between them (no brackets):
        a block of a streamed array."""
        self._flush()
        parts: list[Any] = []
        for part in self._parts:
            if parts:
                parts.append(b",")
            parts.append(part)
        self._parts = []
        return parts


def split(raw: bytes, source: str = "<memory>") -> RawDocument:
    """Split a document's bytes (module doc); raises TraceFormatError for a non-document."""
    if not raw or raw.isspace():  # (strip() would copy a 50 MB file)
        raise TraceFormatError(f"{source}: empty file, not a trace document")
    defect = utf8_defect(raw)  # msgspec leaves skipped strings unchecked (trace.checks)
    if defect is not None:
        raise TraceFormatError(f"{source}: {defect}")
    try:
        try:
            top = _TOP.decode(raw)
        except RecursionError:
            if bytes_defect(raw) is not None:
                raise
            with recursion_room():  # within MAX_DEPTH: decode with room enough
                top = _TOP.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
        defect = bytes_defect(raw) or document_defect(None, kind_of_raw(raw)) or ""
        syntax = not isinstance(exc, (msgspec.ValidationError, RecursionError))
        if syntax and defect.startswith("not a trace"):
            defect = f"not valid JSON ({exc})"  # msgspec refused what orjson reads
        raise TraceFormatError(f"{source}: {defect}") from None
    defect = document_defect({key: kind_of_raw(value) for key, value in top.items()})
    if defect is not None:
        raise TraceFormatError(f"{source}: {bytes_defect(raw) or defect}")
    for key, value in top.items():  # msgspec skipped them unchecked; events go through orjson
        if key != "events" and maybe_huge_number(value):
            defect = bytes_defect(raw)
            if defect is not None:
                raise TraceFormatError(f"{source}: {defect}")
            break
    md_raw = top.get("metadata")
    metadata = orjson.loads(memoryview(md_raw)) if md_raw is not None else None
    return RawDocument(
        source=source,
        size=len(raw),
        top=top,
        metadata=metadata if isinstance(metadata, dict) else {},
        raw=raw,
    )
