"""The optional C accelerator of directory-mode stats (`tracetool._speedups`, used by
`tracetool.stats._scan`) gives exactly the pure-Python path's sums, or declines; it never crashes
on any bytes."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import orjson
import pytest

from tests.conftest import corpus_recordings, make_corpus
from tests.index.test_overhead import _document
from tracetool.errors import TraceToolError
from tracetool.stats import _collect, _scan, directory_stats
from tracetool.stats._names import process_names
from tracetool.trace.checks import MAX_DEPTH
from tracetool.trace.extract import is_recording
from tracetool.trace.stream import UNSET

try:
    from tracetool import _speedups  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - a build without a compiler
    _speedups = None

needs_c = pytest.mark.skipif(_speedups is None, reason="tracetool._speedups is not built")
FAST = _scan._NESTED_SUMS


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="only CI must have the accelerator")
def test_accelerator_is_built_on_ci() -> None:
    """On CI a missing accelerator fails the run (elsewhere its tests are skipped)."""
    assert _speedups is not None
    assert callable(_speedups.nested_sums)


def _overhead(path: Path, raw: bytes, fast: Any) -> str:
    """`file_overhead` of the bytes as JSON (or its refusal), with the accelerator or not."""
    saved = _scan._NESTED_SUMS
    _scan._NESTED_SUMS = fast
    try:
        return orjson.dumps(_collect.file_overhead(path, raw)).decode()
    except TraceToolError as exc:
        return f"refused: {exc}"
    finally:
        _scan._NESTED_SUMS = saved


def _scanned(raw: bytes) -> Optional[Any]:
    names = process_names()
    return _scan.scanned_sums(raw, _collect._other_key, names.event_function, names.chain_names)


def _strict(raw: bytes) -> Any:
    """The C's answer validating the bytes itself (as `scanned_sums` calls it for stats)."""
    return FAST(raw, MAX_DEPTH, UNSET, None, None, True)


def _as_simdjson(raw: bytes) -> bool:
    """Whether the strict scan took the bytes; it takes only what simdjson accepts (the check
    it replaces), with the answer of the scan that trusts the bytes."""
    found = _strict(raw)
    if found is None:
        return False
    assert is_recording(raw) is True, raw[:300]
    assert found == FAST(raw, MAX_DEPTH, UNSET), raw[:300]
    return True


def _same(path: Path, raw: bytes) -> bool:
    """Whether the accelerated path gives the pure-Python answer; True when it took the file."""
    path.write_bytes(raw)
    assert _overhead(path, raw, FAST) == _overhead(path, raw, None), raw[:300]
    return _scanned(raw) is not None


@needs_c
def test_shared_corpus(corpus: Path, tmp_path: Path) -> None:
    """The shared corpus (Ruby, Java, JS, Python agents): the same sums, nearly all scanned."""
    recordings = corpus_recordings()
    assert len(recordings) >= 50
    taken = 0
    for path in recordings:
        raw = path.read_bytes()
        assert _overhead(path, raw, FAST) == _overhead(path, raw, None), path
        taken += _scanned(raw) is not None
    assert taken >= len(recordings) // 2


@needs_c
def test_generated_corpus_and_stats_json(tmp_path: Path) -> None:
    """Recordings of the shared generator: all scanned, the same `directory_stats` (the
    `stats --json` document) with and without the accelerator."""
    paths = make_corpus(tmp_path / "c", 12, 3, 7)
    for path in paths:
        assert _scanned(path.read_bytes()) is not None, path
        raw = path.read_bytes()
        assert _overhead(path, raw, FAST) == _overhead(path, raw, None), path
    saved = _scan._NESTED_SUMS
    try:
        fast = directory_stats(tmp_path / "c", workers=1, query_db=tmp_path / "none.db")
        _scan._NESTED_SUMS = None
        slow = directory_stats(tmp_path / "c", workers=1, query_db=tmp_path / "none.db")
    finally:
        _scan._NESTED_SUMS = saved
    assert fast == slow
    assert fast.functions


@needs_c
def test_random_recordings(tmp_path: Path) -> None:
    """The random recordings of the index's own differential test (threads, odd and reused
    ids, returns naming another call, eventUpdates, SQL, HTTP, odd elapsed values)."""
    rng = random.Random(1818)
    path = tmp_path / "r.trace.json"
    taken = 0
    for _ in range(1500):
        raw = orjson.dumps(_document(rng))
        taken += _same(path, raw)
        # (the strict scan declines none of these that simdjson and the plain scan take)
        plain = is_recording(raw) is True and FAST(raw, MAX_DEPTH, UNSET) is not None
        assert _as_simdjson(raw) == plain
    assert 100 < taken < 1500


# -- hand-made recordings: a field at a time ------------------------------------------------

_CLASS_MAP = (
    b'[{"name":"app","type":"package","children":[{"name":"C","type":"class","children":['
    b'{"name":"a","type":"function","location":"p.rb:1","static":false},'
    b'{"name":"b","type":"function","location":"p.rb:2","static":true}]}]}]'
)


def _object(members: list[tuple[bytes, bytes]]) -> bytes:
    return b"{" + b",".join(b'"' + k + b'":' + v for k, v in members) + b"}"


def _call(number: int, **fields: bytes) -> list[tuple[bytes, bytes]]:
    members = [(b"id", str(number).encode()), (b"event", b'"call"'), (b"thread_id", b"1")]
    members += [(b"defined_class", b'"C"'), (b"method_id", b'"a"'), (b"path", b'"p.rb"')]
    members += [(b"lineno", b"1"), (b"static", b"false")]
    return _replace(members, fields)


def _return(number: int, parent: int, **fields: bytes) -> list[tuple[bytes, bytes]]:
    members = [(b"id", str(number).encode()), (b"event", b'"return"'), (b"thread_id", b"1")]
    members += [(b"parent_id", str(parent).encode()), (b"elapsed_instrumentation", b"0.25")]
    return _replace(members, fields)


def _replace(members: list[tuple[bytes, bytes]], fields: dict[str, bytes]) -> Any:
    out = [(k, fields.get(k.decode(), v)) for k, v in members]
    out += [(k.encode(), v) for k, v in fields.items() if k.encode() not in dict(members)]
    return [(k, v) for k, v in out if v != b"MISSING"]


def _recording(events: list[bytes], head: bytes = b'"version":"1.12",') -> bytes:
    return b"{" + head + b'"classMap":' + _CLASS_MAP + b',"events":[' + b",".join(events) + b"]}"


def _pair(call: dict[str, bytes], ret: dict[str, bytes]) -> list[bytes]:
    return [
        _object(_call(1, **call)),
        _object(_call(2, method_id=b'"b"', lineno=b"2", static=b"true")),
        _object(_return(3, 2, elapsed_instrumentation=b"1e-05")),
        _object(_return(4, 1, **ret)),
        _object(_call(5)),
        _object(_return(6, 5, elapsed_instrumentation=b"0.5")),
    ]


_VALUES = [
    b"MISSING",
    b"null",
    b"true",
    b"false",
    b"0",
    b"-0",
    b"1",
    b"2",
    b"-7",
    b"1.5",
    b"1.0",
    b"1e2",
    b"-0.0",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775808",
    b"18446744073709551616",
    b"1e999",
    b"1e-400",
    b"0.1000000000000000055511151231257827",
    b"123456789.123456789e-3",
    b'""',
    b'"1"',
    b'"a"',
    b'"b"',
    b'"call"',
    b'"return"',
    b'"\\u0061"',
    b'"\\u0063all"',
    b'"a\\"b\\\\c\\/d\\n\\t\\b\\f\\r"',
    b'"\\ud83d\\ude00"',
    b'"\\ud800"',
    b'"\\udc00x"',
    b'"\\uD83D\\uDE00"',
    b'"caf\xc3\xa9"',
    b'"\xff"',
    b"[]",
    b"[1]",
    b"{}",
    b'{"a":1}',
    b'{"sql":"SELECT 1"}',
    b'{"request_method":"get","path_info":"/x"}',
]

_CALL_FIELDS = ["id", "event", "thread_id", "parent_id", "defined_class", "method_id", "path"]
_CALL_FIELDS += ["lineno", "static", "sql_query", "http_server_request", "http_client_request"]
_CALL_FIELDS += ["elapsed_instrumentation", "message", "events"]
_RETURN_FIELDS = ["id", "event", "thread_id", "parent_id", "elapsed_instrumentation"]


@needs_c
@pytest.mark.parametrize("field", _CALL_FIELDS)
def test_odd_values_in_a_call(tmp_path: Path, field: str) -> None:
    path = tmp_path / "r.trace.json"
    for value in _VALUES:
        _same(path, _recording(_pair({field: value}, {})))


@needs_c
@pytest.mark.parametrize("field", _RETURN_FIELDS)
def test_odd_values_in_a_return(tmp_path: Path, field: str) -> None:
    path = tmp_path / "r.trace.json"
    for value in _VALUES:
        _same(path, _recording(_pair({}, {field: value})))


_SQL = [
    b'{"sql":"SELECT \\"a\\" FROM t","database_type":"postgres"}',
    b'{"sql":"SELECT 1"}',
    b'{"sql":null,"database_type":null}',
    b'{"sql":"","database_type":""}',
    b'{"database_type":"sqlite","sql":"SELECT 1","server_version":"3"}',
    b'{"sql":"SELECT 1","sql":"SELECT 2"}',
    b'{"sql":7}',
    b'{"sql":["SELECT 1"]}',
    b'{"s\\u0071l":"SELECT 1"}',
    b'"SELECT 1"',
    b"null",
]
_HTTP = [
    b'{"request_method":"GET","path_info":"/a/1","normalized_path_info":"/a/{id}"}',
    b'{"request_method":"GET","path_info":"/a/2","normalized_path_info":"/a/{id}"}',
    b'{"request_method":"get","path_info":"/a/{id}"}',
    b'{"request_method":"GET","path_info":"/a/1","normalized_path_info":""}',
    b'{"request_method":"GET","path_info":"/a/1","normalized_path_info":null}',
    b'{"request_method":"GET","path_info":"/a/1","normalized_path_info":["/a","b"]}',
    b'{"request_method":"POST","url":"http://h/x"}',
    b'{"request_method":"GET","path_info":"/a/1","headers":{"X":"{[\\"]}"}}',
    b"{}",
    b"null",
    b'"GET /"',
]


@needs_c
def test_sql_and_http_calls(tmp_path: Path) -> None:
    """SQL and HTTP calls, alone and mixed (keys that differ in the bytes but not in Python)."""
    path = tmp_path / "r.trace.json"
    rng = random.Random(5)
    kinds = [("sql_query", v) for v in _SQL]
    kinds += [("http_server_request", v) for v in _HTTP]
    kinds += [("http_client_request", v) for v in _HTTP]
    for field, value in kinds:
        _same(path, _recording(_pair({field: value}, {})))
    for _ in range(300):
        events = []
        for number in range(1, 20, 2):
            field, value = rng.choice(kinds)
            events.append(_object(_call(number, **{field: value})))
            events.append(_object(_return(number + 1, number, elapsed_instrumentation=b"0.1")))
        _same(path, _recording(events))


@needs_c
def test_documents_that_are_not_plain(tmp_path: Path) -> None:
    """eventUpdates, non-object events, duplicate keys, escapes, BOM, empty and odd documents:
    declined or the same sums."""
    path = tmp_path / "r.trace.json"
    plain = _pair({}, {})
    call = _object(_call(1))
    documents = [
        b"",
        b" ",
        b"{}",
        b"[]",
        b"null",
        b'{"events":[]}',
        b'{"events":null}',
        b'{"classMap":[]}',
        b'{"metadata":{}}',
        b'{"events":[],"events":[]}',
        b'{"events":{}}',
        b'{"events":[],"classMap":{}}',
        b'{"events":[],"classMap":null,"metadata":null}',
        b'{"events":[],"metadata":[]}',
        b"\xef\xbb\xbf" + _recording(plain),
        _recording(plain) + b" x",
        _recording(plain) + b"\n",
        b" \n" + _recording(plain),
        _recording(plain, b'"eventUpdates":{"1":' + call + b"},"),
        _recording(plain, b'"eventUpdates":null,'),
        _recording(plain, b'"ev\\u0065nts":[],'),
        _recording(plain, b'"classMap":[],'),
        _recording([*plain, b"1", b'"x"', b"null"]),
        _recording([b"[]", *plain]),
        _recording([call[:-1] + b',"event":"return"}', *plain]),
        _recording([call[:-1] + b',"id":9}', *plain]),
        _recording([call[:-1] + b',"ev\\u0065nt":"return"}', *plain]),
        _recording([call[:-1] + b',"other":1,"other":2}', *plain]),
        _recording(plain).replace(b":", b" : ").replace(b",", b" ,\n\t"),
        _recording([_object(_call(1)), _object(_call(1)), *plain]),
        _recording([_object(_return(1, 9)), *plain]),
        _recording([_object(_return(1, 9, parent_id=b"MISSING")), *plain]),
        _recording([_object(_call(1, thread_id=b"2")), _object(_return(2, 1)), *plain]),
        _recording([_object(_call(1, thread_id=b'"1"')), _object(_return(2, 1, thread_id=b'"1"'))]),
        _recording([_object(_call(1, id=b'"1"')), _object(_return(2, 1))]),
    ]
    for depth in (MAX_DEPTH - 5, MAX_DEPTH - 3, MAX_DEPTH + 5):
        deep = b"[" * depth + b"]" * depth
        documents.append(_recording([_object(_call(1, message=deep)), *plain]))
        documents.append(b'{"events":[],"metadata":{"x":' + deep + b"}}")
    for document in documents:
        _same(path, document)


def _mutations(rng: random.Random, raw: bytes) -> Iterator[bytes]:
    special = b'"\\{}[],:0-.eE \xff\x00u'
    for _ in range(40):
        at = rng.randrange(len(raw) + 1)
        choice = rng.random()
        if choice < 0.25:
            yield raw[:at]
        elif choice < 0.5:
            yield raw[:at] + bytes([rng.randrange(256)]) + raw[at + 1 :]
        elif choice < 0.75:
            yield raw[:at] + bytes([rng.choice(special)]) + raw[at:]
        else:
            yield raw[:at] + raw[at + rng.randrange(1, 40) :]


@needs_c
def test_mutated_bytes(tmp_path: Path) -> None:
    """Truncated, flipped, inserted and cut bytes of scanned recordings: the C returns a result
    or None on any of them (called directly, without the simdjson gate) and, through the gate,
    the pure-Python answer."""
    rng = random.Random(99)
    path = tmp_path / "r.trace.json"
    bases = [_recording(_pair({}, {})), _recording(_pair({"sql_query": _SQL[0]}, {}))]
    bases += [orjson.dumps(_document(rng)) for _ in range(20)]
    for base in bases:
        for raw in _mutations(rng, base):
            found = FAST(raw, MAX_DEPTH, UNSET)
            assert found is None or isinstance(found, tuple)
            _as_simdjson(raw)
            _same(path, raw)


@needs_c
def test_any_bytes_never_crash() -> None:
    """Random byte strings, and random JSON-ish tokens, at every depth limit."""
    rng = random.Random(7)
    tokens = [b"{", b"}", b"[", b"]", b",", b":", b'"', b'"events"', b'"id"', b'"event"']
    tokens += [b'"call"', b'"return"', b"1", b"-", b"\\", b"\\u", b"\\ud800", b"null", b" "]
    for _ in range(3000):
        if rng.random() < 0.5:
            raw = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
        else:
            raw = b'{"events":[' + b"".join(rng.choice(tokens) for _ in range(rng.randrange(80)))
        for depth in (-1, 0, 3, MAX_DEPTH):
            for strict in (False, True):
                found = FAST(raw, depth, UNSET, None, None, strict)
                assert found is None or isinstance(found, tuple)
    with pytest.raises(TypeError):
        FAST("not bytes", MAX_DEPTH, UNSET)


def test_switched_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETOOL_NO_SPEEDUPS", "1")
    assert _scan._load() is None
    monkeypatch.setenv("TRACETOOL_NO_SPEEDUPS", "")
    assert (_scan._load() is not None) == (_speedups is not None)


_CLASS_ITEMS = [
    b'{"name":"C","type":"class","children":[{"name":"a","type":"function","location":"p.rb:1"}]}',
    b'{"type":"class","name":"C","children":[{"name":"b","type":"function","location":"p.rb:1",'
    b'"static":true}]}',
    b'{"name":"a","type":"function","location":"p.rb:1","children":['
    b'{"name":"a","type":"function","location":"p.rb:2"}]}',
    b'{"name":"a","type":"function","location":"p.rb:2"}',
    b'{"name":"a","type":"function","location":"p.\\u0072b:1"}',
    b'{"name":"\\u0061","type":"function","location":"p.rb:1"}',
    b'{"name":"a","type":"function","location":"p.rb:1","static":null}',
    b'{"name":"a","type":"function","location":"p.rb:1","static":1}',
    b'{"name":"a","type":"function","location":"p.rb:1","name":"b"}',
    b'{"name":"a","type":"function","location":""}',
    b'{"name":"a","type":"function","location":null}',
    b'{"name":"a","type":"function","location":7}',
    b'{"name":"a","type":"function"}',
    b'{"name":null,"type":"function","location":"p.rb:1"}',
    b'{"type":"function","location":"p.rb:1"}',
    b'{"name":"a","location":"p.rb:1"}',
    b'{"name":"P","type":"","children":[{"name":"a","type":"function","location":"p.rb:1"}]}',
    b'{"name":"P","type":null,"children":[{"name":"a","type":"function","location":"p.rb:1"}]}',
    b'{"name":"P","type":7,"children":[]}',
    b'{"name":"P","children":{"name":"a","type":"function","location":"p.rb:1"}}',
    b'{"name":"P","children":[]}',
    b'{"name":"P","children":null}',
    b'"not an object"',
    b"[]",
    b"null",
    b'{"name":"P","children":[' * 70 + b"{}" + b"]}" * 70,
]


@needs_c
def test_class_map_names(tmp_path: Path) -> None:
    """Function calls named from the classMap by the C (`_names.RecordingNames._locations`
    read in C): every shape of classMap item, several at one location, in every order."""
    path = tmp_path / "r.trace.json"
    rng = random.Random(3)
    calls = [
        {},
        {"method_id": b'"b"'},
        {"lineno": b'"1"'},
        {"lineno": b"2"},
        {"method_id": b"7"},
        {"path": b"MISSING"},
        {"lineno": b"null"},
        {"defined_class": b'"D"', "static": b"true"},
    ]
    for _ in range(400):
        items = [rng.choice(_CLASS_ITEMS) for _ in range(rng.randrange(5))]
        class_map = b"[" + b",".join(items) + b"]"
        events = []
        for number in range(1, 13, 2):
            events.append(_object(_call(number, **rng.choice(calls))))
            events.append(_object(_return(number + 1, number, elapsed_instrumentation=b"0.1")))
        raw = b'{"classMap":' + class_map + b',"events":[' + b",".join(events) + b"]}"
        _same(path, raw)


@needs_c
def test_chains_are_shared_between_recordings(tmp_path: Path) -> None:
    """A chain met again is the object met first (a cache the caller keeps), and gives the
    same names."""
    raw = _recording(_pair({}, {}))
    chains: dict[bytes, Any] = {}
    first = FAST(raw, MAX_DEPTH, UNSET, chains)
    again = FAST(raw, MAX_DEPTH, UNSET, chains)
    assert first is not None and again is not None and chains
    key = ("C", "a", "p.rb", 1, False)
    chain = first[0][key][3]
    assert chain == (("package", "app"), ("class", "C"), ("function", "a", False, "p.rb:1"))
    assert again[0][key][3] is chain
    with pytest.raises(TypeError):
        FAST(raw, MAX_DEPTH, UNSET, [])
    with pytest.raises(TypeError):
        FAST(raw, MAX_DEPTH, UNSET, None, len)
    names: dict[bytes, Any] = {}
    named = FAST(raw, MAX_DEPTH, UNSET, names, lambda chain: "/".join(c[1] for c in chain))
    assert named[0][key][3] == "app/C/a"
    assert "app/C/a" in names.values()


@needs_c
def test_index_sums_from_its_parse(corpus: Path, tmp_path: Path) -> None:
    """The index sums a recording it parsed by the C without simdjson's check (orjson's parse
    was as strict): the pure-Python answer of stats, or None where stats refuses the file."""
    from tracetool.index import worker
    from tracetool.trace import parse

    rng = random.Random(4)
    path = tmp_path / "r.trace.json"
    raws = [p.read_bytes() for p in corpus_recordings()[:20]]
    raws += [orjson.dumps(_document(rng)) for _ in range(400)]
    # (an integer past 64 bits is left out: orjson reads it as a float, so the index's own
    # pairing of the parsed dicts, where the C declines, names a method_id of one otherwise than
    # stats, as it did before the accelerator)
    values = [v for v in _VALUES if v != b"18446744073709551616"]
    raws += [_recording(_pair({field: value}, {})) for field in _CALL_FIELDS for value in values]
    checked = 0
    for raw in raws:
        path.write_bytes(raw)
        try:
            doc = parse(raw, str(path))
        except TraceToolError:
            continue
        expected = _overhead(path, raw, None)
        found = worker._overhead(str(path), raw, doc)
        assert found == (None if expected.startswith("refused") else expected), raw[:300]
        checked += 1
    assert checked > 400


# Strings whose escapes the C skips by a 64-byte mask (`skip_container`) or 16 bytes at a time
# (`scan_string`): backslash runs before a quote, escaped quotes and brackets, a string that
# ends in a backslash
_TRICKY = ["\\" * k + '"' for k in range(6)]
_TRICKY += ['\\"}]', '{"a":"}"}', "]}[{", "\\", "\\\\\\", 'x\\"\\\\"', "\u00e9\\u0022"]


@needs_c
def test_escapes_at_every_block_offset(tmp_path: Path) -> None:
    """A tricky string at every offset of a 64-byte block, in a skipped container and as a
    skipped field: scanned, with the pure-Python sums; cut anywhere, never a crash."""
    path = tmp_path / "r.trace.json"
    for tricky in _TRICKY:
        for pad in range(0, 140, 3):
            text = orjson.dumps("p" * pad + tricky)
            parameters = b'[{"value":' + text + b',"name":"}"},{"name":"x\\\\"}]'
            raw = _recording(
                _pair({"parameters": parameters, "message": text}, {"return_value": parameters})
            )
            assert _same(path, raw), raw
        # truncated within and around the string (called directly: no simdjson gate)
        for cut in range(len(raw) - 400, len(raw)):
            found = FAST(raw[:cut], MAX_DEPTH, UNSET)
            assert found is None or isinstance(found, tuple)
            assert _strict(raw[:cut]) is None


@needs_c
def test_call_ids_that_stop_rising(tmp_path: Path) -> None:
    """Integer call ids that rise are checked without a table until one does not: a lower
    new id is scanned, a repeated one (after rising, or a string and an int) declines."""
    path = tmp_path / "r.trace.json"

    def nested(ids: list[bytes]) -> bytes:
        events = [_object(_call(0, id=number)) for number in ids]
        events += [_object(_return(100 + i, 0, parent_id=b"null")) for i in range(len(ids))]
        return _recording(events)

    assert _same(path, nested([b"5", b"3", b"4", b"1"]))
    assert _same(path, nested([b"-9223372036854775808", b"1", b"2"]))
    assert _same(path, nested([b"1", b'"1"', b"2"]))
    assert not _same(path, nested([b"1", b"2", b"3", b"2"]))
    assert not _same(path, nested([b"1", b"7", b'"x"', b"7"]))


# -- the strict scan's validation (what simdjson checked before it) -------------------------

# JSON texts simdjson refuses (or the strict scan, tighter), each tried as every kind of value
# the scan reads or skips
_REFUSED = [
    b'"\xff"',
    b'"\x80"',
    b'"\xc0\x80"',
    b'"\xc1\xbf"',
    b'"\xe0\x80\x80"',
    b'"\xed\xa0\x80"',
    b'"\xed\xbf\xbf"',
    b'"\xf0\x80\x80\x80"',
    b'"\xf4\x90\x80\x80"',
    b'"\xf5\x80\x80\x80"',
    b'"\xe2\x82"',
    b'"\xe2\x82x"',
    b'"\xc3"',
    b'"a\x01b"',
    b'"\x00"',
    b'"\t"',
    b'"\n"',
    b'"\x1f"',
    b'"\\ud800"',
    b'"\\udc00"',
    b'"\\ud800\\u0041"',
    b'"\\ud800\\ud800"',
    b'"\\udbff"',
    b'"\\x"',
    b'"\\u12g4"',
    b'"\\u12"',
    b'"\\\'"',
    b'"\\a"',
    b'"\\0"',
    b"18446744073709551616",
    b"99999999999999999999",
    b"-9223372036854775809",
    b"100000000000000000000",
    b"1e400",
    b"-1e400",
    b"1.5e999999",
    b"1" + b"0" * 400 + b".0",
    b"01",
    b"-01",
    b"00",
    b"1.",
    b"1.e5",
    b".5",
    b"-",
    b"-a",
    b"1e",
    b"1e+",
    b"1E-",
    b"+1",
    b"0x10",
    b"1.2.3",
    b"1-2",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"tru",
    b"nul",
    b"falsey",
    b"True",
    b"'x'",
    b"[1,]",
    b"[,1]",
    b"[,]",
    b"[1 2]",
    b"[true false]",
    b'{"a":1,}',
    b'{,"a":1}',
    b'{"a" 1}',
    b'{"a":}',
    b'{"a"}',
    b"{1:2}",
    b"{a:1}",
    b'{"a":1 "b":2}',
    b'{"a":1;"b":2}',
    b"[}",
    b"{]",
    b'[{"a":1]}',
    b"[1]]",
    b"[[1]",
    b"[\x0b1]",
    b"[\x0c1]",
    b"[\xc2\xa01]",
    b'["\xe2\x80\xa8" 1]',
    b"[1]x",
    b"[" * (MAX_DEPTH + 2) + b"]" * (MAX_DEPTH + 2),
]
# valid texts the strict scan takes (simdjson does too)
_TAKEN = [
    b'"\\ud83d\\ude00"',
    b'"\\uD83D\\uDE00\\u0041"',
    '"caf\u00e9 \u20ac \U0001f600 \u07ff \uffff \U0010ffff"'.encode(),
    b'"\\"\\\\\\/\\b\\f\\n\\r\\t"',
    b'"\x7f"',
    b"0",
    b"-0",
    b"-0.0",
    b"0.5",
    b"1e-05",
    b"1E+2",
    b"2.5e-3",
    b"1e300",
    b"-1.5e-300",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"18446744073709551615",
    b"0.1000000000000000055511151231257827",
    b"[]",
    b"{}",
    b' [ 1 , [ ] , { } , { "a" : [ null , true , false ] } ] ',
    b'{"a":{"b":[{"c":"}]\\"["}]}}',
]


def _placements(value: bytes) -> list[bytes]:
    """Recordings holding the value where the scan reads it (a key field, the seconds, a SQL
    query, an HTTP request), where it skips it (a field it does not read, a nested container,
    the metadata, the classMap, an event it does not pair) and as a key."""
    plain = _pair({}, {})
    nested = b'[{"name":"p","value":' + value + b"}]"
    return [
        _recording(_pair({"defined_class": value}, {})),
        _recording(_pair({"method_id": value}, {})),
        _recording(_pair({}, {"elapsed_instrumentation": value})),
        _recording(_pair({"id": value}, {})),
        _recording(_pair({"sql_query": b'{"sql":' + value + b"}"}, {})),
        _recording(_pair({"http_server_request": b'{"path_info":' + value + b"}"}, {})),
        _recording(_pair({"message": value}, {})),
        _recording(_pair({"parameters": nested}, {"return_value": nested})),
        _recording(_pair({"parameters": b"[" + value + b"]"}, {})),
        _recording(plain, b'"metadata":{"x":' + value + b"},"),
        _recording(plain, b'"other":' + value + b","),
        _recording([*plain, b'{"event":"other","x":' + value + b"}"]),
        _recording(
            plain, b'"classMap":[{"name":"a","type":"function","x":' + value + b"}],"
        ).replace(b'"classMap":' + _CLASS_MAP + b",", b""),
        _recording(plain).replace(b'"location":"p.rb:1"', b'"location":"p.rb:1","x":' + value),
        _recording(plain).replace(
            b'"children":[{"name":"a"', b'"children":[' + value + b',{"name":"a"'
        ),
        _recording(plain).replace(b'"version":"1.12"', b'"version":' + value),
    ]


@needs_c
def test_strict_scan_refuses_what_simdjson_refuses(tmp_path: Path) -> None:
    """Invalid UTF-8, control characters, bad escapes, lone surrogates, numbers past 64 bits or
    a double, grammar errors and nesting past the limit, wherever they are (skipped containers
    too): the strict scan declines (and stats gives the pure-Python answer); the same
    recordings with a valid value are taken, with the answer of the scan that trusts them."""
    path = tmp_path / "r.trace.json"
    for value in _REFUSED:
        for raw in _placements(value):
            assert _strict(raw) is None, raw
            if value in (b'"\\udbff"', b"-1e400"):  # (stats' answer, through `scanned_sums`)
                _same(path, raw)
    for value in _TAKEN:
        taken = 0
        for raw in _placements(value):
            taken += _as_simdjson(raw)
        assert taken >= 6, value
    for raw in (_recording(_pair({}, {})), _recording(_pair({"sql_query": _SQL[0]}, {}))):
        assert _as_simdjson(raw)
        for document in (
            raw.replace(b'"events":', b'"evs":'),
            raw.replace(b'"events":[', b'"events":{"x":[').replace(b"]}", b"]}}"),
            raw + b"\x00",
            raw + b"}",
            raw[:-1],
            b"\xef\xbb\xbf" + raw,
            b"[" + raw + b"]",
        ):
            assert _strict(document) is None, document


@needs_c
def test_strict_scan_mutations(tmp_path: Path) -> None:
    """Bytes flipped, inserted or cut anywhere in recordings whose skipped containers hold
    strings, numbers and escapes: the strict scan takes only what simdjson accepts, with the
    answer of the scan that trusts the bytes."""
    rng = random.Random(1188)
    special = b'"\\{}[],:0123456789-+.eEu tfnrl\x00\x01\x1f\x7f\x80\xbf\xc0\xc3\xe2\xed\xf0\xf4\xff'
    extras = [b"\\ud83d\\ude00", b"\\u00e9", "é€😀".encode(), b"1e-05", b"-0.5", b"true"]
    bases = [
        _recording(
            _pair(
                {
                    "parameters": b'[{"name":"a\\"b","value":"x\\u0041\xc3\xa9","n":[1,-2.5e-3,null]}]'
                },
                {"return_value": b'{"class":"S","value":"\\ud83d\\ude00 \xe2\x82\xac"}'},
            )
        )
    ]
    bases += [orjson.dumps(_document(rng)) for _ in range(10)]
    taken = 0
    for base in bases:
        _as_simdjson(base)
        for _ in range(400):
            raw = bytearray(base)
            for _ in range(rng.randrange(1, 3)):
                at = rng.randrange(len(raw) + 1)
                choice = rng.random()
                if choice < 0.4:
                    raw[at:at] = bytes([rng.choice(special)])
                elif choice < 0.6 and at < len(raw):
                    raw[at] = rng.choice(special)
                elif choice < 0.8:
                    raw[at:at] = rng.choice(extras)
                else:
                    del raw[at : at + rng.randrange(1, 6)]
            taken += _as_simdjson(bytes(raw))
    assert taken > 100


# -- inspect's tree links ------------------------------------------------------------------


def _events(rng: random.Random) -> list[Any]:
    """Random events: calls and returns on a few threads, returns naming their call, another
    open or closed call, an unknown one or none, ids that are equal across types (1, 1.0,
    True), missing fields, other kinds."""
    ids: list[Any] = [1, 2, 3, 1.0, True, "1", "a", None, -5, 2**70]
    threads: list[Any] = [1, 2, "1", None, 1.0, "MISSING"]
    events: list[Any] = []
    for number in range(rng.randrange(60)):
        choice = rng.random()
        event: dict[str, Any]
        if choice < 0.45:
            event = {"event": "call", "id": rng.choice([*ids, number, number + 0.5])}
        elif choice < 0.9:
            event = {"event": "return", "id": number}
            parent = rng.random()
            if parent < 0.5 and events:
                event["parent_id"] = rng.choice(events).get("id")
            elif parent < 0.7:
                event["parent_id"] = rng.choice(ids)
            elif parent < 0.85:
                event["parent_id"] = None
        else:
            event = {"event": rng.choice(["other", None, 1, "Call", "call ", "returns"])}
            event["id"] = number
        thread = rng.choice(threads)
        if thread != "MISSING":
            event["thread_id"] = thread
        if rng.random() < 0.05:
            del event["event"]
        events.append(event)
    return events


@needs_c
def test_tree_links_as_python() -> None:
    """`_speedups.tree_links` gives `trace.tree.tree_links`'s links of any dict events, raises
    what it raises (an unhashable id or thread), and declines (None) events that are not dicts."""
    from tracetool.inspect import scan
    from tracetool.trace.tree import tree_links

    rng = random.Random(4242)
    for _ in range(3000):
        events = _events(rng)
        assert _speedups.tree_links(events) == tree_links(events), events
        calls = [i for i, e in enumerate(events) if e.get("event") == "call"]
        for chosen in (calls, calls[:1], calls[-1:], calls[::3], []):
            fast = scan._trees_holding(events, chosen)
            saved, scan._TREES_HOLDING = scan._TREES_HOLDING, None
            try:
                assert fast == scan._trees_holding(events, chosen)
            finally:
                scan._TREES_HOLDING = saved
    raised = 0
    for bad in ({"id": [1]}, {"thread_id": {}}, {"parent_id": [2]}):
        for kind in ("call", "return"):
            events = [{"event": "call", "id": 1, "thread_id": 1}, {"event": kind, **bad}]
            try:
                expected = tree_links(events)
            except TypeError:
                raised += 1
                with pytest.raises(TypeError):
                    _speedups.tree_links(events)
            else:
                assert _speedups.tree_links(events) == expected
    assert raised == 4
    assert _speedups.tree_links([]) == []
    assert _speedups.tree_links([{"event": "call"}, ["not a dict"]]) is None
    assert _speedups.trees_holding([{"event": "call"}, ["not a dict"]], [0]) is None
    with pytest.raises(TypeError):
        _speedups.tree_links(({"event": "call"},))
    with pytest.raises(ValueError):
        _speedups.trees_holding([{"event": "call"}, {"event": "x"}], [1])


# -- batch sums of named recordings --------------------------------------------------------


@needs_c
def test_add_named_as_add_recording() -> None:
    """`OverheadPartial.add_named` (the C) of recordings whose every sum the scan named adds to
    a batch exactly what `add_recording` of `named_sums` adds (the same counts, the same
    per-recording seconds, a name made of several raw keys summed in their order); it adds
    nothing and says so when an entry is not named."""
    import copy

    rng = random.Random(5)
    names = process_names()
    raws = [p.read_bytes() for p in corpus_recordings()[:30]]
    raws += [orjson.dumps(_document(rng)) for _ in range(300)]
    raws += [_recording(_pair({field: value}, {})) for field in _CALL_FIELDS for value in _VALUES]
    raws += [_recording(_pair({"sql_query": sql}, {})) for sql in _SQL]
    raws += [_recording(_pair({"http_server_request": http}, {})) for http in _HTTP]
    fast, plain = _collect.OverheadPartial(), _collect.OverheadPartial()
    taken = declined = 0
    for raw in raws:
        scanned = _scan.scanned_sums(
            raw, _collect._other_key, names.event_function, names.chain_names
        )
        if scanned is None:
            continue
        before = copy.deepcopy(fast.sums)
        if fast.add_named(scanned[0]):
            taken += 1
            plain.add_recording(_collect._scanned_named(scanned, names))
            continue
        declined += 1
        assert fast.sums == before
        sums = _collect._scanned_named(scanned, names)
        fast.add_recording(sums)
        plain.add_recording(sums)
    assert taken > 100 and declined > 0
    assert fast.files == plain.files
    assert list(fast.sums.items()) == list(plain.sums.items())
    batch: dict[Any, Any] = {"f": [1, [0.5]]}
    for raw_sums in (
        {("k",): [1, 0.5, (0, 1)]},
        {("k",): [1, 0.5, (0, 1), None]},
        {("k",): [1, "0.5", (0, 1), "f"]},
        {("k",): [1.0, 0.5, (0, 1), "f"]},
        {("k",): [2**70, 0.5, (0, 1), "f"]},
        {("k",): [1, 0.5, (0, 1), "f"], ("j",): [1, 0.5, (0, 1), b"x"]},
        {("k",): (1, 0.5, (0, 1), "f")},
    ):
        assert _speedups.add_named(batch, raw_sums) is False
        assert batch == {"f": [1, [0.5]]}
    assert _speedups.add_named(
        batch, {("k",): [2, 0.25, (0, 1), "f"], ("j",): [1, 0.5, (0, 1), "f"]}
    )
    assert _speedups.add_named(batch, {("k",): [1, 1.0, (0, 1), ("SELECT 1", "")]})
    assert batch == {"f": [4, [0.5, 0.75]], ("SELECT 1", ""): [1, [1.0]]}
    with pytest.raises(TypeError):
        _speedups.add_named({"f": [1, 0.5]}, {("k",): [1, 0.5, (0, 1), "f"]})


@needs_c
def test_screen_calls_as_python() -> None:
    """`_speedups.screen_calls` keeps the calls `Matcher.screen` keeps for a function: any
    `method_id` (a name holding the last component or not, one `loose` empties, missing, null,
    a number, a container), any kind of event; None for events that are not dicts."""
    from tracetool.inspect import matching
    from tracetool.inspect.refs import parse_code_object

    rng = random.Random(77)
    methods: list[Any] = ["find", "find_by", "refind", "Find", "save", "", "#", ".", "::", " "]
    methods += [None, 7, 1.5, True, ["find"], {"find": 1}, "MISSING", "f\u00efnd", "x.find"]
    for ident in (
        "function:app/models/User.find",
        "function:a/b#save",
        "function:x.find",
        "function:7",
    ):
        matcher = matching.Matcher(parse_code_object(ident))
        for _ in range(300):
            events: list[Any] = []
            for _ in range(rng.randrange(30)):
                event: dict[str, Any] = {"event": rng.choice(["call", "call", "return", None, 1])}
                method = rng.choice(methods)
                if method != "MISSING":
                    event["method_id"] = method
                events.append(event)
            fast = matcher.screen(events)
            saved, matching._SCREEN_CALLS = matching._SCREEN_CALLS, None
            try:
                assert fast == matcher.screen(events), (ident, events)
            finally:
                matching._SCREEN_CALLS = saved
    assert _speedups.screen_calls([{"event": "call"}, 1], "find", str) is None
    with pytest.raises(ZeroDivisionError):
        _speedups.screen_calls([{"event": "call", "method_id": "x"}], "find", lambda n: 1 / 0)


def _shape(builder: Any) -> Any:
    """A builder's trees, dicts and stacks, with nodes named by their calls' positions."""
    from tracetool.trace.tree import preorder

    every = preorder(builder.roots) + [n for s in builder.stacks.values() for n in s]
    every += list(builder.nodes.values())
    name = {id(n): n.call["at"] for n in every}

    def node(n: Any) -> Any:
        if n is None:
            return None
        parent = None if n.parent is None else name[id(n.parent)]
        ret = None if n.ret is None else n.ret["at"]
        return (name[id(n)], ret, parent, [name[id(c)] for c in n.children], n._open)

    return (
        [node(n) for n in preorder(builder.roots)],
        [(k, name[id(n)]) for k, n in builder.nodes.items()],
        [(k, [name[id(n)] for n in s]) for k, s in builder.stacks.items()],
        None if builder.created is None else [name[id(n)] for n in builder.created],
    )


@needs_c
def test_inspect_builds_trees_as_call_tree_builder() -> None:
    """inspect's `_add` (`_speedups.call_tree`) builds what `CallTreeBuilder.add` builds from
    the same dict events, fed whole or in blocks: the same nodes, links, returns, open flags,
    id and thread dicts."""
    from tracetool.inspect import scan
    from tracetool.trace.tree import CallTreeBuilder

    rng = random.Random(2024)
    for _ in range(2000):
        events = _events(rng)
        for at, event in enumerate(events):
            event["at"] = at
        cuts = sorted(rng.sample(range(len(events) + 1), min(len(events) + 1, rng.randrange(3))))
        blocks = [events[a:b] for a, b in zip([0, *cuts], [*cuts, len(events)])]
        built = []
        for fast in (True, False):
            builder = CallTreeBuilder()
            saved, scan._CALL_TREE = scan._CALL_TREE, (scan._CALL_TREE if fast else None)
            try:
                for block in blocks:
                    scan._add(builder, block)
            finally:
                scan._CALL_TREE = saved
            built.append(_shape(builder))
        assert built[0] == built[1], events


@needs_c
def test_tree_walk_as_preorder_and_release() -> None:
    """`_speedups.tree_walk` (inspect's `walk` and `unlink`) gives `preorder`'s nodes and
    leaves the nodes as `release` does."""
    from tracetool.inspect.context import unlink, walk
    from tracetool.trace.tree import CallNode, CallTreeBuilder, preorder, release

    rng = random.Random(31)
    for _ in range(1000):
        events = _events(rng)
        for at, event in enumerate(events):
            event["at"] = at
        trees = []
        for _ in range(2):
            builder = CallTreeBuilder()
            builder.add(events)
            trees.append(builder)
        fast, plain = trees
        assert [n.call["at"] for n in walk(fast.roots)] == [
            n.call["at"] for n in preorder(plain.roots)
        ]
        some = fast.roots[1:3]
        assert walk(tuple(some)) == preorder(some)
        nodes, plain_nodes = preorder(fast.roots), preorder(plain.roots)
        unlink(fast.roots)
        release(plain.roots)
        assert all(n.parent is None and n.children == [] for n in nodes + plain_nodes)
        assert [n.call["at"] for n in walk(fast.roots)] == [n.call["at"] for n in fast.roots]
    assert _speedups.tree_walk(CallNode, [], False) == []
    assert _speedups.tree_walk(CallNode, [], True) is None
    with pytest.raises(TypeError):
        _speedups.tree_walk(CallNode, 7, False)


def _class_map_shape(cmap: Any) -> Any:
    """A ClassMap's objects (in creation order), keys, roots and locations, with objects named
    by their creation order."""
    objects = list(cmap._children.values())
    index = {id(o): n for n, o in enumerate(objects)}
    index[id(None)] = -1

    def obj(o: Any) -> Any:
        fields = (o.type, o.name, o.location, o.static, o.labels, o.extra, o._id, o._fqid)
        return (*fields, index[id(o.parent)], [index[id(c)] for c in o.children])

    return (
        [obj(o) for o in objects],
        [(index[k[0]] if k[0] in index else "?", k[1], k[2]) for k in cmap._children],
        [index[id(o)] for o in cmap.roots],
        [(k, [index[id(o)] for o in v]) for k, v in cmap.by_location.items()],
        cmap._by_fqid,
        [o.fqid for o in objects],
    )


def _random_items(rng: random.Random, depth: int = 0) -> list[Any]:
    types: list[Any] = ["package", "class", "function", "", None, 7, "MISSING", "http"]
    names: list[Any] = ["a", "b", "A", "", None, 1, True, "MISSING", "x/y"]
    items: list[Any] = []
    for _ in range(rng.randrange(6 if depth < 3 else 2)):
        if rng.random() < 0.05:
            items.append(rng.choice([1, "x", None, []]))
            continue
        item: dict[str, Any] = {}
        for key, choices in (
            ("type", types),
            ("name", names),
            ("location", ["p.rb:1", "p.rb:2", "", None, 3, "MISSING"]),
            ("static", [True, False, None, 1, 0, "", "MISSING"]),
            ("labels", [["l1"], ["l2", "l1", "l1"], "l3", [1, None], None, 5, "MISSING"]),
            ("comment", ["c", None, "MISSING", "MISSING"]),
            ("sql", ["SELECT 1", "MISSING", "MISSING"]),
        ):
            value = rng.choice(choices)
            if value != "MISSING":
                item[key] = value
        if rng.random() < 0.6:
            item["children"] = _random_items(rng, depth + 1) if rng.random() < 0.9 else {"x": 1}
        items.append(item)
    return items


@needs_c
def test_class_map_as_from_json(corpus: Path) -> None:
    """`_speedups.class_map` (`accel.class_map`) makes what `ClassMap.from_json` makes:
    the same objects with the same fields, keys, order, labels merged and extras kept for
    repeated items, locations, of the corpus's classMaps and of random ones."""
    from tracetool.accel import class_map as read_class_map
    from tracetool.trace.codeobjects import ClassMap

    datas = [orjson.loads(p.read_bytes()).get("classMap") for p in corpus_recordings()[:40]]
    rng = random.Random(606)
    datas += [_random_items(rng) for _ in range(1500)]
    # repeated items: labels merged, extras overwritten, functions told apart by static/location
    datas += [rng.choice(datas[40:]) * 2 for _ in range(100)]
    made = 0
    for data in datas:
        if not isinstance(data, list):
            continue
        fast, plain = read_class_map(data), ClassMap.from_json(data)
        assert _class_map_shape(fast) == _class_map_shape(plain), data
        made += len(fast._children)
    assert made > 3000
    assert read_class_map({"not": "a list"})._by_fqid == {}
