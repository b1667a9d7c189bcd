"""What a recording may hold: the one set of reading rules every read path applies (issue 14).

There are several read paths, each the fastest for its callers: the whole-document loader
(orjson), the slim loader (msgspec, skipping what it does not keep), the event stream (orjson
below its size threshold, ijson above it) and the byte splitter of trim/sanitize (msgspec).
Their parsers differ in what they accept; the rules here make one file get one decision and
one message on every path:

- **Bytes.** A recording is UTF-8 (`utf8_defect`), nested at most `MAX_DEPTH` levels
  (`depth_exceeded`, `DepthScan` for a stream of chunks) and holds no number beyond what a double
  can hold (`maybe_huge_number`, a cheap pre-filter, made in C by `huge_number_scan` where the
  tool's accelerator is built). The strictest parser, orjson, is the referee: any path whose own
  parser fails (or that skips content unchecked) asks `bytes_defect(raw)` for the message, which
  checks UTF-8 first and then parses with orjson, so the same defect reads the same whatever
  parser met it first.
- **Numbers.** Every reader takes the value orjson reads: an integer outside [-2**63, 2**64)
  is a float (`orjson_ints` on what msgspec decoded, when the pre-filter `maybe_wide_int`, in C
  `wide_int_risk`, flags the text; ijson overflows there and hands over to the referee).
- **Document.** `document_defect(kinds)` is the top-level check (an object with `events`,
  `classMap` or `metadata`; `events`/`classMap` arrays, `metadata` an object, null meaning
  absent), given each top-level key's kind so that a path holding only raw bytes (`kind_of_raw`)
  checks exactly what a path holding parsed values (`kind`) checks. A non-object
  `eventUpdates` is ignored with a warning (`event_updates_warning`), as are non-object events.
- **Event fields.** `field_defect(event, number)` names the first event field whose type the
  readers cannot use; the structural fields (`id`, `parent_id`, `thread_id`, `event`) that
  pairing and renumbering hash are cleaned (`clean_structure`: a container there is dropped
  from the event, with one warning per file); `type_defect(data)` finds the first such defect
  in a parsed document, for the one-line error of a command that failed on it.

Stdlib only (the agent may import `tracetool.trace`); orjson is imported where it referees, the
tool's accelerator (`tracetool.accel`) where it is there.
"""

from __future__ import annotations

import codecs
import functools
import sys
import threading
from array import array
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from itertools import accumulate
from typing import Any, Optional

from tracetool.lazyre import lazy

# orjson refuses JSON nested deeper than this (its own fixed limit): every other path refuses
# what it refuses, with the same words.
MAX_DEPTH = 1024
DEPTH_MESSAGE = f"nested deeper than {MAX_DEPTH} levels"

_NAMES: dict[type, str] = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def kind(value: object) -> str:
    """A JSON value's kind in words: `an object`, `an array`, `a string`, `a number`, ..."""
    if value is None:
        return "null"
    return _NAMES.get(type(value), "a number" if isinstance(value, (int, float)) else "a value")


_RAW_KINDS = {ord("{"): "an object", ord("["): "an array", ord('"'): "a string"}
_RAW_KINDS.update({ord("t"): "a boolean", ord("f"): "a boolean", ord("n"): "null"})


def kind_of_raw(raw: Any) -> str:
    """`kind` of a JSON value given as its text (bytes-like, leading whitespace allowed)."""
    view = memoryview(raw)
    for at in range(min(len(view), 64)):
        byte = view[at]
        if byte not in b" \t\r\n":
            return _RAW_KINDS.get(byte, "a number")
    return "null" if not len(view) else "a value"


# -- bytes ------------------------------------------------------------------------------------


def utf8_defect(raw: Any) -> Optional[str]:
    """`not valid UTF-8 (...)` when the bytes are not UTF-8 (surrogates included), else None."""
    if isinstance(raw, bytes) and raw.isascii():
        return None
    view = memoryview(raw)
    decoder = codecs.getincrementaldecoder("utf-8")()
    step = 1 << 20
    for at in range(0, len(view), step):
        try:
            decoder.decode(view[at : at + step], at + step >= len(view))
        except UnicodeDecodeError as exc:
            offset = at + exc.start - len(decoder.getstate()[0])
            return f"not valid UTF-8 (byte {max(offset, 0)}: {exc.reason})"
    return None


_KEEP = b'[]{}"'
_ESCAPES = b'\\/bfnrtu"'  # a backslash and every character that may follow it in JSON
_DROP = bytes(b for b in range(256) if b not in _KEEP)
_DROP_ESCAPED = bytes(b for b in range(256) if b not in _KEEP + _ESCAPES)
_STRING = lazy(rb'"[^"]*"')
_SIGNS = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")


class DepthScan:
    """The maximum nesting depth of JSON text fed in chunks, exact for valid JSON.

    Everything but brackets, quotes and escapes is dropped in C (`bytes.translate`), escaped
    quotes are removed, strings (now bracket-only) are cut out, and the brackets become +1/-1
    whose running sum is the depth: a few tenths of a second for 60 MB.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.deepest = 0
        self._in_string = False
        self._carry = b""

    def feed(self, chunk: bytes) -> int:
        buf = self._carry + chunk if self._carry else chunk
        self._carry = b""
        tail = len(buf) - len(buf.rstrip(b"\\"))
        if tail:  # an escape cut by the chunk boundary: finish it with the next chunk
            self._carry, buf = buf[-tail:], buf[:-tail]
        if b"\\" in buf:
            buf = buf.translate(None, _DROP_ESCAPED)
            buf = buf.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, b"\\/bfnrtu")
        else:
            buf = buf.translate(None, _DROP)
        if self._in_string:
            buf = b'"' + buf
        buf = buf.replace(b'""', b"")  # adjacent quotes hold no bracket between them
        if b'"' in buf:
            buf = _STRING.sub(b"", buf)
            open_at = buf.find(b'"')
            self._in_string = open_at >= 0
            if open_at >= 0:
                buf = buf[:open_at]
        else:
            self._in_string = False
        if buf:
            signs = array("b", buf.translate(_SIGNS))
            self.deepest = max(self.deepest, max(accumulate(signs, initial=self.depth)))
            opened = buf.count(b"[") + buf.count(b"{")
            self.depth += 2 * opened - len(buf)
        return self.deepest


def depth_exceeded(raw: Any) -> bool:
    """Whether JSON text nests deeper than `MAX_DEPTH` (exact for valid JSON)."""
    return DepthScan().feed(bytes(raw)) > MAX_DEPTH


# A number a double cannot hold has 309+ digits or a 3-digit exponent. One C pass maps the text
# to classes (digit `0`, exponent `e`, `.`/`-`, separator `:` for `:,[]{}` and spaces, `x` for
# the rest; `+` is dropped), where such a number is `e000` inside a token between separators.
# Candidates inside strings (`6e839` of a hex digest) are told apart by their neighbours; when
# a candidate is a number token, orjson decides (`bytes_defect`).
_CLASSES = bytearray(b"x" * 256)
for _byte in b"0123456789":
    _CLASSES[_byte] = ord("0")
for _byte in b":,[]{} \t\r\n":
    _CLASSES[_byte] = ord(":")
for _byte in b"eE":
    _CLASSES[_byte] = ord("e")
for _byte in b".-":
    _CLASSES[_byte] = _byte
_NUMBER_CLASSES = bytes(_CLASSES)
_LONG_DIGITS = b"0" * 309


_EXPONENT = lazy(rb"e0000*(?::|\Z)")  # a literal prefix: re searches it fast


def maybe_huge_number(raw: Any) -> bool:
    """Whether the text may hold a number orjson refuses (a pre-filter: see `bytes_defect`).
    `bytes` of up to 8 MB (a block of the block reader) are mapped without a copy; longer text
    is read in 1 MB pieces (overlapping by more than a suspicious number's length), whose
    copies and class maps reuse the same memory (pieces of 8 MB were each mapped afresh: a
    60 MB recording's check faulted 10,000 pages in, 20% of its time)."""
    if raw.__class__ is bytes and len(raw) <= _PIECE:
        return _huge_in(raw.translate(_NUMBER_CLASSES, b"+"))
    view = memoryview(raw)
    for at in range(0, max(len(view), 1), _STEP):
        classes = bytes(view[max(0, at - 512) : at + _STEP]).translate(_NUMBER_CLASSES, b"+")
        if _huge_in(classes):
            return True
    return False


_PIECE = 8 << 20
_STEP = 1 << 20


def _huge_in(classes: bytes) -> bool:
    """Whether a class map (`maybe_huge_number`) holds a number orjson may refuse."""
    if _LONG_DIGITS in classes:
        return True
    for match in _EXPONENT.finditer(classes):
        start = end = match.start()
        while start > 0 and classes[start - 1] in b"0.-":
            start -= 1
        if start < end and (start == 0 or classes[start - 1] == ord(":")):
            return True
    return False


_SURROGATE = lazy(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def lenient_json(raw: Any) -> bool:
    """Whether the text may hold what ijson (yajl) reads but orjson refuses: `\\v` or `\\f` as
    whitespace, or a `\\u` escape of a lone surrogate (a pre-filter: see `bytes_defect`)."""
    if b"\x0b" in raw or b"\x0c" in raw:
        return True
    if b"\\ud" not in raw and b"\\uD" not in raw:
        return False
    escapes = [(m.start(), m.group()[3:4].lower() in b"89ab") for m in _SURROGATE.finditer(raw)]
    for number, (at, high) in enumerate(escapes):
        paired = escapes[number + 1] if number + 1 < len(escapes) else None
        if high and (paired is None or paired[1] or paired[0] != at + 6):
            return True
        if not high and (
            number == 0 or not escapes[number - 1][1] or escapes[number - 1][0] != at - 6
        ):
            return True
    return False


def orjson_defect(exc: BaseException) -> str:
    """What an orjson decoding error says about the file, in the shared words."""
    text = " ".join(str(exc).split())[:200]
    lowered = text.lower()
    if isinstance(exc, RecursionError) or "depth" in lowered or "recursion" in lowered:
        return DEPTH_MESSAGE
    if "infinity" in lowered or ("number" in lowered and "large" in lowered):
        return f"holds a number too large to use ({text})"
    return f"not valid JSON ({text})"


def bytes_defect(raw: Any) -> Optional[str]:
    """The shared verdict on a recording's bytes: why it cannot be read, or None if it can.

    Empty, invalid UTF-8, then whatever orjson refuses (syntax, depth, numbers). Every read path
    asks this for its message when its own parser fails, so the message does not depend on the
    path; it costs a full parse, so it is for failures and rare suspicions only.
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if not raw or bytes(raw).isspace():
        return "empty file, not a trace document"
    defect = utf8_defect(raw)
    if defect is not None:
        return defect
    import orjson

    try:
        orjson.loads(raw)
    except (orjson.JSONDecodeError, RecursionError) as exc:
        return orjson_defect(exc)
    return None


def unchecked_defect(raw: Any) -> Optional[str]:
    """`bytes_defect` for a parser that skips content without checking it (msgspec leaves
    UTF-8 and number ranges of skipped values unchecked): cheap on a good file (an ASCII test
    and one scan), a full verdict only when something is suspicious."""
    defect = utf8_defect(raw)
    scan = huge_number_scan() if raw.__class__ is bytes else maybe_huge_number
    if defect is None and scan(raw):
        defect = bytes_defect(raw)
    return defect


@functools.cache
def huge_number_scan() -> Callable[[Any], bool]:
    """`maybe_huge_number` of a `bytes`, made in C where the tool's accelerator is built
    (`huge_number_risk`: a seventh of the time, the GIL released): the same answer on texts up
    to 8 MB, and over that a whole-text read whose alarms are among the pieces' (an alarm only
    asks the referee, `bytes_defect`). The agent's distribution has no accelerator."""
    try:
        from tracetool.accel import function
    except ImportError:  # pragma: no cover - the agent's distribution
        return maybe_huge_number
    scan: Optional[Callable[[Any], bool]] = function("huge_number_risk")
    return maybe_huge_number if scan is None else scan


# -- numbers as orjson reads them -------------------------------------------------------------
# orjson reads an integer outside [-2**63, 2**64) as the nearest double; msgspec and ijson keep
# it exact. The index (orjson) cannot keep such an int, and AppMap's JSON.parse reads every
# number as a double (a 30-digit `method_id` names `C#1.2345678901234568e+29`, as JavaScript
# prints it too), so a reader that decodes with msgspec takes orjson's value (`orjson_ints`):
# float(value), the same double (both round correctly). 2**1024 and past never get that far:
# orjson refuses them, and so does every reader's huge-number check.
_INT_LOW = -(2**63)
_INT_END = 2**64


def as_orjson_ints(value: Any) -> Any:
    """Decoded JSON (dicts, lists, msgspec structs) with every int outside [-2**63, 2**64)
    made the float orjson reads for it, in place; returns the value (a new one only when the
    value itself is such an int). A pass over everything, without recursion: for the texts
    `wide_int_risk` flags."""
    if value.__class__ is int:
        return value if _INT_LOW <= value < _INT_END else float(value)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, field in item.items():
                if field.__class__ is int:
                    if not _INT_LOW <= field < _INT_END:
                        item[key] = float(field)  # (a value replaced: no key added)
                elif isinstance(field, (dict, list)) or hasattr(field, "__struct_fields__"):
                    stack.append(field)
        elif isinstance(item, list):
            for at, element in enumerate(item):
                if element.__class__ is int:
                    if not _INT_LOW <= element < _INT_END:
                        item[at] = float(element)
                elif isinstance(element, (dict, list)) or hasattr(element, "__struct_fields__"):
                    stack.append(element)
        else:  # a msgspec struct (`EventHead`, the slim reader's events)
            for name in getattr(item, "__struct_fields__", ()):
                field = getattr(item, name)
                if field.__class__ is int:
                    if not _INT_LOW <= field < _INT_END:
                        setattr(item, name, float(field))
                elif isinstance(field, (dict, list)) or hasattr(field, "__struct_fields__"):
                    stack.append(field)
    return value


# digits -> `0`, the bytes before a value (`:,[]{}`, white space) -> `:`, `-` kept, the rest
# `x` (`.` and exponents among them: what follows the digits of a float)
_INT_CLASSES = bytearray(b"x" * 256)
for _byte in b"0123456789":
    _INT_CLASSES[_byte] = ord("0")
for _byte in b":,[]{} \t\r\n":
    _INT_CLASSES[_byte] = ord(":")
_INT_CLASSES[ord("-")] = ord("-")
_INT_CLASS_MAP = bytes(_INT_CLASSES)
_RUN = b"0" * 19


def maybe_wide_int(raw: Any) -> bool:
    """Whether the text may hold an integer orjson reads as a float: an integer token of 20 or
    more digits, or of 19 from a 9 after a `-` (a pre-filter: strings are not told apart)."""
    text = bytes(raw)
    classes = text.translate(_INT_CLASS_MAP)
    at = classes.find(_RUN)
    while at >= 0:
        end = at + len(_RUN)
        while end < len(classes) and classes[end] == 0x30:
            end += 1
        while at > 0 and classes[at - 1] == 0x30:
            at -= 1
        negative = at > 0 and classes[at - 1] == 0x2D
        before = at - negative
        digits = end - at
        if (
            (digits >= 20 or (digits == 19 and negative and text[at] == 0x39))
            and (before == 0 or classes[before - 1] == 0x3A)
            and (end == len(classes) or text[end] not in b".eE")
        ):
            return True
        at = classes.find(_RUN, end)
    return False


@functools.cache
def _wide_int_scan() -> Callable[[Any], bool]:
    try:
        from tracetool.accel import function
    except ImportError:  # pragma: no cover - the agent's distribution
        return maybe_wide_int
    scan: Optional[Callable[[Any], bool]] = function("wide_int_risk")
    return maybe_wide_int if scan is None else scan


def wide_int_risk(raw: Any) -> bool:
    """`maybe_wide_int`, made in C where the tool's accelerator is built (`wide_int_risk`, the
    GIL released)."""
    return bool(_wide_int_scan()(raw))


def orjson_ints(value: Any, raw: Any) -> Any:
    """`value`, decoded from the text `raw` by msgspec, as orjson reads `raw`
    (`as_orjson_ints`, when `wide_int_risk` flags the text)."""
    return as_orjson_ints(value) if wide_int_risk(raw) else value


_ROOM = threading.Lock()


@contextmanager
def recursion_room() -> Iterator[None]:
    """Let a C parser that counts Python's recursion (msgspec, whose own limit is below
    `MAX_DEPTH`) nest `MAX_DEPTH` levels below the caller: for the retry of a document the
    referee (`bytes_defect`) found within `MAX_DEPTH`. The limit is put back afterwards;
    retries are serialized so that one never lowers it under another."""
    with _ROOM:
        depth = 0
        frame: Any = sys._getframe()
        while frame is not None:
            depth += 1
            frame = frame.f_back
        saved = sys.getrecursionlimit()
        sys.setrecursionlimit(max(saved, depth + MAX_DEPTH + 100))
        try:
            yield
        finally:
            sys.setrecursionlimit(saved)


# -- the document -----------------------------------------------------------------------------

DOCUMENT_KEYS = ("events", "classMap", "metadata")
_EXPECTED = {"events": "an array", "classMap": "an array", "metadata": "an object"}


def document_defect(kinds: Optional[Mapping[str, str]], top: str = "an object") -> Optional[str]:
    """Why a value whose top level is `top` with these keys (key -> `kind`) is not a trace
    document, or None. The words are the same on every read path."""
    if top != "an object" or kinds is None:
        return f"not a trace document (top level is {top}, not an object)"
    if not any(key in kinds for key in DOCUMENT_KEYS):
        return "not a trace document (no events, classMap or metadata)"
    for key, expected in _EXPECTED.items():
        found = kinds.get(key)
        if found is not None and found not in (expected, "null"):
            return f"not a trace document ({key} is {found}, expected {expected})"
    return None


def event_updates_warning(found: Optional[str], source: str) -> Optional[str]:
    """The warning for an `eventUpdates` of kind `found` that is ignored (not an object)."""
    if found is None or found in ("an object", "null"):
        return None
    return f"{source}: ignored eventUpdates ({found}, expected an object)"


def dropped_events_warning(count: int, source: str) -> str:
    return f"{source}: dropped {count} non-object events"


# -- event fields ----------------------------------------------------------------------------

# The fields whose type the readers rely on (DESIGN: unknown fields are kept as they are).
STRUCTURE = ("id", "parent_id", "thread_id", "event")
SCALARS = (*STRUCTURE, "defined_class", "method_id", "path", "lineno", "static", "elapsed")
OBJECTS: tuple[str, ...] = ("http_server_request", "http_server_response")
OBJECTS += ("http_client_request", "http_client_response", "sql_query", "return_value")
OBJECTS += ("receiver",)
LISTS = ("parameters", "message", "exceptions", "labels")
MEMBERS: dict[str, dict[str, type]] = {
    "http_server_request": {"request_method": str, "path_info": str, "headers": dict},
    "http_client_request": {"request_method": str, "url": str, "headers": dict},
    "http_server_response": {"headers": dict},
    "http_client_response": {"headers": dict},
    "sql_query": {"sql": str, "database_type": str},
}
METADATA: dict[str, type] = {"name": str, "test_status": str, "app": str, "labels": list}
METADATA.update({"git": dict, "recorder": dict, "language": dict, "test_failure": dict})
METADATA["frameworks"] = list


def field_defect(event: Mapping[str, Any], number: int) -> Optional[str]:
    """The first field of `event` (the `number`th) whose type the readers cannot use."""
    for key in SCALARS:
        value = event.get(key)
        if isinstance(value, (dict, list)):
            return f"event {number}: {key} is {kind(value)}, expected a scalar"
    if event.get("id") is None and "id" in event:
        return f"event {number}: id is null"
    for key in OBJECTS:
        value = event.get(key)
        if value is not None and not isinstance(value, dict):
            return f"event {number}: {key} is {kind(value)}, expected an object"
        for member, expected in MEMBERS.get(key, {}).items():
            inner = value.get(member) if isinstance(value, dict) else None
            if inner is not None and not isinstance(inner, expected):
                return (
                    f"event {number}: {key}.{member} is {kind(inner)}, expected {_NAMES[expected]}"
                )
    for key in LISTS:
        value = event.get(key)
        if value is not None and not isinstance(value, list):
            return f"event {number}: {key} is {kind(value)}, expected an array"
        for item in value if key != "labels" and isinstance(value, list) else ():
            if not isinstance(item, dict):
                return f"event {number}: an item of {key} is {kind(item)}, expected an object"
    return None


def bad_structure(event: Mapping[str, Any]) -> list[str]:
    """The structural fields of `event` that hold an array or object (they cannot be ids)."""
    return [key for key in STRUCTURE if isinstance(event.get(key), (dict, list))]


def clean_structure(event: dict[str, Any]) -> int:
    """Drop the structural fields that hold an array or object (`bad_structure`); returns how
    many were dropped. Pairing and renumbering then read the event as one without them."""
    bad = bad_structure(event)
    for key in bad:
        del event[key]
    return len(bad)


def cleaned_warning(count: int, source: str) -> str:
    return f"{source}: ignored {count} id, parent_id, thread_id or event fields of the wrong type"


def type_defect(data: object) -> Optional[str]:
    """The first field of a parsed recording whose type the readers cannot use, in words
    (`event 12: http_server_response is a string, expected an object`); None if none."""
    if not isinstance(data, dict):
        return None
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        for key, expected in METADATA.items():
            value = metadata.get(key)
            if value is not None and not isinstance(value, expected):
                return f"metadata.{key} is {kind(value)}, expected {_NAMES[expected]}"
    events = data.get("events")
    for number, event in enumerate(events if isinstance(events, list) else [], start=1):
        if isinstance(event, dict):
            defect = field_defect(event, number)
            if defect is not None:
                return defect
    stack = [data.get("classMap")]
    while stack:
        items = stack.pop()
        if items is None:
            continue
        if not isinstance(items, list):
            return f"classMap: children is {kind(items)}, expected an array"
        for item in items:
            if not isinstance(item, dict):
                return f"classMap: an item is {kind(item)}, expected an object"
            for key in ("name", "type", "location"):
                if item.get(key) is not None and not isinstance(item.get(key), str):
                    return f"classMap: {key} is {kind(item.get(key))}, expected a string"
            stack.append(item.get("children"))
    return None


__all__ = [
    "DEPTH_MESSAGE",
    "DOCUMENT_KEYS",
    "MAX_DEPTH",
    "DepthScan",
    "as_orjson_ints",
    "bad_structure",
    "bytes_defect",
    "clean_structure",
    "cleaned_warning",
    "depth_exceeded",
    "document_defect",
    "dropped_events_warning",
    "event_updates_warning",
    "field_defect",
    "kind",
    "kind_of_raw",
    "lenient_json",
    "maybe_huge_number",
    "maybe_wide_int",
    "orjson_defect",
    "orjson_ints",
    "recursion_room",
    "type_defect",
    "unchecked_defect",
    "utf8_defect",
    "wide_int_risk",
]
