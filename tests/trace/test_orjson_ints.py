"""Integers as orjson reads them on the msgspec paths (`tracetool.trace.checks.orjson_ints`): an
integer outside [-2**63, 2**64) is the float orjson makes of it, whichever reader decoded it;
the byte pre-filter `wide_int_risk` (C and Python) flags every text where the readers differ."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest

from tracetool.trace import slim
from tracetool.trace.checks import (
    as_orjson_ints,
    maybe_wide_int,
    orjson_ints,
    recursion_room,
    wide_int_risk,
)
from tracetool.trace.stream import EventHead

try:
    from tracetool import _speedups  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - CI builds it (tests/stats/test_speedups.py)
    _speedups = None

needs_c = pytest.mark.skipif(_speedups is None, reason="tracetool._speedups is not built")

# the edges of orjson's integers and past them; and a 30-digit id
EDGES = [
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    2**64 + 1,
    -(2**63),
    -(2**63) - 1,
    -(2**64),
    123456789012345678901234567890,
    -123456789012345678901234567890,
    10**308,
    2**1023 + 2**970,  # (a tie: rounds to even)
]


def _msgspec_then_walk(text: bytes) -> Any:
    return orjson_ints(msgspec.json.decode(text), text)


@pytest.mark.parametrize("value", EDGES)
def test_each_edge_reads_as_orjson_reads_it(value: int) -> None:
    for text in (
        str(value).encode(),
        b"[%d]" % value,
        b'{"a":{"b":[1,%d,true]}}' % value,
        b'{"id":%d,"method_id":%d}' % (value, value),
    ):
        expected = orjson.loads(text)
        got = _msgspec_then_walk(text)
        assert got == expected and repr(got) == repr(expected), text
    # (2**63 .. 2**64-1 stays an int: orjson keeps it, and so does msgspec)
    assert isinstance(orjson.loads(str(value)), int) is (-(2**63) <= value < 2**64)


def test_random_wide_integers_round_as_orjson_rounds_them() -> None:
    rng = random.Random(7)
    values = [rng.randint(10 ** (d - 1), 10**d) * rng.choice((1, -1)) for d in range(19, 300)]
    values += [2**m + 2 ** (m - 53) + rng.choice((-1, 0, 1)) for m in range(64, 1023)]
    text = orjson.dumps([str(v) for v in values]).replace(b'"', b"")
    expected = orjson.loads(text)
    got = _msgspec_then_walk(text)
    assert [repr(v) for v in got] == [repr(v) for v in expected]


def test_booleans_floats_and_strings_are_left_alone() -> None:
    text = b'[true,false,1.5e300,"123456789012345678901234567890",-0.0,[],{}]'
    assert repr(_msgspec_then_walk(text)) == repr(orjson.loads(text))
    assert as_orjson_ints(True) is True


def test_deep_nesting_is_walked_without_recursion() -> None:
    depth = 1020  # (past Python's recursion limit: msgspec decodes it with room, as readers do)
    text = b"[" * depth + str(2**70).encode() + b"]" * depth
    with recursion_room():
        decoded = msgspec.json.decode(text)
    got = orjson_ints(decoded, text)
    for _ in range(depth):
        got = got[0]
    assert got == float(2**70) and isinstance(got, float)


def test_structs_are_walked_too() -> None:
    wide = 123456789012345678901234567890
    text = (
        b'[{"id":%d,"event":"call","thread_id":1,"method_id":%d,'
        b'"sql_query":{"sql":"x","database_type":%d}}]' % (wide, wide, wide)
    )
    expected = orjson.loads(text)[0]
    heads = orjson_ints(msgspec.json.decode(text, type=list[EventHead]), text)
    assert heads[0].to_dict() == expected
    calls = orjson_ints(msgspec.json.decode(text, type=list[slim.SlimStruct]), text)
    assert {k: v for k, v in calls[0].to_dict().items() if k in expected} == expected
    minimal = orjson_ints(msgspec.json.decode(text, type=list[slim.MinimalEvent]), text)
    assert minimal[0].method_id == float(wide) and minimal[0].id == float(wide)


# texts that must not be flagged (the common shapes of real recordings) and that must be
NOT_FLAGGED = [
    b'{"elapsed":0.00026363699998910306}',  # a long fraction
    b'{"id":1700000000000000000}',  # 19 digits: within int64
    b'{"v":"314787a4641fdbb7777036880747890031ef51abe261"}',  # digits in a hex string
    b'{"v":"12345678901234567890123"}',  # a string of digits
    b"[1.5e20, 12345678901234567890.5, 12345678901234567890e3]",  # floats
    b"-1234567890123456789",  # 19 digits, above -2**63
    b"-8999999999999999999",
]
FLAGGED = [
    b"12345678901234567890",
    b"-9223372036854775809",
    b"[-9000000000000000000]",  # (a pre-filter: within int64, but it may not be)
    b'{"a":[1,18446744073709551616]}',
    b'{"a": 123456789012345678901234567890}',
    b"[\n\t-12345678901234567890123\n]",
]


@pytest.mark.parametrize("text", NOT_FLAGGED)
def test_plain_numbers_are_not_flagged(text: bytes) -> None:
    assert not maybe_wide_int(text)
    if _speedups is not None:
        assert not _speedups.wide_int_risk(text)


@pytest.mark.parametrize("text", FLAGGED)
def test_wide_integers_are_flagged(text: bytes) -> None:
    assert maybe_wide_int(text)
    if _speedups is not None:
        assert _speedups.wide_int_risk(text)


def _texts(rng: random.Random, count: int) -> list[bytes]:
    texts = []
    for _ in range(count):
        pieces = []
        for _ in range(rng.randint(1, 6)):
            digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 45)))
            pieces.append(
                rng.choice(("", ":", ",", "[", " ", "-", ":-", "x", '"', ".", "e"))
                + digits
                + rng.choice(("", ",", "]", "}", " ", ".5", "e3", "x", '"'))
            )
        pad = rng.randint(0, 40)
        texts.append((" " * pad + "".join(pieces)).encode())
    return texts


@needs_c
def test_c_and_python_pre_filters_agree() -> None:
    rng = random.Random(18)
    for text in _texts(rng, 4000) + NOT_FLAGGED + FLAGGED:
        assert bool(_speedups.wide_int_risk(text)) == maybe_wide_int(text), text
        assert _speedups.wide_int_risk(bytearray(text)) == _speedups.wide_int_risk(text)
        assert _speedups.wide_int_risk(memoryview(text)) == _speedups.wide_int_risk(text)


@needs_c
def test_c_pre_filter_rejects_what_is_not_a_buffer() -> None:
    with pytest.raises(TypeError):
        _speedups.wide_int_risk("12345678901234567890")
    with pytest.raises(TypeError):
        _speedups.wide_int_risk(None)


def test_every_text_where_the_readers_differ_is_flagged() -> None:
    rng = random.Random(5)
    for text in _texts(rng, 4000):
        for candidate in (text, b"[" + text.replace(b'"', b"") + b"]"):
            try:
                expected = orjson.loads(candidate)
                decoded = msgspec.json.decode(candidate)
            except (orjson.JSONDecodeError, msgspec.DecodeError):
                continue
            if repr(decoded) != repr(expected):
                assert wide_int_risk(candidate), candidate
            assert repr(orjson_ints(decoded, candidate)) == repr(expected)


def _recording(method_ids: list[int], size: int = 0) -> bytes:
    events = []
    for number, method_id in enumerate(method_ids):
        events.append(
            b'{"id":%d,"event":"call","thread_id":1,"defined_class":"C","method_id":%d,'
            b'"path":"c.py","lineno":3,"static":false}' % (2 * number + 1, method_id)
        )
        events.append(
            b'{"id":%d,"event":"return","thread_id":1,"parent_id":%d,"elapsed":0.5}'
            % (2 * number + 2, 2 * number + 1)
        )
    filler = b'{"id":0,"event":"other","thread_id":1,"x":"%s"}' % (b"y" * 1000)
    while sum(map(len, events)) < size:
        events.append(filler)
    return b'{"metadata":{},"classMap":[],"events":[' + b",".join(events) + b"]}"


@pytest.mark.parametrize("structs", [False, True])
@pytest.mark.parametrize("minimal", [False, True])
@pytest.mark.parametrize("big", [False, True])
def test_slim_documents_hold_orjsons_values(
    tmp_path: Path, structs: bool, minimal: bool, big: bool
) -> None:
    """Whole and beside the decode (a big ASCII text: the scans run in a thread); the raw
    texts stay the file's own."""
    raw = _recording(EDGES[:-2], slim._BESIDE_MIN + 1000 if big else 0)
    path = tmp_path / "a.appmap.json"
    path.write_bytes(raw)
    expected = [e.get("method_id") for e in orjson.loads(raw)["events"] if e["event"] == "call"]
    doc = slim.load_slim(path, raw=True, structs=structs, minimal=minimal)
    got = [e.get("method_id") for e in doc.events if e.get("event") == "call"]
    assert [repr(v) for v in got] == [repr(v) for v in expected]
    assert b",".join(bytes(text) for text in doc.raw_events or []) in raw
