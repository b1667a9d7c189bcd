"""Reading a few events out of a recording's bytes without parsing the rest.

`extract_events(raw, *keys)` returns, per key, the event objects that hold that key at their top
level (e.g. `http_server_request`): the HTTP exchanges are a sliver of a recording, and decoding
only them is many times cheaper than building every event. The document is first validated as a
whole by simdjson (`is_recording`: valid JSON, an object with an `events` array — the same
files the full reader accepts), which costs a fraction of parsing. Then each event is found by
one fact of JSON text: a `"` inside a string is always escaped, so an unescaped `"key"`
followed by `:` and preceded by `{` or `,` is a real object key; its event is the innermost `{`
before it whose object (decoded by the json module's C scanner from there) extends past it.

It returns None — and the caller parses the whole file instead — whenever it cannot be sure:
pysimdjson missing, an invalid document (so the full reader reports it), `eventUpdates` (which
replace events), or an ambiguous match. So this is a shortcut to the same events, never a
different reading. Stdlib plus optional pysimdjson; Python 3.9 syntax.
"""

from __future__ import annotations

import json
from typing import Any, Optional

WS = b" \t\r\n"
_DECODER = json.JSONDecoder()
_REACH = 1024 * 1024  # an event's other keys never come a megabyte before the one we look for


def key_value_offset(buf: bytes, at: int, length: int) -> Optional[int]:
    """If the string at `at` is an object key (`{` or `,` before, `:` after), where its value is."""
    before = at - 1
    while before >= 0 and buf[before] in WS:
        before -= 1
    if before < 0 or buf[before] not in b"{,":
        return None
    after = at + length
    while after < len(buf) and buf[after] in WS:
        after += 1
    if after >= len(buf) or buf[after] != ord(":"):
        return None
    return after + 1


def decode_at(raw: bytes, start: int) -> Optional[tuple[Any, int]]:
    """The JSON value starting at byte `start` and the byte offset where it ends, or None."""
    while start < len(raw) and raw[start] in WS:
        start += 1
    window = 4096
    while True:
        text = raw[start : start + window].decode("utf-8", "replace")
        try:
            value, end = _DECODER.raw_decode(text)
            break
        except json.JSONDecodeError as exc:
            cut = exc.pos >= len(text) - 64 or exc.msg.startswith("Unterminated string")
            if cut and start + window < len(raw):
                window *= 4  # cut off by the window: read more
                continue
            return None
    return value, start + (end if text.isascii() else len(text[:end].encode("utf-8")))


_PARSER: Any = None


def is_recording(raw: bytes) -> Optional[bool]:
    """Whether `raw` is valid JSON whose top level is an object with an `events` array.

    Checked by simdjson (pysimdjson) at GB/s without building Python objects; None when
    pysimdjson is not installed (then nothing is known and the caller parses the file).
    """
    global _PARSER
    if _PARSER is None:
        try:
            import simdjson
        except ImportError:
            _PARSER = False
            return None
        _PARSER = simdjson.Parser()
    if _PARSER is False:
        return None
    import simdjson

    try:
        doc = _PARSER.parse(raw)
    except (ValueError, RuntimeError):  # invalid JSON or UTF-8; RuntimeError: a huge integer
        return False
    try:
        return isinstance(doc, simdjson.Object) and isinstance(doc.get("events"), simdjson.Array)
    finally:
        del doc  # the parser is reused: no proxy may outlive this call


def extract_events(raw: bytes, *keys: str) -> Optional[dict[str, list[dict[str, Any]]]]:
    """Per key, the events holding it at their top level; None to say "parse it all"."""
    if b'"eventUpdates"' in raw or not is_recording(raw):
        return None
    found: dict[str, list[dict[str, Any]]] = {}
    for key in keys:
        events = _events_with_key(raw, key)
        if events is None:
            return None
        found[key] = events
    return found


def _events_with_key(raw: bytes, key: str) -> Optional[list[dict[str, Any]]]:
    pattern = b'"' + key.encode() + b'"'
    out: list[dict[str, Any]] = []
    at = raw.find(pattern)
    while at != -1:
        if key_value_offset(raw, at, len(pattern)) is None:
            at = raw.find(pattern, at + 1)  # the word as a string value, not a key
            continue
        found = _enclosing_object(raw, at, key)
        if found is None:
            return None
        event, end = found
        out.append(event)
        at = raw.find(pattern, end)
    return out


def _enclosing_object(raw: bytes, at: int, key: str) -> Optional[tuple[dict[str, Any], int]]:
    start = at
    floor = max(0, at - _REACH)
    while True:
        start = raw.rfind(b"{", floor, start)
        if start < 0:
            return None
        nxt = start + 1
        while nxt < at and raw[nxt] in WS:
            nxt += 1
        if raw[nxt] != ord('"'):
            continue  # an empty object, or a brace inside a string
        decoded = decode_at(raw, start)
        if decoded is None:
            continue
        value, end = decoded
        if end > at:
            if isinstance(value, dict) and key in value:
                return value, end
            return None  # an object spans the key without holding it: not an event's key
