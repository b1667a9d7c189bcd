"""The shared reading rules (tracetool.trace.checks): the byte-level checks agree with orjson."""

from __future__ import annotations

import random

import orjson
import pytest

from tracetool.trace.checks import (
    MAX_DEPTH,
    DepthScan,
    bytes_defect,
    document_defect,
    kind,
    kind_of_raw,
    lenient_json,
    maybe_huge_number,
    utf8_defect,
)


def _depth(value: object) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_depth_scan_is_exact_across_chunks_strings_and_escapes(chunk: int) -> None:
    rng = random.Random(chunk)
    for _ in range(40):
        value: object = rng.choice(['x\\"[', "\\\\", "]]}}", '"{[', "plain"])
        for _ in range(rng.randint(0, 30)):
            value = rng.choice([[value], {"k[": value, "q\\": "\\"}, [1, "]", value]])
        text = orjson.dumps({"events": [value]})
        scan = DepthScan()
        for at in range(0, len(text), chunk):
            scan.feed(text[at : at + chunk])
        assert scan.deepest == _depth(orjson.loads(text))
        assert scan.depth == 0


def test_depth_limit_is_orjsons() -> None:
    at_limit = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert bytes_defect(at_limit) is None
    assert bytes_defect(b"[" + at_limit + b"]") == f"nested deeper than {MAX_DEPTH} levels"


@pytest.mark.parametrize(
    ("text", "suspicious"),
    [
        (b'{"a":1e999}', True),
        (b'{"a":[1.5E+308]}', True),
        (b'{"a": -2.5e100 }', True),
        (b"[" + b"1" * 309 + b"]", True),
        (b"1e999", True),
        (b'{"a":"6e839"}', False),  # a hex digest
        (b'["x1e999"]', False),
        (b"[1e-999]", False),
        (b"[1e99]", False),
    ],
)
def test_huge_number_prefilter(text: bytes, suspicious: bool) -> None:
    assert maybe_huge_number(text) is suspicious


def test_huge_number_prefilter_across_its_pieces() -> None:
    """Bytes up to 8 MB are mapped at once, anything else in overlapping 1 MB pieces: a number
    across a piece boundary (here from 2 bytes before it, or 300 digits long) is still seen."""
    pad = b'{"a":"' + b"x" * ((8 << 20) - 14) + b'","b":'
    for tail, suspicious in ((b"1e999}", True), (b"1e99}", False)):
        text = pad + tail
        for raw in (text, memoryview(text), bytearray(text), text[-300:]):
            assert maybe_huge_number(raw) is suspicious
    for at in (3 << 20, (3 << 20) - 150):  # a 309-digit number from 150 bytes before a boundary
        head = b'{"a":"' + b"x" * (at - 150 - 12) + b'","b":'
        for digits, suspicious in ((309, True), (308, False)):
            text = head + b"1" * digits + b',"c":"' + b"y" * (9 << 20) + b'"}'
            assert maybe_huge_number(text) is suspicious


def test_every_number_orjson_refuses_is_suspicious() -> None:
    for text in (b"[1e309]", b"[-1" + b"0" * 320 + b"]", b"[0.5E+400]", b"[12e0400]"):
        assert bytes_defect(text) is not None and "number" in (bytes_defect(text) or "")
        assert maybe_huge_number(text)


def test_utf8_and_kinds() -> None:
    assert utf8_defect("é".encode()) is None
    assert utf8_defect(b"ab\xed\xa0\x80") == "not valid UTF-8 (byte 2: invalid continuation byte)"
    assert [kind(v) for v in (None, 1, 1.5, True, "", [], {})] == [
        "null",
        "a number",
        "a number",
        "a boolean",
        "a string",
        "an array",
        "an object",
    ]
    assert [kind_of_raw(t) for t in (b" null", b"-1", b"true", b'"x"', b"[", b"{")] == [
        "null",
        "a number",
        "a boolean",
        "a string",
        "an array",
        "an object",
    ]
    assert document_defect({"events": "a number"}) == (
        "not a trace document (events is a number, expected an array)"
    )
    assert document_defect({"metadata": "null"}) is None


@pytest.mark.parametrize(
    ("text", "lenient"),
    [
        (b'["\\ud83d\\ude00"]', False),  # a surrogate pair: valid
        (b'["\\u00e9"]', False),
        (b'["\\ud800"]', True),
        (b'["\\udc00"]', True),
        (b'["\\ud800x\\udc00"]', True),
        (b"[1,\x0c2]", True),
        (b"[1,\x0b2]", True),
    ],
)
def test_what_ijson_reads_and_orjson_refuses(text: bytes, lenient: bool) -> None:
    assert lenient_json(text) is lenient
    assert (bytes_defect(text) is not None) is lenient
