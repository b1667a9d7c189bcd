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
  untouched values byte for byte, replaced values (`values[key]`, bytes or a JSON-able object)
  re-serialized, `None` dropping a key; new keys are appended.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson

from tracetool.errors import TraceFormatError
from tracetool.trace.normalize import balance, coerce_event, renumber

# Private key carried by a head through balance/renumber: the index of its raw event.
_INDEX = "\x00index"
_HEAD_KEYS = ("id", "event", "thread_id", "parent_id", "defined_class", "method_id", "path")
_DUMPS_OPTION = orjson.OPT_NON_STR_KEYS


class _Head(msgspec.Struct):
    """What normalization needs of an event; msgspec skips every other field unparsed."""

    id: Any = msgspec.UNSET
    event: Any = msgspec.UNSET
    thread_id: Any = msgspec.UNSET
    parent_id: Any = msgspec.UNSET
    defined_class: Any = msgspec.UNSET
    method_id: Any = msgspec.UNSET
    path: Any = msgspec.UNSET
    static: Any = msgspec.UNSET


_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_HEADS = msgspec.json.Decoder(list[_Head])
_HEAD = msgspec.json.Decoder(_Head)


def dumps(obj: Any, source: str = "<memory>") -> bytes:
    """Compact JSON; a value orjson cannot write (nested > 255 deep) is a TraceFormatError."""
    try:
        return orjson.dumps(obj, option=_DUMPS_OPTION)
    except orjson.JSONEncodeError as exc:
        raise TraceFormatError(f"{source}: cannot write a value back ({exc})") from None


def _kind_name(raw: msgspec.Raw) -> str:
    first = bytes(raw)[:1]
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
    raw_events: list[msgspec.Raw]
    metadata: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    _updates: dict[str, Any] | None = None
    _replaced: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def keys(self) -> list[str]:
        return list(self.top)

    def event_updates(self) -> dict[str, Any]:
        if self._updates is None:
            raw = self.top.get("eventUpdates")
            value = orjson.loads(memoryview(raw)) if raw is not None else None
            self._updates = value if isinstance(value, dict) else {}
        return self._updates

    def _parse(self, index: int) -> dict[str, Any] | None:
        try:
            event = orjson.loads(memoryview(self.raw_events[index]))
        except orjson.JSONDecodeError as exc:  # msgspec accepted it: only orjson's limits
            raise TraceFormatError(f"{self.source}: event {index + 1} unreadable ({exc})") from None
        return event if isinstance(event, dict) else None

    def events(self) -> Iterator[dict[str, Any]]:
        """Every object event as written (non-objects are dropped, with a warning)."""
        dropped = 0
        for index in range(len(self.raw_events)):
            event = self._parse(index)
            if event is None:
                dropped += 1
                continue
            yield event
        if dropped:
            self.warnings.append(f"{self.source}: dropped {dropped} non-object events")

    def _heads(self) -> list[dict[str, Any]]:
        if not self.raw_events:
            return []
        try:
            heads: list[_Head | None] = list(_HEADS.decode(self.top["events"]))
        except msgspec.ValidationError:  # a non-object event somewhere: decode one by one
            heads = []
            for raw in self.raw_events:
                try:
                    heads.append(_HEAD.decode(raw))
                except msgspec.ValidationError:
                    heads.append(None)
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
                stub = {k: update[k] for k in (*_HEAD_KEYS, "static") if k in update}
            else:
                stub = {}
                for key in _HEAD_KEYS:
                    value = getattr(head, key)
                    if value is not msgspec.UNSET:
                        stub[key] = value
                if head.static is not msgspec.UNSET:
                    stub["static"] = head.static
            stub[_INDEX] = index
            out.append(stub)
        if dropped:
            self.warnings.append(f"{self.source}: dropped {dropped} non-object events")
        return out

    def normalized_events(self, *, renumber_ids: bool = True) -> Iterator[dict[str, Any]]:
        """The events as `tracetool.trace.normalize` leaves them (module doc), one at a time."""
        heads, dropped = balance(self._heads())
        if dropped:
            self.warnings.append(f"dropped {dropped} return events without a matching call")
        if renumber_ids:
            renumber(heads)
        else:
            next_id = max((h["id"] for h in heads if isinstance(h.get("id"), int)), default=0)
            for head in heads:
                if head.get("id") is None:
                    next_id += 1
                    head["id"] = next_id
        for head in heads:
            index = head.pop(_INDEX, None)
            if index is None:  # a synthetic return made by balance()
                yield head
                continue
            event = self._replaced.pop(index, None)
            if event is None:
                event = self._parse(index)
            if event is None:  # cannot happen: heads exist only for object events
                continue
            event["id"] = head["id"]
            if "parent_id" in head:
                event["parent_id"] = head["parent_id"]
            coerce_event(event)
            yield event

    def assemble(self, values: dict[str, Any]) -> bytes:
        """The document's bytes with `values` replacing top-level values (module doc)."""
        parts: list[bytes] = [b"{"]
        first = True
        for key in (*self.top, *(k for k in values if k not in self.top)):
            if key in values:
                value = values[key]
                if value is None:
                    continue
            else:
                value = bytes(self.top[key])
            if not first:
                parts.append(b",")
            first = False
            parts.append(dumps(key, self.source))
            parts.append(b":")
            if isinstance(value, (bytes, bytearray)):
                parts.append(bytes(value))
            elif isinstance(value, _Chunks):
                parts.extend(value.parts)
            else:
                parts.append(dumps(value, self.source))
        parts.append(b"}")
        return b"".join(parts)


class _Chunks:
    """An already-serialized JSON array given as pieces (joined once, in `assemble`)."""

    def __init__(self, items: Iterable[bytes]) -> None:
        self.parts: list[bytes] = [b"["]
        for i, item in enumerate(items):
            if i:
                self.parts.append(b",")
            self.parts.append(item)
        self.parts.append(b"]")


def array(items: Iterable[bytes]) -> _Chunks:
    """Serialized JSON items as one array value for `RawDocument.assemble`."""
    return _Chunks(items)


def split(raw: bytes, source: str = "<memory>") -> RawDocument:
    """Split a document's bytes (module doc); raises TraceFormatError for a non-document."""
    if not raw.strip():
        raise TraceFormatError(f"{source}: empty file, not a trace document")
    try:
        top = _TOP.decode(raw)
    except msgspec.ValidationError:
        kind = "array" if raw.lstrip()[:1] == b"[" else "scalar"
        raise TraceFormatError(
            f"{source}: not a trace document (top level is a {kind}, not an object)"
        ) from None
    except msgspec.DecodeError as exc:
        raise TraceFormatError(f"{source}: not valid JSON ({exc})") from None
    if not any(key in top for key in ("events", "classMap", "metadata")):
        raise TraceFormatError(f"{source}: not a trace document (no events, classMap or metadata)")
    for key, expected in (("events", "array"), ("classMap", "array"), ("metadata", "object")):
        value = top.get(key)
        if value is not None and _kind_name(value) not in (expected, "null"):
            raise TraceFormatError(
                f"{source}: not a trace document ({key} is a {_kind_name(value)}, "
                f"expected {'an array' if expected == 'array' else 'an object'})"
            )
    events_raw = top.get("events")
    raw_events: list[msgspec.Raw] = []
    if events_raw is not None and _kind_name(events_raw) == "array":
        raw_events = list(_RAW_LIST.decode(events_raw))
    md_raw = top.get("metadata")
    metadata = orjson.loads(memoryview(md_raw)) if md_raw is not None else None
    return RawDocument(
        source=source,
        size=len(raw),
        top=top,
        raw_events=raw_events,
        metadata=metadata if isinstance(metadata, dict) else {},
    )
