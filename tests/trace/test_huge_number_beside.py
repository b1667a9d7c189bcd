"""The accelerator's huge-number scan (`_speedups.huge_number_risk`) and the slim reader that
runs it in a thread beside msgspec's decode of a big text: the same verdicts as before."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from tests.conftest import corpus_recordings
from tracetool.errors import TraceFormatError
from tracetool.trace import slim
from tracetool.trace.checks import maybe_huge_number, unchecked_defect

try:
    from tracetool import _speedups  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - CI builds it (tests/stats/test_speedups.py)
    _speedups = None

needs_c = pytest.mark.skipif(_speedups is None, reason="tracetool._speedups is not built")

_ALPHABET = b'0123456789eE.-+:,[]{} x"a\n\t'


def _texts(rng: random.Random, count: int) -> list[bytes]:
    texts = []
    for _ in range(count):
        if rng.random() < 0.5:
            texts.append(bytes(rng.choice(_ALPHABET) for _ in range(rng.choice((1, 4, 9, 30)))))
            continue
        mantissa = bytes(rng.choice(b"0123456789.-+") for _ in range(rng.randint(0, 5)))
        exponent = bytes(rng.choice(b"0123456789+") for _ in range(rng.randint(0, 5)))
        texts.append(
            rng.choice((b":", b"", b"-", b"[", b" ", b"x", b'"'))
            + mantissa
            + rng.choice((b"e", b"E", b"e+", b"E-", b"+e", b"ee"))
            + exponent
            + rng.choice((b"", b",", b"}", b"x", b".", b" ", b"e", b"0e000"))
        )
    return texts


@needs_c
def test_the_scan_flags_what_the_python_prefilter_flags() -> None:
    """Texts up to 8 MB, which the Python function also reads whole: the same answer."""
    rng = random.Random(2026)
    cases = [
        b'{"a":1e999}',
        b'{"a":[1.5E+308]}',
        b'{"a": -2.5e100 }',
        b"1e999",
        b'{"a":"6e839"}',
        b'["x1e999"]',
        b"[1e-999]",
        b"[1e99]",
        b"[12e0400]",
        b"0e00e000",
        b"1+e000",
        b"1e+000",
        b"",
    ]
    for n in (307, 308, 309, 400):
        for before in (b"", b"x", b'"', b"1+", b":-"):
            cases.append(before + b"7" * n + b"]")
            cases.append(before + b"1" * (n // 2) + b"+" + b"2" * (n - n // 2))
    recordings = [path.read_bytes() for path in corpus_recordings()]
    for text in cases + recordings + _texts(rng, 60_000):
        expected = maybe_huge_number(text)
        assert _speedups.huge_number_risk(text) is expected, text
        assert _speedups.huge_number_risk(bytearray(text)) is expected
        assert _speedups.huge_number_risk(memoryview(text)) is expected


@needs_c
def test_the_scan_agrees_wherever_a_number_falls_in_its_windows() -> None:
    """The scan skips 16 bytes at a time and reads exactly only near a suspicious window: a
    candidate at every offset from the start, behind runs of every class, and many candidates
    in one longer text (windows that hold several, or a number across two) get the same
    answer as the Python prefilter."""
    rng = random.Random(18)
    fragments = _texts(rng, 4000)
    fills = (b"x", b"1", b" ", b"-", b".", b"e", b"+", b'"', b"1+", b"9e", b":1")
    for text in fragments[:400]:
        for fill in fills:
            for pad in range(0, 40, 3):
                for case in (fill * pad + text, text + fill * pad, fill * pad + text + b"x" * 20):
                    assert _speedups.huge_number_risk(case) is maybe_huge_number(case), case
    for _ in range(3000):
        pieces = rng.sample(fragments, rng.randint(2, 40))
        glue = rng.choice((b"", b",", b'"', b"x", b" ", b"+"))
        case = glue.join(pieces)
        assert _speedups.huge_number_risk(case) is maybe_huge_number(case), case
    for digits in (307, 308, 309, 330):
        for pad in range(0, 34):
            for before in (b"x", b":", b"1+", b"+"):
                case = b"x" * pad + before + b"5" * (digits - 1) + b"+" + b"5" + b",x"
                assert _speedups.huge_number_risk(case) is maybe_huge_number(case), case
                case = b"x" * pad + before + b"5" * digits + b"x" * 40
                assert _speedups.huge_number_risk(case) is maybe_huge_number(case), case


@needs_c
def test_the_scan_of_a_big_text_misses_nothing_the_pieces_see() -> None:
    """Over 8 MB the Python function reads 1 MB pieces (whose edges only add alarms): whatever
    it flags that the whole-text rule also flags, the scan flags."""
    pad = b'{"a":"' + b"x" * ((8 << 20) - 14) + b'","b":'
    for tail, suspicious in ((b"1e999}", True), (b"1e99}", False)):
        assert _speedups.huge_number_risk(pad + tail) is suspicious
    head = b'{"a":"' + b"x" * ((3 << 20) - 162) + b'","b":'
    for digits, suspicious in ((309, True), (308, False)):
        text = head + b"1" * digits + b',"c":"' + b"y" * (9 << 20) + b'"}'
        assert _speedups.huge_number_risk(text) is suspicious


def _recording(tail_value: bytes, size: int) -> bytes:
    """A recording of about `size` bytes whose last event holds `tail_value` in a field the
    slim reader skips (msgspec does not check it)."""
    event = {
        "id": 1,
        "event": "call",
        "thread_id": 1,
        "defined_class": "A",
        "method_id": "f",
        "path": "a.py",
        "lineno": 1,
        "static": False,
        "receiver": {"class": "A", "value": "x" * 200},
    }
    events = []
    n = 0
    while n < size:
        e = dict(event, id=len(events) * 2 + 1)
        events.append(orjson.dumps(e))
        events.append(
            orjson.dumps(
                {"id": e["id"] + 1, "event": "return", "thread_id": 1, "parent_id": e["id"]}
            )
        )
        n += len(events[-1]) + len(events[-2])
    last = orjson.dumps(
        {"id": len(events) + 1, "event": "call", "thread_id": 1, "defined_class": "B"}
    )
    last = last[:-1] + b',"receiver":{"class":"B","value":' + tail_value + b"}}"
    return b'{"metadata":{},"classMap":[],"events":[' + b",".join([*events, last]) + b"]}"


@needs_c
@pytest.mark.parametrize("structs", [False, True])
def test_a_big_text_gets_the_verdict_it_got_before(tmp_path: Path, structs: bool) -> None:
    for value, refused in ((b"1e999", True), (b"1" * 400, True), (b"1e300", False), (b"7", False)):
        raw = _recording(value, slim._BESIDE_MIN + 1000)
        assert len(raw) >= slim._BESIDE_MIN and raw.isascii()
        before = unchecked_defect(raw)
        assert (before is not None) is refused
        path = tmp_path / "big.trace.json"
        path.write_bytes(raw)
        if refused:
            with pytest.raises(TraceFormatError) as info:
                slim.load_slim(path, extras=False, structs=structs)
            assert str(info.value) == f"{path}: {before}"
        else:  # a false alarm of the scan (1e300 is a double): read as before
            doc = slim.load_slim(path, extras=False, structs=structs)
            assert len(doc.events) == raw.count(b'"event"')


@needs_c
def test_a_big_text_that_msgspec_refuses_reports_the_number_first(tmp_path: Path) -> None:
    """A huge number and a grammar error after it: the number is named, as before."""
    raw = _recording(b"1e999", slim._BESIDE_MIN + 1000)[:-2] + b",,]}"
    path = tmp_path / "bad.trace.json"
    path.write_bytes(raw)
    with pytest.raises(TraceFormatError) as info:
        slim.load_slim(path)
    assert str(info.value) == f"{path}: {unchecked_defect(raw)}"


@needs_c
def test_unchecked_defect_scans_bytes_in_c_with_the_same_verdicts() -> None:
    """`unchecked_defect` (the block reader's, small slim reads') asks the C scan of a bytes
    and the Python prefilter of anything else: the same verdicts either way."""
    from tracetool.trace import checks

    assert checks.huge_number_scan() is _speedups.huge_number_risk
    rng = random.Random(7)
    for text in [*_texts(rng, 3000), b'{"a":1e999}', b"[" + b"1" * 400 + b"]", b"[1e300]"]:
        expected = checks.utf8_defect(text) or (
            checks.bytes_defect(text) if maybe_huge_number(text) else None
        )
        assert unchecked_defect(text) == expected
        assert unchecked_defect(bytearray(text)) == expected
