"""Loading a recording lean: only the event fields that diagrams, filters, prune and inspect read.

Contract:

- `load_slim(path, raw=False)` returns a `SlimDocument`: a `TraceDocument` whose events (and
  eventUpdates) are plain dicts holding only the structural fields — ids, thread and parent,
  function identity (`defined_class`, `method_id`, `path`, `lineno`, `static`, `labels`), HTTP
  request method/path/template/url, response status and content type, SQL text and database type,
  `elapsed`, the class and property names of the return value, the classes of exceptions.
  Parameters, receivers, messages, header values and captured values are never materialized, so
  a 60 MB recording costs about half the memory of a full load and loads in half the time.
- `minimal=True` keeps even less: identity, thread, parent, function name and location, and
  only the presence of request/SQL/message objects (what size-mode `prune` needs), in
  `MinimalEvent` structs that read like dicts (`get`, `in`) at a third of the memory.
- `messages=True` keeps each event's `message` as well (whole): what tells a message event
  from others (`tracetool.trace.events.kind`), for readers that show every call's kind.
- `structs=True` decodes the same fields into `SlimCall` / `SlimReturn` structs (tagged by
  `event`) that read like the dicts (`get`, `in`, `to_dict`) at a third of the memory; a
  recording whose events they cannot hold as the dicts would (an event that is neither a call
  nor a return, a field of an unexpected shape) is read as dicts instead.
- With `raw=True`, `SlimDocument.raw_events[i]` is the exact JSON text (`msgspec.Raw`) of
  `events[i]` (and `raw_updates` of each eventUpdate): writers such as `prune` copy kept events
  byte for byte and know each event's serialized size without re-encoding it.
- Unusual files (an event that is not an object, a request that is not an object…) fall back to
  the tolerant full loader `tracetool.trace.load`, whose errors name the file; `raw_events` is
  then derived by re-encoding. Metadata and classMap are always loaded whole, and so is any
  other top-level key (`pruneFilter`…) unless `extras=False`: finding those takes a second scan
  of the file (a tenth of a second on 60 MB), which readers that never look at them (diagrams)
  skip.
- What msgspec leaves unchecked (`tracetool.trace.checks.unchecked_defect`: UTF-8, numbers past
  a double) is checked before decoding; for a big ASCII text the accelerator's huge-number scan
  runs in a thread beside the decode instead (it releases the GIL, so on a second core the check
  costs no wall time), and a text it flags gets the same verdict before anything is returned.
- Numbers read as orjson reads them (`tracetool.trace.checks.orjson_ints`): an integer outside
  [-2**63, 2**64) is the float nearest to it, as in the whole-document loader and the index,
  where msgspec would keep the exact int (so a call's `method_id` names one function on every
  path); the byte pre-filter (`wide_int_risk`) runs beside the decode with the huge-number scan
  for a big text, and the values are passed over only when it flags the text. The raw texts
  stay the file's own.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Optional, TypedDict, TypeVar, Union

import msgspec
import orjson

from tracetool import accel
from tracetool.errors import TraceFormatError
from tracetool.trace.checks import (
    as_orjson_ints,
    bytes_defect,
    unchecked_defect,
    wide_int_risk,
)
from tracetool.trace.document import (
    TraceDocument,
    dumps,
    dumps_deep,
    from_data,
    gc_paused,
    load,
)
from tracetool.trace.reader import guarded, read_file


class _Request(TypedDict, total=False):
    request_method: Any
    path_info: Any
    normalized_path_info: Any
    url: Any


class _Response(TypedDict, total=False):
    status_code: Any
    status: Any
    mime_type: Any
    headers: Any


class _Sql(TypedDict, total=False):
    sql: Any
    database_type: Any
    normalized_sql: Any


def _with_class(name: str, fields: dict[str, Any]) -> Any:
    # `class` is a keyword, so these TypedDicts are built functionally.
    return TypedDict(name, {"class": Any, **fields}, total=False)  # type: ignore[operator]


_Property = _with_class("_Property", {"name": Any})
_Value = _with_class("_Value", {"properties": Optional[list[_Property]]})  # type: ignore[valid-type]
_Exception = _with_class("_Exception", {})


class _Event(TypedDict, total=False):
    id: Any
    event: Any
    thread_id: Any
    parent_id: Any
    defined_class: Any
    method_id: Any
    path: Any
    lineno: Any
    static: Any
    labels: Any
    http_server_request: Optional[_Request]
    http_client_request: Optional[_Request]
    sql_query: Optional[_Sql]
    http_server_response: Optional[_Response]
    http_client_response: Optional[_Response]
    elapsed: Any
    return_value: Optional[_Value]  # type: ignore[valid-type]
    exceptions: Optional[list[_Exception]]  # type: ignore[valid-type]


# The event fields of a slim document (`load_slim`), for readers that decode events themselves
SlimEvent = _Event


class _TreeEvent(_Event, total=False):
    """A slim event with its `message` (`messages=True`): `tracetool.trace.events.kind` tells
    a message event by it, so readers that show every call's kind (`query tree`) need it."""

    message: Any


class BindEvent(TypedDict, total=False):
    """The fields `tracetool.filters.bind` and the call tree read: a slim event without what
    returns carry (values, responses, exceptions, elapsed) nor labels."""

    id: Any
    event: Any
    thread_id: Any
    parent_id: Any
    defined_class: Any
    method_id: Any
    path: Any
    lineno: Any
    static: Any
    http_server_request: Optional[_Request]
    http_client_request: Optional[_Request]
    sql_query: Optional[_Sql]


class _Marker(TypedDict, total=False):
    """An object whose content is skipped: only its presence matters."""


class MinimalEvent(msgspec.Struct, gc=False):
    """An event reduced to its call structure; reads like a dict (`get`, `in`).

    A struct, not a dict: about a third of the memory, and invisible to the cyclic GC.
    """

    id: Any = None
    event: Any = None
    thread_id: Any = None
    parent_id: Any = None
    defined_class: Any = None
    method_id: Any = None
    path: Any = None
    lineno: Any = None
    static: Any = None
    http_server_request: Optional[_Marker] = None
    http_client_request: Optional[_Marker] = None
    sql_query: Optional[_Marker] = None
    message: Any = None
    raw: Any = None  # the event's exact JSON, attached when loaded with raw=True
    # `get(event, key)` without a Python-level call (`tracetool.trace.tree`): every key the
    # call tree reads is a field, so plain `getattr` gives None for an absent one.
    field_getter: ClassVar[Callable[[Any, str], Any]] = getattr

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, None)
        return default if value is None else value

    def __contains__(self, key: str) -> bool:
        return getattr(self, key, None) is not None

    def __getitem__(self, key: str) -> Any:
        value = getattr(self, key, None)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)


UNSET: Any = msgspec.UNSET  # what a `SlimCall` field the event does not have reads


class _SlimStruct(msgspec.Struct, gc=False):
    """A slim event (`SlimEvent`'s fields) as a struct, `SlimCall` or `SlimReturn` by its
    `event` (`load_slim(structs=True)`): a third of the memory of the dict and faster to
    decode, so every pass over the events pays less.

    The fields a dict's `in` tells apart (function identity, requests, SQL: `_VALUED`) read
    UNSET when missing, as an `EventHead`'s do, and `in`, `get` and `to_dict` read the event as
    its dict does; the others (ids, labels, what returns carry) are only ever read with `get`,
    so they read None when missing or null and a reader may take them with plain attribute
    access (`field_getter`: the call tree and the builder read no other field, and a call's
    fields only of calls, a return's only of returns).
    """

    event: ClassVar[str]  # the tag, as a class attribute
    field_getter: ClassVar[Callable[[Any, str], Any]] = getattr

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, UNSET)
        return default if value is UNSET else value

    def __contains__(self, key: str) -> bool:
        value = getattr(self, key, UNSET)
        return value is not UNSET and (value is not None or key in _VALUED)

    def to_dict(self) -> dict[str, Any]:
        """The fields present, as a dict (`EventHead.to_dict`)."""
        out = {"event": self.event}
        for key in self.__struct_fields__:
            value = getattr(self, key)
            if value is not UNSET and (value is not None or key in _VALUED):
                out[key] = value
        return out


class SlimCall(_SlimStruct, tag_field="event", tag="call", gc=False):
    event: ClassVar[str] = "call"
    id: Any = None
    thread_id: Any = None
    defined_class: Any = UNSET
    method_id: Any = UNSET
    path: Any = UNSET
    lineno: Any = UNSET
    static: Any = UNSET
    sql_query: Optional[_Sql] = UNSET
    http_server_request: Optional[_Request] = UNSET
    http_client_request: Optional[_Request] = UNSET
    labels: Any = None


class SlimReturn(_SlimStruct, tag_field="event", tag="return", gc=False):
    event: ClassVar[str] = "return"
    id: Any = None
    thread_id: Any = None
    parent_id: Any = None
    elapsed: Any = None
    return_value: Optional[_Value] = None  # type: ignore[valid-type]
    exceptions: Optional[list[_Exception]] = None  # type: ignore[valid-type]
    http_server_response: Optional[_Response] = None
    http_client_response: Optional[_Response] = None


SlimStruct = Union[SlimCall, SlimReturn]
# the fields whose null value `in` tells from a missing one
_VALUED = frozenset(
    k for k, v in zip(SlimCall.__struct_fields__, SlimCall.__struct_defaults__) if v is UNSET
)


_E = TypeVar("_E")


class _DocOf(TypedDict, Generic[_E], total=False):
    """A document whose events (and event updates) decode as `_E`: one shape per event kind."""

    version: Any
    metadata: Any
    classMap: Any
    events: list[_E]
    eventUpdates: Optional[dict[str, _E]]


_MinimalDoc = _DocOf[MinimalEvent]
_Doc = _DocOf[_Event]
_TreeDoc = _DocOf[_TreeEvent]
_StructDoc = _DocOf[Union[SlimCall, SlimReturn]]


class _RawDoc(TypedDict, total=False):
    events: list[msgspec.Raw]
    eventUpdates: Optional[dict[str, msgspec.Raw]]


_KNOWN = frozenset({"version", "metadata", "classMap", "events", "eventUpdates"})


@functools.cache
def _decoder(shape: Any) -> msgspec.json.Decoder[Any]:
    """The decoder of one document shape, made on first use: making one evaluates the shape's
    annotations (~0.5 ms each), which a command reading recordings another way need not pay."""
    return msgspec.json.Decoder(shape)


@dataclass
class SlimDocument(TraceDocument):
    """A TraceDocument with slim events; `raw_events` holds their exact JSON when asked for."""

    raw_events: list[Any] | None = None
    raw_updates: dict[str, Any] = field(default_factory=dict)
    slim: bool = True


def load_slim(
    path: Path | str,
    *,
    raw: bool = False,
    minimal: bool = False,
    extras: bool = True,
    structs: bool = False,
    messages: bool = False,
) -> SlimDocument:
    """Read a recording keeping only structural event fields (module doc)."""
    p = Path(path)
    data = read_file(p)
    assert data is not None
    with guarded(p):
        return parse_slim(
            data,
            str(p),
            raw=raw,
            minimal=minimal,
            path=p,
            extras=extras,
            structs=structs,
            messages=messages,
        )


def parse_slim(
    data: bytes,
    source: str = "<memory>",
    *,
    raw: bool = False,
    minimal: bool = False,
    path: Path | None = None,
    extras: bool = True,
    structs: bool = False,
    checked: bool = False,
    messages: bool = False,
) -> SlimDocument:
    beside: _Beside | None = None
    if checked:
        pass
    elif (
        _HUGE_NUMBER_RISK is not None
        and data.__class__ is bytes
        and len(data) >= _BESIDE_MIN
        and data.isascii()  # (UTF-8 then, and the huge-number scan is the whole check)
    ):
        beside = _Beside(data)
    else:
        _check(data, source)
    shape = _MinimalDoc if minimal else _StructDoc if structs else _TreeDoc if messages else _Doc
    decoder = _decoder(shape)
    try:
        with gc_paused():
            obj = decoder.decode(data)
            raws = _decoder(_RawDoc).decode(data) if raw else None
            # other top-level keys (pruneFilter, vendor extensions) are kept whole
            top = _decoder(dict[str, msgspec.Raw]).decode(data) if extras else {}
            for key, value in top.items():
                if key not in _KNOWN:
                    obj[key] = msgspec.json.decode(value)  # type: ignore[literal-required]
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        if beside is not None:
            beside.settle(source)
        if shape is _StructDoc:  # (an event that is not an object, a null `event`…) as dicts
            return parse_slim(data, source, raw=raw, path=path, extras=extras, checked=True)
        return _fallback(path, data, source, raw)  # the full loader decides, in the shared words
    if beside is not None:
        beside.settle(source)
    wide = beside.wide if beside is not None else wide_int_risk(data)
    if wide:
        as_orjson_ints(obj)  # (numbers as orjson reads them: tracetool.trace.checks)
    events = obj.get("events") if isinstance(obj, dict) else None
    if events is not None:
        # kept out of from_data's check that every event is a dict: structs (`minimal`), or
        # dicts the decoder checked (a pass over every event, a cache miss each)
        obj["events"] = []
    doc = from_data(obj, source)  # the same "is it a trace document" checks as a full load
    if events is not None:
        doc.data["events"] = events
    slim = SlimDocument(doc.data, path, doc.warnings)
    if raws is not None:
        slim.raw_events = raws.get("events") or []
        slim.raw_updates = raws.get("eventUpdates") or {}
        if minimal:
            for event, text in zip(slim.events, slim.raw_events):
                event.raw = text  # type: ignore[attr-defined]
            for key, update in (slim.data.get("eventUpdates") or {}).items():
                if key in slim.raw_updates:
                    update.raw = slim.raw_updates[key]
    return slim


def _check(data: bytes, source: str) -> None:
    defect = unchecked_defect(data)  # what msgspec skips unchecked (tracetool.trace.checks)
    if defect is not None:
        raise TraceFormatError(f"{source}: {defect}")


# `checks.maybe_huge_number` of a whole text in C, the GIL released (module doc), or None
_HUGE_NUMBER_RISK = accel.function("huge_number_risk")
_BESIDE_MIN = 4 << 20  # below this, starting a thread costs about what the check does


class _Beside:
    """The huge-number scan of an ASCII text, run in a thread while the caller decodes it."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.flagged: bool | None = None
        self.wide: bool | None = None  # `wide_int_risk` of the text
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="huge-number-check", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.flagged = bool(_HUGE_NUMBER_RISK(self.data))
            self.wide = bool(wide_int_risk(self.data))
        except BaseException as exc:  # (MemoryError…) re-raised in the caller by settle
            self.error = exc

    def settle(self, source: str) -> None:
        """Wait for the scan; raise what `unchecked_defect` would have found before decoding."""
        self.thread.join()
        if self.error is not None:
            raise self.error
        if self.flagged:
            defect = bytes_defect(self.data)  # the referee's verdict, as `unchecked_defect`
            if defect is not None:
                raise TraceFormatError(f"{source}: {defect}")


def _fallback(path: Path | None, data: bytes, source: str, raw: bool) -> SlimDocument:
    from tracetool.trace.document import parse

    full = load(path) if path is not None else parse(data, source)
    slim = SlimDocument(full.data, path, full.warnings, slim=False)
    if raw:
        slim.raw_events = [msgspec.Raw(_dumps(e)) for e in full.events]
        slim.raw_updates = {k: msgspec.Raw(_dumps(v)) for k, v in full.event_updates.items()}
    return slim


def _dumps(value: Any) -> bytes:
    """`dumps`, or for a value nested deeper than orjson writes, the iterative writer (what the
    full loader read, the slim loader keeps: tracetool.trace.checks)."""
    try:
        return dumps(value)
    except orjson.JSONEncodeError:
        return dumps_deep(value)


def event_size(slim: SlimDocument, index: int) -> int:
    """Serialized size in bytes of events[index] (exact when loaded with raw=True)."""
    if slim.raw_events is not None:
        return len(slim.raw_events[index])
    return len(dumps(slim.events[index]))


__all__ = [
    "BindEvent",
    "MinimalEvent",
    "SlimDocument",
    "SlimCall",
    "SlimEvent",
    "SlimReturn",
    "event_size",
    "load_slim",
    "parse_slim",
]
