"""Reading a recording event by event, with memory that does not grow with the file.

`open_stream(path)` returns a `TraceStream`: `.header` holds every top-level key except `events`
(metadata, classMap, version, ...; `eventUpdates` is taken out and applied), `.events()` yields
the events once, in document order, each already replaced by its `eventUpdates` entry.

Two readers, one contract:
* files up to `STREAM_THRESHOLD` bytes are parsed whole with orjson — for the typical recording
  (tens of kB to a few MB) that is several times faster than any incremental parser;
* bigger files are read with ijson's C backend (`events.item`), one event at a time, so a 60 MB
  recording costs a few MB of memory. The header keys are found first by a byte scan for the
  top-level key (`"classMap":` preceded by `{` or `,`; a quote inside a JSON string is always
  escaped, so the pattern can only be a real key) and parsed from there; when the scan is
  ambiguous (the key also appears nested) a separate ijson pass over that key decides.

Every defect surfaces as one `TraceFormatError` line naming the file. Stdlib, orjson and (lazily)
ijson only; Python 3.9 syntax.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Optional

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
)
from tracetool.trace.document import from_data, gc_paused
from tracetool.trace.extract import WS as _WS
from tracetool.trace.extract import is_recording, key_value_offset
from tracetool.trace.reader import describe, guarded, open_regular, read_file

STREAM_THRESHOLD = 8 * 1024 * 1024
HEADER_KEYS = ("version", "metadata", "classMap", "eventUpdates")
_CHUNK = 4 * 1024 * 1024
_REFEREE_LIMIT = 256 * 1024 * 1024


class TraceStream:
    """One recording opened for a single pass over its events (see module doc)."""

    def __init__(self, path: Path, size: int, header: dict[str, Any], streamed: bool) -> None:
        self.path = path
        self.size = size
        self.header = header
        self.streamed = streamed
        self.updates: dict[str, Any] = {}
        self._events: Optional[list[dict[str, Any]]] = None
        updates = header.pop("eventUpdates", None)
        if isinstance(updates, dict):
            self.updates = updates

    @property
    def class_map(self) -> list[Any]:
        cm = self.header.get("classMap")
        return cm if isinstance(cm, list) else []

    @property
    def metadata(self) -> dict[str, Any]:
        md = self.header.get("metadata")
        return md if isinstance(md, dict) else {}

    def events(self) -> Iterator[dict[str, Any]]:
        """The events, once, with `eventUpdates` applied; non-object items are skipped."""
        if not self.streamed:
            # from_data already dropped non-object events
            events, self._events = self._events or [], None
            return self._updated(events) if self.updates else iter(events)
        streamed = (e for e in self._iter_streamed() if isinstance(e, dict))
        return self._updated(streamed) if self.updates else streamed

    def _updated(self, events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        updates = self.updates
        for event in events:
            update = updates.get(str(event.get("id")))
            yield update if isinstance(update, dict) else event

    def _iter_streamed(self) -> Iterator[Any]:
        import ijson

        done = 0  # object events yielded
        try:
            with open_regular(self.path) as handle:
                for item in ijson.items(handle, "events.item", use_float=True):
                    done += isinstance(item, dict)
                    yield item
        except TraceToolError:
            raise
        except Exception as exc:  # the whole-file reader decides (tracetool.trace.checks)
            with guarded(self.path):
                refereed = _referee(self.path, exc)
                yield from (refereed._events or [])[done:]


def open_stream(
    path: Path | str,
    *,
    threshold: Optional[int] = None,
    must_contain: Optional[str] = None,
    raw: Optional[bytes] = None,
    header_keys: tuple[str, ...] = HEADER_KEYS,
) -> TraceStream:
    """Open a recording for one pass over its events (module doc).

    `must_contain` names an object key the caller needs (e.g. `http_server_request`): a
    recording whose bytes do not hold `"key"` at all is not parsed (unless it does not even look
    like a whole recording, so that a broken file still gets its error), and its stream has no
    events and an empty header — a cheap way to skip recordings that cannot matter. `raw` passes the file's
    bytes when the caller has already read them (see `read_small`).
    """
    p = Path(path)
    if raw is None:
        raw = read_small(p, threshold)
        if raw is None:
            with guarded(p):
                try:
                    return _open_streamed(p, file_size(p), must_contain, header_keys)
                except NotFoundError:
                    raise
                except Exception as exc:  # the whole-file reader decides (trace.checks)
                    return _referee(p, exc, must_contain, header_keys)
    size = len(raw)
    if not raw or raw.isspace():
        raise TraceFormatError(f"{p}: empty file, not a trace document")
    if (
        must_contain is not None
        and b'"' + must_contain.encode() + b'"' not in raw
        and is_recording(raw)
    ):
        return TraceStream(p, size, {}, streamed=False)
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
    stream._events = events
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
    _check_depth(path)
    for key in wanted:
        offsets = found.get(key, [])
        if not offsets:
            continue
        offsets = _top_level(path, offsets)
        value = _value_at(path, max(offsets)) if offsets else None
        if value is not None:
            header[key] = value
    kinds = {key: kind(value) for key, value in header.items()}
    events_at = _top_level(path, found.get("events", []))
    if events_at:
        kinds["events"] = _kind_at(path, max(events_at))
    defect = document_defect(kinds)
    if defect is not None:
        raise TraceFormatError(f"{path}: {defect}")
    return TraceStream(path, size, header, streamed=True)


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
) -> TraceStream:
    """The whole-file reader's verdict on a file the streaming reader failed on: its error (the
    words every read path uses), or its stream when it reads the file (ijson overflows on
    integers beyond 64 bits that orjson reads). Files too big to referee keep their error."""
    raw = read_file(path, _REFEREE_LIMIT)
    if raw is None:
        if isinstance(exc, TraceFormatError):
            raise exc
        raise TraceFormatError(f"{path}: {describe(exc)}") from None
    return open_stream(path, raw=raw, must_contain=must_contain, header_keys=header_keys)


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
    events: Iterable[dict[str, Any]], keep: Optional[Callable[[dict[str, Any]], bool]] = None
) -> Iterator[tuple[dict[str, Any], Optional[dict[str, Any]]]]:
    """Pair calls with their returns in one pass, as AppMap's model does.

    A return names its call by `parent_id`, or, without one, closes the innermost open call of
    its thread; calls opened inside a call that returns are closed (never returned). Yields
    `(call, return)` as each return arrives, then `(call, None)` for calls that never returned,
    in document order. Only calls for which `keep(call)` is true are yielded or held in memory.
    """
    held: dict[Any, Optional[dict[str, Any]]] = {}  # open call id -> call (None if not kept)
    stacks: dict[Any, list[Any]] = {}
    unreturned: list[dict[str, Any]] = []
    for event in events:
        get = event.get
        kind = get("event")
        if kind == "call":
            call_id = get("id")
            held[call_id] = event if keep is None or keep(event) else None
            stack = stacks.get(get("thread_id"))
            if stack is None:
                stacks[get("thread_id")] = [call_id]
            else:
                stack.append(call_id)
            continue
        if kind != "return":
            continue
        stack = stacks.get(get("thread_id"))
        parent = get("parent_id")
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


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def file_size(path: Path | str) -> int:
    """Size in bytes as the filesystem reports it (0 if the file vanished)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
