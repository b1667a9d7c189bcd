"""Reading a recording event by event, with memory that does not grow with the file.

`open_stream(path)` returns a `TraceStream`: `.header` holds every top-level key except `events`
(metadata, classMap, version, ...; `eventUpdates` is taken out and applied), `.events()` yields
the events once, in document order, each already replaced by its `eventUpdates` entry.

Two readers, one contract:
* files up to `STREAM_THRESHOLD` bytes are parsed whole with orjson — for the typical recording
  (tens of kB to a few MB) that is several times faster than any incremental parser;
* bigger files are read a few MB at a time (`_event_arrays`): each block is cut after the last
  complete event it holds and parsed as one JSON array, so a 1 GB recording costs a few MB of
  memory and parses at orjson / msgspec speed. A cut is only taken once msgspec has checked that
  the bytes before it are a sequence of whole JSON values (a `}` inside a string or a nested
  object leaves an unclosed string or bracket, which never checks), so the events are exactly
  the array's items. Anything the cutter cannot read plainly (an item that is not an object, a
  malformed block) is read again by ijson's C backend (`events.item`) from the first event not
  yet yielded, so errors and odd files read as before. The header keys are found first by a byte
  scan for the key (`"classMap":` preceded by `{` or `,`; a quote inside a JSON string is always
  escaped, so the pattern can only be a real key), the top-level one by its depth, and parsed
  from there.

Both readers apply the one set of reading rules (`tracetool.trace.checks`), so a malformed file
gets the verdict and the one-line message of the whole-file reader: the block reader runs only
when orjson reads the document up to the events (`_plain_start`) and after them (`_plain_end`),
and hands a block over when its parser fails or, for msgspec, which skips unchecked, when the
block's UTF-8 or numbers are suspect; the ijson reader scans depth first (`_check_depth`) and
asks the whole-file reader (`_referee`) for its verdict on whatever ijson fails on.

`open_stream(path, heads=True)` yields `EventHead` structs instead of dicts: only the fields
that identify and pair a call (ids, thread, parent, function identity, SQL / HTTP request objects,
`elapsed_instrumentation`), decoded by msgspec without building the rest (parameters, receivers,
return values) — about three times faster than dicts, for readers that need no more (`stats`).
An `EventHead` reads like a dict for its fields (`get`, `in`: a missing field is absent, a null
one present); `raw=True` adds each event's exact JSON text (`TraceStream.raw_head_blocks()`). The
header of a heads stream holds `version`, `metadata`, `classMap` only.

Every defect surfaces as one `TraceFormatError` line naming the file. Stdlib, orjson, msgspec and
(lazily) ijson only; Python 3.9 syntax.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Optional, TypedDict

import msgspec
import orjson

from tracetool.errors import NotFoundError, TraceFormatError, TraceToolError
from tracetool.trace.checks import (
    DEPTH_MESSAGE,
    MAX_DEPTH,
    DepthScan,
    bytes_defect,
    document_defect,
    kind,
    kind_of_raw,
    lenient_json,
    orjson_ints,
    recursion_room,
    unchecked_defect,
)
from tracetool.trace.document import from_data, gc_paused
from tracetool.trace.extract import WS as _WS
from tracetool.trace.extract import is_recording, key_value_offset
from tracetool.trace.reader import describe, guarded, open_regular, read_file

STREAM_THRESHOLD = 8 * 1024 * 1024
HEADER_KEYS = ("version", "metadata", "classMap", "eventUpdates")
_CHUNK = 4 * 1024 * 1024
_REFEREE_LIMIT = 256 * 1024 * 1024
_UNSET: Any = msgspec.UNSET
UNSET: Any = _UNSET  # what an `EventHead` field reads when the event does not have it


class EventHead(msgspec.Struct, gc=False):
    """The identifying fields of an event (module doc); reads like a dict for them.

    `id`, `event`, `thread_id`, `parent_id` and `elapsed_instrumentation` read None when missing
    (as `.get` reads them, whatever its default); the others are UNSET when missing, so `in` tells a missing key from
    a null value as for a dict. Other keys (`message`, `parameters`...) read as absent.
    """

    id: Any = None
    event: Any = None
    thread_id: Any = None
    parent_id: Any = None
    defined_class: Any = _UNSET
    method_id: Any = _UNSET
    path: Any = _UNSET
    lineno: Any = _UNSET
    static: Any = _UNSET
    sql_query: Any = _UNSET
    http_server_request: Any = _UNSET
    http_client_request: Any = _UNSET
    elapsed_instrumentation: Any = None

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, _UNSET)
        return default if value is _UNSET else value

    def __contains__(self, key: str) -> bool:
        return getattr(self, key, _UNSET) is not _UNSET

    def to_dict(self) -> dict[str, Any]:
        """The fields present, as a dict (the event without the fields a head leaves out)."""
        out = {}
        for key in self.__struct_fields__:
            value = getattr(self, key)
            if value is not _UNSET and (value is not None or key in _VALUED):
                out[key] = value
        return out


# fields whose null value is kept by `to_dict` (the others read None when missing)
_VALUED = frozenset(
    k for k, v in zip(EventHead.__struct_fields__, EventHead.__struct_defaults__) if v is _UNSET
)


class _HeadDoc(TypedDict, total=False):
    version: Any
    metadata: Any
    classMap: Any
    events: list[EventHead]
    eventUpdates: Any


class _RawDoc(TypedDict, total=False):
    events: list[msgspec.Raw]


_RAW_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])
_HEAD_ITEMS = msgspec.json.Decoder(list[EventHead])
_HEAD_DOC = msgspec.json.Decoder(_HeadDoc)
_RAW_DOC = msgspec.json.Decoder(_RawDoc)


class TraceStream:
    """One recording opened for a single pass over its events (see module doc)."""

    def __init__(self, path: Path, size: int, header: dict[str, Any], streamed: bool) -> None:
        self.path = path
        self.size = size
        self.header = header
        self.streamed = streamed
        self.heads = False
        self.fields: Any = None  # a TypedDict: streamed events hold only its fields
        self.updates: dict[str, Any] = {}
        self.events_at = -1  # byte offset of the events value (streamed)
        self._events: Optional[list[Any]] = None
        self._raws: Optional[list[Any]] = None
        self._bytes: Optional[bytes] = None
        # the top-level members after the events array, once a streamed pass read it plainly
        self.after: Optional[dict[str, Any]] = None
        # where the block reader cut the events array (`_event_arrays`), once a pass read it all
        # plainly: another pass (`again`) cuts there without looking for cuts or checking again
        self.cuts: Optional[list[Optional[tuple[int, int]]]] = None
        self._replay: Optional[list[Optional[tuple[int, int]]]] = None
        # opened `events_first`: the top-level keys that a member after the events array would
        # have to be absent from for the header to hold (`settled`); empty otherwise
        self.provisional: tuple[str, ...] = ()
        updates = header.pop("eventUpdates", None)
        if isinstance(updates, dict):
            self.updates = updates

    @property
    def settled(self) -> bool:
        """Whether the header and the events read are the recording's: always, unless opened
        `events_first` (`open_stream`), when the members after the events array a pass read to
        its plain end (or, where the fallback reader read it, the key scan) hold no header key
        nor another `events` member."""
        if not self.provisional:
            return True
        after = self.after
        if after is not None:
            return not any(key in after for key in self.provisional)
        # (the fallback reader took over: the key scan the usual open makes decides, rather
        # than a second pass by that reader)
        found = _locate_keys(self.path, self.provisional)
        return all(
            at <= self.events_at if key == "events" else at < self.events_at
            for key in self.provisional
            for at in _top_level(self.path, found[key])
        )

    @property
    def class_map(self) -> list[Any]:
        cm = self.header.get("classMap")
        return cm if isinstance(cm, list) else []

    @property
    def metadata(self) -> dict[str, Any]:
        md = self.header.get("metadata")
        return md if isinstance(md, dict) else {}

    def events(self) -> Iterator[Any]:
        """The events, once, with `eventUpdates` applied; non-object items are skipped.

        Dicts, or `EventHead`s for a stream opened with `heads=True`."""
        if not self.streamed:
            # from_data already dropped non-object events
            events, self._events = self._events or [], None
            return self._updated(events) if self.updates else iter(events)
        streamed = (e for block in self._blocks(False) for e in block[0])
        return self._updated(streamed) if self.updates else streamed

    def event_blocks(self) -> Iterator[list[Any]]:
        """`events()` in lists, as the block reader reads them (a few MB of the file each)."""
        if not self.streamed:
            events = list(self.events())
            if events:
                yield events
            return
        for items, _ in self._blocks(False):
            if self.updates:
                items = list(self._updated(items))
            if items:
                yield items

    def raw_blocks(self) -> Iterator[tuple[list[Any], list[Any]]]:
        """(events, the exact JSON text of each) a block at a time, for a streamed recording
        opened with `fields` or `heads` and `event_updates=False`; a block read by the fallback
        reader (ijson) holds dicts and their re-encoded text."""
        assert self.streamed and not self.updates
        for items, texts in self._blocks(True):
            if items:
                yield items, texts or []

    def event_arrays(self) -> Iterator[tuple[Any, int]]:
        """(a block of events: a view of their texts and the commas between them, its items)
        of a streamed recording whose events array a pass read all plainly, cut where that
        pass cut it (`cuts`); a view is valid until the next block. Nothing is decoded or
        checked, so the caller that needs its items' texts has the first pass's word for them;
        a `TraceFormatError` if the file no longer has those cuts (it changed)."""
        assert self.streamed and self.events_at >= 0 and self.cuts is not None
        ended: list[Any] = [False]
        cuts: list[Optional[tuple[int, int]]] = []
        with guarded(self.path):
            arrays = _event_arrays(
                self.path, self.events_at, ended, cuts, self.cuts, want_texts=False, bare=True
            )
            for _, block in arrays:
                yield block, cuts[-1][1]  # type: ignore[index]
        if not ended[0]:
            raise TraceFormatError(f"{self.path}: changed while it was read")

    def before(self) -> Optional[dict[str, Any]]:
        """The top-level members before the events array of a streamed recording read plainly
        (all of them but `events`, in order, with `after`), or None."""
        if self.events_at < 0 or self.events_at > _TAIL_LIMIT:
            return None
        with open_regular(self.path) as handle:
            head = handle.read(self.events_at)
        try:
            found = orjson.loads(head + b"[]}")
        except orjson.JSONDecodeError:
            return None
        if not isinstance(found, dict):
            return None
        found.pop("events", None)
        return found

    def again(self, fields: Any = None) -> TraceStream:
        """Another pass over a streamed recording's events (decoded with `fields`), without
        looking up its top-level keys again."""
        assert self.streamed, "only a streamed recording is read twice"
        other = TraceStream(self.path, self.size, dict(self.header), streamed=True)
        other.events_at = self.events_at
        other.updates = self.updates
        other.heads = self.heads and fields is None
        other.fields = fields
        other._replay = self.cuts
        return other

    def raw_head_blocks(self) -> Iterator[tuple[list[EventHead], list[Any]]]:
        """(heads, the exact JSON text of each) of a `heads=True` stream, a block at a time (a
        few MB of the file each, or one block for a recording read whole); the text of an event
        replaced by `eventUpdates` is its update's compact JSON."""
        if not self.streamed:
            heads, self._events = self._events or [], None
            if self._bytes is not None:
                self._raws = _RAW_DOC.decode(self._bytes).get("events") or []
                self._bytes = None
            raws, self._raws = self._raws or [], None
            blocks: Iterable[tuple[list[Any], Any]] = [(heads, raws)] if heads else []
        else:
            blocks = self._blocks(True)
        for heads, raws in blocks:
            raws = raws or []
            if len(heads) != len(raws):  # (what zip pairs)
                heads, raws = heads[: len(raws)], raws[: len(heads)]
            if self.updates:
                pairs = list(self._raw_updated(zip(heads, raws)))
                heads, raws = [h for h, _ in pairs], [t for _, t in pairs]
            if heads:
                yield heads, raws

    def _updated(self, events: Iterable[Any]) -> Iterator[Any]:
        updates = self.updates
        for event in events:
            update = updates.get(str(event.get("id")))
            if isinstance(update, dict):
                yield _head(update) if self.heads else update
            else:
                yield event

    def _raw_updated(self, pairs: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
        updates = self.updates
        for head, text in pairs:
            update = updates.get(str(head.id))
            if isinstance(update, dict):
                yield _head(update), _text(update)
            else:
                yield head, text

    def _blocks(self, raw: bool) -> Iterator[tuple[list[Any], Optional[list[Any]]]]:
        """The events in blocks: (items, their JSON texts when `raw`), non-objects dropped."""
        done = 0  # items yielded so far (where ijson takes over)
        objects = 0  # object items among them (where the referee takes over)
        with guarded(self.path):
            if self.events_at >= 0:
                ended: list[Any] = [False]
                replay = self._replay
                cuts: list[Optional[tuple[int, int]]] = []
                arrays = _event_arrays(self.path, self.events_at, ended, cuts, replay, raw)
                for texts, block in arrays:
                    items: list[Any]
                    count = len(texts) if texts is not None else cuts[-1][1]  # type: ignore[index]
                    if self.heads or self.fields is not None:
                        # (a replayed block was checked by the pass that cut it)
                        if replay is None and _unchecked(block):
                            break  # what msgspec skips unchecked: the checked path decides
                        try:
                            items = (_HEAD_ITEMS if self.heads else _decoder(self.fields)).decode(
                                block
                            )
                            items = orjson_ints(items, block)  # (numbers as orjson reads them)
                        except (msgspec.ValidationError, RecursionError):
                            break  # not an object, or a field not of its type: ijson, whole
                    else:
                        try:
                            with gc_paused():
                                items = orjson.loads(block)
                        except orjson.JSONDecodeError:
                            break  # UTF-8, a number, an escape orjson refuses: the checked path
                        if not all(item.__class__ is dict for item in items):
                            items = [item for item in items if isinstance(item, dict)]
                    yield items, (texts if raw else None)
                    done += count
                    objects += len(items)
                if ended[0]:
                    self.after = ended[1] if len(ended) > 1 else {}
                    if done == objects:
                        self.cuts = cuts
                    return
            yield from self._ijson_blocks(done, objects, raw)

    def _ijson_blocks(
        self, skip: int, objects: int, raw: bool
    ) -> Iterator[tuple[list[Any], Optional[list[Any]]]]:
        """The events after the first `skip` items (`objects` of them objects) by ijson, under
        the shared reading rules: the depth and leniency scan first (`_check_depth`), and the
        whole-file reader's verdict (`_referee`) on whatever ijson fails on."""
        import ijson

        try:
            _check_depth(self.path)
            with open_regular(self.path) as handle:
                for number, item in enumerate(ijson.items(handle, "events.item", use_float=True)):
                    if number < skip or not isinstance(item, dict):
                        continue
                    objects += 1
                    yield self._one(item, raw)
        except TraceFormatError as exc:
            events = _referee(self.path, exc)._events or []
        except TraceToolError:
            raise
        except Exception as exc:  # the whole-file reader decides (tracetool.trace.checks)
            events = _referee(self.path, exc)._events or []
        else:
            return
        for item in events[objects:]:
            yield self._one(item, raw)

    def _one(self, item: dict[str, Any], raw: bool) -> tuple[list[Any], Optional[list[Any]]]:
        text = _text(item) if raw else None
        return [_head(item) if self.heads else item], [text] if raw else None


_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def _decoder(fields: Any) -> msgspec.json.Decoder[Any]:
    found = _DECODERS.get(fields)
    if found is None:
        found = _DECODERS[fields] = msgspec.json.Decoder(list[fields])  # type: ignore[valid-type]
    return found


def _text(event: dict[str, Any]) -> bytes:
    """The compact JSON text of a parsed event: by orjson, or by msgspec with room to nest
    (tracetool.trace.checks) for what orjson does not write (deeper than 255 levels, an integer
    beyond 64 bits) but reads."""
    try:
        return orjson.dumps(event, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        with recursion_room():
            return msgspec.json.encode(event)


def _head(event: dict[str, Any]) -> EventHead:
    """The `EventHead` of an event already parsed as a dict."""
    return msgspec.convert(
        {k: v for k, v in event.items() if k in EventHead.__struct_fields__}, EventHead
    )


def _event_arrays(
    path: Path,
    offset: int,
    state: list[Any],
    cuts: Optional[list[Optional[tuple[int, int]]]] = None,
    replay: Optional[list[Optional[tuple[int, int]]]] = None,
    want_texts: bool = True,
    bare: bool = False,
) -> Iterator[tuple[Optional[list[Any]], Any]]:
    """The items of the JSON array at byte `offset`, in blocks of whole items: each as
    (JSON texts of its items, the block as one JSON array `[...]`). Sets `state[0]` once the
    array and the document after it were read to their plain end; stops without it where the
    items cannot be cut plainly (a value that is not an array, an item that is not an object, a
    malformed block): the caller reads on from there another way (module doc).

    `cuts` collects where blocks were cut ((end, items), or None where more had to be read);
    `replay` gives them from an earlier pass over the same file, so no cut is looked for (the
    texts are then None unless `want_texts`; with `bare`, the block is a view of the items
    and the commas between them, without brackets, valid until the next block)."""
    with open_regular(path) as handle:
        handle.seek(offset)
        buf = handle.read(_CHUNK).lstrip(_WS)
        if not buf.startswith(b"["):
            return
        buf = buf[1:].lstrip(_WS)
        eof = False
        need_more = False
        while True:
            if need_more or (not buf and not eof):
                more = handle.read(max(_CHUNK, len(buf)))
                eof = not more
                buf = (buf + more).lstrip(_WS) if buf else more.lstrip(_WS)
                need_more = False
            if buf.startswith(b"]"):
                # (the offset just after the array's `]`: `_plain_end` notes it)
                state[0] = _plain_end(handle, buf[1:], state, handle.tell() - len(buf) + 1)
                return
            if not buf.startswith(b"{"):
                return  # not an object, or the file ends: the caller decides
            found: Optional[tuple[int, Optional[list[Any]], bytes]]
            if replay is not None and cuts is not None:
                if len(cuts) >= len(replay):
                    return  # the file changed: the caller reads on another way
                cut = replay[len(cuts)]
                cuts.append(cut)
                found = None
                if cut is not None:
                    end = cut[0]
                    if bare:
                        found = end, None, memoryview(buf)[:end]  # type: ignore[assignment]
                    else:
                        block = _array_of(buf, end)
                        found = end, (_RAW_ITEMS.decode(block) if want_texts else None), block
            else:
                try:
                    found = _cut(buf, eof)
                except RecursionError:
                    return  # nested deeper than msgspec reads: the checked path decides
                if cuts is not None:
                    cuts.append(None if found is None else (found[0], len(found[1] or ())))
            if found is None:
                if eof:
                    return
                need_more = True
                continue
            end, texts, block = found
            yield texts, block
            buf = buf[end:].lstrip(_WS)
            if not buf and not eof:
                buf = handle.read(_CHUNK).lstrip(_WS)
                eof = not buf
            if buf.startswith(b"]"):
                continue
            if not buf.startswith(b","):
                return
            buf = buf[1:].lstrip(_WS)
            need_more = not eof


_TAIL_LIMIT = 64 * 1024 * 1024


def _plain_end(handle: Any, tail: bytes, members: list[Any], end: int = -1) -> bool:
    """Whether what follows the events array (`tail`, then the rest of `handle`) closes the
    document plainly: `}`, or more members and `}` that orjson reads (the strictest parser:
    tracetool.trace.checks), under 64 MB. If so, `members` gets those members (a dict), their
    text (`rest`: `}` or `,"key":value…}`, stripped) and `end`, the offset just after the
    array's `]`."""
    rest = (tail + handle.read(_TAIL_LIMIT + 1)).strip(_WS)
    if rest == b"}":
        after: Any = {}
    elif not rest.startswith(b",") or len(rest) > _TAIL_LIMIT:
        return False
    else:
        try:
            after = orjson.loads(b"{" + rest[1:])  # the members are at the depth they have
        except orjson.JSONDecodeError:
            return False
    members += (after, rest, end)
    return True


def _plain_start(path: Path, offset: int) -> Optional[dict[str, Any]]:
    """The document's members up to the events value at `offset` when orjson reads them (with
    the events array empty and the object closed there): the block reader then reads no byte of
    the file unchecked; else None. Under 64 MB."""
    if offset > _TAIL_LIMIT:
        return None
    with open_regular(path) as handle:
        head = handle.read(offset)
    try:
        found = orjson.loads(head + b"[]}")
    except orjson.JSONDecodeError:
        return None
    return found if isinstance(found, dict) else None


def _unchecked(block: bytes) -> bool:
    """Whether a block may hold what msgspec skips without checking and orjson refuses (UTF-8,
    numbers: tracetool.trace.checks `unchecked_defect`); cheap on a good block. What ijson
    reads and orjson refuses (`lenient_json`) msgspec refuses too, so `_cut` never takes it."""
    return unchecked_defect(block) is not None


_TRIES = 8


def _array_of(buf: bytes, end: int) -> bytes:
    """`[` + buf[:end] + `]`, copying the few MB once."""
    return b"".join((b"[", memoryview(buf)[:end], b"]"))


def _cut(buf: bytes, eof: bool) -> Optional[tuple[int, list[Any], bytes]]:
    """The longest prefix of `buf` (which starts an item) made of whole items, as
    (its end, the items' texts, `[prefix]`); None when no cut near the end checks."""
    # Prefer cuts before the next item's first key as the first item spells it (`{"id":`):
    # nested objects rarely start with it, so the first try is nearly always right.
    key_end = buf.find(b":", 0, 256)
    lead = buf[:key_end] if key_end > 0 else b"{"
    for pattern in (lead, b"{", b""):
        tries = 0
        pos = len(buf)
        while tries < _TRIES:
            at = buf.rfind(b"}", 0, pos)
            if at < 0:
                break
            pos = at
            nxt = at + 1
            while nxt < len(buf) and buf[nxt] in _WS:
                nxt += 1
            if nxt >= len(buf):
                if not eof:
                    continue  # cannot tell what follows yet
            elif buf[nxt] == ord(","):
                after = nxt + 1
                while after < len(buf) and buf[after] in _WS:
                    after += 1
                if pattern and not buf.startswith(pattern, after):
                    if after < len(buf) or not eof:
                        continue
            elif buf[nxt] != ord("]"):
                continue
            tries += 1
            block = _array_of(buf, at + 1)
            try:
                texts = _RAW_ITEMS.decode(block)
            except msgspec.DecodeError:
                continue
            return at + 1, texts, block
    if eof and len(buf) <= _REST_LIMIT:
        return _cut_at_end(buf)
    return None


_REST_LIMIT = 3 * _CHUNK
_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])


def _cut_at_end(buf: bytes) -> Optional[tuple[int, list[Any], bytes]]:
    """`_cut` of a buffer that holds the rest of the document: its items up to the array's
    `]`, found by reading that rest as the members of an object. (Members after the events, a
    class map say, hold `}]` and `},{` enough to use up `_cut`'s tries from the end.)"""
    try:
        members = _MEMBERS.decode(b'{"events":[' + buf)
    except (msgspec.DecodeError, RecursionError):
        return None
    array = members.get("events")
    if array is None:
        return None
    block = bytes(array)
    end = len(block) - 2  # (where the array's `]` is in `buf`)
    if end <= 0 or buf[end] != ord("]") or memoryview(block)[1:-1] != memoryview(buf)[:end]:
        return None  # (a later `events` member)
    return end, _RAW_ITEMS.decode(block), block


def open_stream(
    path: Path | str,
    *,
    threshold: Optional[int] = None,
    must_contain: Optional[str] = None,
    raw: Optional[bytes] = None,
    header_keys: tuple[str, ...] = HEADER_KEYS,
    heads: bool = False,
    event_updates: bool = True,
    fields: Any = None,
    events_first: bool = False,
) -> TraceStream:
    """Open a recording for one pass over its events (module doc).

    `must_contain` names an object key the caller needs (e.g. `http_server_request`): a
    recording whose bytes do not hold `"key"` at all is not parsed (unless it does not even look
    like a whole recording, so that a broken file still gets its error), and its stream has no
    events and an empty header — a cheap way to skip recordings that cannot matter. `raw` passes the file's
    bytes when the caller has already read them (see `read_small`). `heads` reads `EventHead`s
    (module doc). `event_updates=False` yields the events as written (`eventUpdates` not applied).
    `fields` (a TypedDict of event fields) lets a streamed recording's events be decoded with
    only those fields (msgspec skips the rest); an event whose fields are not of those types is
    read whole, as are the events of a recording read at once.
    `events_first` skips the scan of a streamed recording for its top-level keys when its first
    key-like `"events":` is a top-level one and orjson reads the document up to it: the header
    is then the members before it, which the pass confirms (`TraceStream.settled`) or not (a
    member after the events array holds a header key or more events): `run_pass` does both.
    """
    stream = _open(Path(path), threshold, must_contain, raw, header_keys, heads, events_first)
    if not event_updates:
        stream.updates = {}
    stream.fields = fields
    return stream


def _open(
    p: Path,
    threshold: Optional[int],
    must_contain: Optional[str],
    raw: Optional[bytes],
    header_keys: tuple[str, ...],
    heads: bool,
    events_first: bool = False,
) -> TraceStream:
    if raw is None:
        raw = read_small(p, threshold)
        if raw is None:
            with guarded(p):
                try:
                    found = None
                    if events_first and must_contain is None:
                        found = _open_events_first(p, file_size(p), header_keys)
                    stream = found or _open_streamed(p, file_size(p), must_contain, header_keys)
                except NotFoundError:
                    raise
                except Exception as exc:  # the whole-file reader decides (trace.checks)
                    return _referee(p, exc, must_contain, header_keys, heads)
            stream.heads = heads
            return stream
    size = len(raw)
    if not raw or raw.isspace():
        raise TraceFormatError(f"{p}: empty file, not a trace document")
    if (
        must_contain is not None
        and b'"' + must_contain.encode() + b'"' not in raw
        and is_recording(raw)
    ):
        return TraceStream(p, size, {}, streamed=False)
    if heads:
        fast = _open_heads(p, raw)
        if fast is not None:
            return fast
    with guarded(p):
        try:
            with gc_paused():
                data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise TraceFormatError(f"{p}: {bytes_defect(raw) or describe(exc)}") from None
        del raw
        doc = from_data(data, str(p))
    events = doc.data.pop("events", None) or []
    stream = TraceStream(p, size, doc.data, streamed=False)
    if heads:
        stream.heads = True
        stream._raws = [_text(e) for e in events]
        events = [_head(e) for e in events]
    stream._events = events
    return stream


def _open_heads(path: Path, raw: bytes) -> Optional[TraceStream]:
    """A heads stream of a whole file, or None when it is not plainly a recording (the dict
    reader then reads it, and reports what is wrong)."""
    if _unchecked(raw):
        return None  # what msgspec would skip unchecked: the dict reader decides
    try:
        with gc_paused():
            data = orjson_ints(_HEAD_DOC.decode(raw), raw)  # (numbers as orjson reads them)
    except (msgspec.DecodeError, RecursionError):
        return None
    if document_defect({key: kind(value) for key, value in data.items()}) is not None:
        return None
    events = data.pop("events", None) or []
    stream = TraceStream(path, len(raw), dict(data), streamed=False)
    stream.heads = True
    stream._events = events
    stream._bytes = raw  # the events' texts are cut from it if asked for (`raw_head_blocks`)
    return stream


def read_small(path: Path | str, threshold: Optional[int] = None) -> Optional[bytes]:
    """The bytes of a file up to `threshold` (default `STREAM_THRESHOLD`) bytes; None if bigger."""
    if threshold is None:
        threshold = STREAM_THRESHOLD
    return read_file(path, threshold)


def _open_streamed(
    path: Path,
    size: int,
    must_contain: Optional[str] = None,
    header_keys: tuple[str, ...] = HEADER_KEYS,
) -> TraceStream:
    with open_regular(path) as handle:
        head = handle.read(4096).lstrip(_WS)
    if not head:
        raise TraceFormatError(f"{path}: empty file, not a trace document")
    if not head.startswith(b"{"):
        raise TraceFormatError(f"{path}: not a trace document (top level is not an object)")
    header: dict[str, Any] = {}
    extra = (must_contain,) if must_contain else ()
    wanted = tuple(dict.fromkeys((*header_keys, "eventUpdates")))
    found = _locate_keys(path, (*wanted, "events", *extra))
    if must_contain and found.get("events") and not found.get(must_contain):
        return TraceStream(path, size, {}, streamed=False)
    events_at = _top_level(path, found.get("events", []))
    start = _plain_start(path, max(events_at)) if events_at else None
    plain = start is not None
    if not plain:
        _check_depth(path)  # else the block reader's parsers check what they read
    for key in wanted:
        offsets = found.get(key, [])
        if not offsets:
            continue
        offsets = _top_level(path, offsets)
        if not offsets:
            continue
        if start is not None and key in start and max(offsets) < max(events_at):
            value = start[key]  # the last top-level one, before the events: as orjson read it
        else:
            value = _value_at(path, max(offsets))
        if value is not None:
            header[key] = value
    kinds = {key: kind(value) for key, value in header.items()}
    if events_at:
        kinds["events"] = _kind_at(path, max(events_at))
    defect = document_defect(kinds)
    if defect is not None:
        raise TraceFormatError(f"{path}: {defect}")
    stream = TraceStream(path, size, header, streamed=True)
    if plain:
        stream.events_at = max(events_at)
    return stream


def _open_events_first(
    path: Path, size: int, header_keys: tuple[str, ...]
) -> Optional[TraceStream]:
    """`_open_streamed` without the key scan, for a recording whose first key-like `"events":`
    is a top-level key that orjson reads the document up to (`open_stream`'s `events_first`);
    None for any other (`_open_streamed` decides)."""
    events_at = _first_key(path, b'"events"')
    if events_at is None:
        return None
    start = _plain_start(path, events_at)  # (a nested key leaves an object open: None)
    if start is None:
        return None
    wanted = tuple(dict.fromkeys((*header_keys, "eventUpdates")))
    header = {key: start[key] for key in wanted if start.get(key) is not None}
    kinds = {key: kind(value) for key, value in header.items()}
    kinds["events"] = _kind_at(path, events_at)
    if document_defect(kinds) is not None:
        return None
    stream = TraceStream(path, size, header, streamed=True)
    stream.events_at = events_at
    stream.provisional = (*wanted, "events")
    return stream


def _first_key(path: Path, pattern: bytes) -> Optional[int]:
    """The byte offset just after the first key-like `pattern:` of a file, in its first
    `_TAIL_LIMIT` bytes (as `_locate_keys` finds them), or None."""
    with open_regular(path) as handle:
        base = 0
        carry = b""
        while base < _TAIL_LIMIT:
            chunk = handle.read(_CHUNK // 16)
            if not chunk:
                return None
            buf = carry + chunk
            start = base - len(carry)
            at = buf.find(pattern)
            while at != -1:
                value_at = key_value_offset(buf, at, len(pattern))
                if value_at is not None:
                    return start + value_at
                at = buf.find(pattern, at + 1)
            carry = buf[-(len(pattern) + 64) :]
            base += len(chunk)
    return None


def run_pass(path: Path | str, run: Callable[[TraceStream], Any], **options: Any) -> Any:
    """`run(open_stream(path, **options))`, first on the stream opened `events_first`: when that
    stream is not `settled` after `run`, or `run` failed on it with a `TraceFormatError` (the
    verdict is the usual reader's), `run` again on the stream opened the usual way."""
    stream = open_stream(path, events_first=True, **options)
    if stream.provisional:
        try:
            result = run(stream)
        except TraceFormatError:
            pass
        else:
            if stream.settled:
                return result
        stream = open_stream(path, **options)
    return run(stream)


def _top_level(path: Path, offsets: list[int]) -> list[int]:
    """Which of several key-like `"key":` offsets are top-level keys (the depth there, by a
    `DepthScan` up to each, is 1); one offset is taken as it is. The last top-level one counts
    (a duplicated key), as for every JSON parser we use."""
    if len(offsets) < 2:
        return offsets
    top = []
    scan, done = DepthScan(), 0
    with open_regular(path) as handle:
        for offset in sorted(offsets):
            scan.feed(handle.read(offset - done))
            done = offset
            if scan.depth == 1:
                top.append(offset)
    return top


def _kind_at(path: Path, offset: int) -> str:
    """The kind of the JSON value at byte `offset`."""
    with open_regular(path) as handle:
        handle.seek(offset)
        return kind_of_raw(handle.read(64))


def _check_depth(path: Path) -> None:
    """Refuse a file nested deeper than the whole-file parser allows (ijson has no limit), or
    holding what ijson reads and it refuses (trace.checks.lenient_json): the referee decides."""
    scan = DepthScan()
    with open_regular(path) as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            if scan.feed(chunk) > MAX_DEPTH:
                raise TraceFormatError(f"{path}: {DEPTH_MESSAGE}")
            if lenient_json(chunk):
                raise TraceFormatError(f"{path}: not valid JSON")


def _referee(
    path: Path,
    exc: BaseException,
    must_contain: Optional[str] = None,
    header_keys: tuple[str, ...] = HEADER_KEYS,
    heads: bool = False,
) -> TraceStream:
    """The whole-file reader's verdict on a file the streaming reader failed on: its error (the
    words every read path uses), or its stream when it reads the file (ijson overflows on
    integers beyond 64 bits that orjson reads). Files too big to referee keep their error."""
    raw = read_file(path, _REFEREE_LIMIT)
    if raw is None:
        if isinstance(exc, TraceFormatError):
            raise exc
        raise TraceFormatError(f"{path}: {describe(exc)}") from None
    return _open(path, None, must_contain, raw, header_keys, heads)


def _locate_keys(path: Path, keys: tuple[str, ...]) -> dict[str, list[int]]:
    """Byte offsets just after `"key":` for every key-like occurrence of each key."""
    patterns = {key: b'"' + key.encode() + b'"' for key in keys}
    longest = max(len(p) for p in patterns.values())
    found: dict[str, list[int]] = {key: [] for key in keys}
    with open_regular(path) as handle:
        base = 0
        carry = b""
        while True:
            chunk = handle.read(_CHUNK)
            if not chunk:
                break
            buf = carry + chunk
            start = base - len(carry)
            for key, pattern in patterns.items():
                at = buf.find(pattern)
                while at != -1:
                    value_at = key_value_offset(buf, at, len(pattern))
                    if value_at is not None:
                        absolute = start + value_at
                        if absolute not in found[key]:
                            found[key].append(absolute)
                    at = buf.find(pattern, at + 1)
            # keep enough of the tail to see a key and its colon across the chunk boundary
            carry = buf[-(longest + 64) :]
            base += len(chunk)
    return found


def _value_at(path: Path, offset: int) -> Any:
    """Parse the one JSON value that starts at byte `offset` (what follows it is ignored)."""
    import ijson

    try:
        with open_regular(path) as handle:
            handle.seek(offset)
            return next(iter(ijson.items(handle, "", use_float=True)), None)
    except ijson.JSONError as exc:
        raise TraceFormatError(f"{path}: not valid JSON ({_one_line(exc)})") from None


def iter_pairs(
    events: Iterable[Any], keep: Optional[Callable[[Any], bool]] = None
) -> Iterator[tuple[Any, Optional[Any]]]:
    """Pair calls with their returns in one pass, as AppMap's model does.

    A return names its call by `parent_id`, or, without one, closes the innermost open call of
    its thread; calls opened inside a call that returns are closed (never returned). Yields
    `(call, return)` as each return arrives, then `(call, None)` for calls that never returned,
    in document order. Only calls for which `keep(call)` is true are yielded or held in memory.
    Events are dicts or `EventHead`s.
    """
    held: dict[Any, Optional[Any]] = {}  # open call id -> call (None if not kept)
    stacks: dict[Any, list[Any]] = {}
    unreturned: list[Any] = []
    fields: Callable[[Any], tuple[Any, Any, Any, Any]] = _dict_fields
    for event in events:
        if event.__class__ is EventHead:
            fields = _HEAD_FIELDS
        kind, call_id, thread_id, parent = fields(event)
        if kind == "call":
            held[call_id] = event if keep is None or keep(event) else None
            stack = stacks.get(thread_id)
            if stack is None:
                stacks[thread_id] = [call_id]
            else:
                stack.append(call_id)
            continue
        if kind != "return":
            continue
        stack = stacks.get(thread_id)
        if parent is None:
            if not stack:
                continue
            parent = stack[-1]
        if parent not in held:
            continue
        call = held.pop(parent)
        if stack:
            if stack[-1] == parent:
                stack.pop()
            elif parent in stack:
                while stack[-1] != parent:
                    inner = held.pop(stack.pop(), None)
                    if inner is not None:
                        unreturned.append(inner)
                stack.pop()
        if call is not None:
            yield call, event
    unreturned.extend(call for call in held.values() if call is not None)
    unreturned.sort(key=lambda call: (str(type(call.get("id"))), call.get("id") or 0))
    for call in unreturned:
        yield call, None


_HEAD_FIELDS = operator.attrgetter("event", "id", "thread_id", "parent_id")


def _dict_fields(event: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    get = event.get
    return get("event"), get("id"), get("thread_id"), get("parent_id")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def file_stamp(path: Path | str) -> tuple[int, int]:
    """A file's size and modification time, what tells that a file changed between two reads
    of it; (-1, -1) if it vanished."""
    try:
        info = os.stat(path)
    except OSError:
        return -1, -1
    return info.st_size, info.st_mtime_ns


def file_size(path: Path | str) -> int:
    """Size in bytes as the filesystem reports it (0 if the file vanished)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
