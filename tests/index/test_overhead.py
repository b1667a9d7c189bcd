"""The stats sums the index keeps, read from its own parse (`tracetool.index.overhead`), are
exactly stats' own pass over the file (`tracetool.stats._collect.file_overhead`), or declined."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import corpus_recordings
from tracetool.errors import TraceToolError
from tracetool.index import worker
from tracetool.index.overhead import recording_sums
from tracetool.stats._collect import file_overhead
from tracetool.trace import parse
from tracetool.trace.normalize import apply_event_updates


def _sums(raw: bytes) -> list[list[Any]] | None:
    doc = parse(raw, "x.trace.json")
    apply_event_updates(doc)
    return recording_sums(doc.events, doc.class_map)


def test_shared_corpus_sums_are_stats_own(corpus: Path) -> None:
    """Every recording of the shared corpus (Ruby, Java, JS, Python agents) nests plainly:
    summed from the parse, to the same JSON as stats' pass."""
    recordings = corpus_recordings()
    assert len(recordings) >= 50
    for path in recordings:
        raw = path.read_bytes()
        found = _sums(raw)
        assert found is not None, path
        assert orjson.dumps(found) == orjson.dumps(file_overhead(path, raw)), path


_CLASS_MAP = [
    {
        "name": "app",
        "type": "package",
        "children": [
            {
                "name": "C",
                "type": "class",
                "children": [
                    {"name": "a", "type": "function", "location": "p.rb:1", "static": False},
                    {"name": "b", "type": "function", "location": "p.rb:2", "static": True},
                    {
                        "name": "a",
                        "type": "function",
                        "location": "q.rb:1",
                        "children": [{"name": "a", "type": "function", "location": "q.rb:2"}],
                    },
                ],
            }
        ],
    },
    "not an object",
]


def _call(rng: random.Random, number: int) -> dict[str, Any]:
    call_id: Any = rng.choice([number] * 40 + [rng.randint(1, number), None, [number]])
    call: dict[str, Any] = {"id": call_id, "event": "call"}
    thread = rng.choice([1, 1, 1, 2, "1", None, "missing"])
    if thread != "missing":
        call["thread_id"] = thread
    shape = rng.random()
    if shape < 0.15:
        query: Any = {"sql": rng.choice(["SELECT 1", "SELECT * FROM t WHERE id = 7", None])}
        if rng.random() < 0.5:
            query["database_type"] = rng.choice(["sqlite", "postgres", None, 3])
        call["sql_query"] = rng.choice([query] * 5 + ["SELECT 2", None])
    elif shape < 0.22:
        call["http_server_request"] = rng.choice(
            [{"request_method": "GET", "path_info": "/a/1"}, {"path_info": ["/b", "c"]}, None]
        )
    elif shape < 0.27:
        call["http_client_request"] = {"request_method": "POST", "url": "http://h:1/x?y"}
    elif shape < 0.3:
        call["message"] = "m"
    else:
        for key, values in (
            ("method_id", ["a", "a", "b", None, 7]),
            ("defined_class", ["C", "C", "app.C", None]),
            ("path", ["p.rb", "p.rb", "q.rb", None]),
            ("lineno", [1, 2, 2, None, "1"]),
            ("static", [False, True, None, 0]),
        ):
            if rng.random() < 0.9:
                call[key] = rng.choice(values)
    return call


def _document(rng: random.Random) -> dict[str, Any]:
    events: list[Any] = []
    open_calls: list[dict[str, Any]] = []
    for number in range(1, rng.randint(2, 30)):
        if not open_calls or rng.random() < 0.55:
            call = _call(rng, number)
            events.append(call)
            open_calls.append(call)
            continue
        # mostly the innermost call of the thread, sometimes any open one
        target = open_calls.pop() if rng.random() < 0.97 else rng.choice(open_calls)
        ret: dict[str, Any] = {"id": number, "event": "return"}
        if rng.random() < 0.99:
            ret["thread_id"] = target.get("thread_id")
        if rng.random() < 0.9:
            ret["parent_id"] = target.get("id") if rng.random() < 0.99 else number + 100
        elapsed = [0.001, 0.1, 0.2, 0.3, 3, 0, 0.0, -0.5, None, True, "x", 1e300]
        if rng.random() < 0.9:
            ret["elapsed_instrumentation"] = rng.choice(elapsed)
        events.append(ret)
        if rng.random() < 0.03:
            events.append(rng.choice([1, "event", None]))
    doc: dict[str, Any] = {"version": "1.12", "metadata": {"name": "r"}, "events": events}
    if rng.random() < 0.8:
        doc["classMap"] = _CLASS_MAP
    if rng.random() < 0.2:
        update = _call(rng, 1)
        update.update(id=1, event="call")
        doc["eventUpdates"] = {"1": update, "2": "not an object"}
    return doc


def test_generated_sums_are_stats_own_or_declined(tmp_path: Path) -> None:
    """Random recordings hitting each rule (threads, missing, reused and unhashable ids, returns
    naming another call or none, calls that never return, eventUpdates, SQL, HTTP, function
    fields missing or null, functions outside the classMap, odd elapsed values): the sums are
    stats' own, or declined (None) and then taken from stats' pass by the worker."""
    rng = random.Random(18)
    path = tmp_path / "r.trace.json"
    declined = refused = 0
    for _ in range(1500):
        raw = orjson.dumps(_document(rng))
        path.write_bytes(raw)
        try:
            expected: str | None = orjson.dumps(file_overhead(path, raw)).decode()
        except TraceToolError:  # stats skips it as malformed: nothing kept
            expected = None
            refused += 1
        assert worker._overhead(str(path), raw, parse(raw, str(path))) == expected
        found = _sums(raw)
        if found is None:
            declined += 1
            continue
        assert orjson.dumps(found).decode() == expected
    assert 0 < refused <= declined < 1000


_CALL = b'{"id":1,"event":"call","thread_id":1,"method_id":"a","defined_class":"C","path":"p.rb"'
_RETURN = b'{"id":2,"event":"return","thread_id":1,"parent_id":1,"elapsed_instrumentation":'


@pytest.mark.parametrize(
    "events",
    [
        _CALL + b',"lineno":1},' + _RETURN + number + b"}"
        for number in (
            b"18446744073709551615",
            b"123456789012345678901234567890",
            b"-0",
            b"-0.0",
            b"1.0E+2",
            b"2.50",
            b"1e-400",
            b"0.1000000000000000055511151231257827",
        )
    ]
    + [
        # duplicate keys (the last one counts), escapes
        _CALL + b',"method_id":"b","lineno":1},' + _RETURN + b'1,"elapsed_instrumentation":2}',
        _CALL + b',"event":"return"},' + _RETURN + b"1}",
        _CALL + b',"lineno":"\\u0031"},' + _RETURN + b"1}",
    ],
)
def test_number_and_key_spellings(tmp_path: Path, events: bytes) -> None:
    """Numbers msgspec and orjson might read otherwise, duplicate keys, escapes: the same sums."""
    raw = b'{"classMap":[{"name":"C","type":"class","children":[{"name":"a","type":"function",'
    raw += b'"location":"p.rb:1"}]}],"events":[' + events + b"]}"
    path = tmp_path / "r.trace.json"
    path.write_bytes(raw)
    expected = orjson.dumps(file_overhead(path, raw)).decode()
    assert worker._overhead(str(path), raw, parse(raw, str(path))) == expected
    found = _sums(raw)
    assert found is None or orjson.dumps(found).decode() == expected


def test_a_failure_in_the_sums_leaves_the_decision_to_stats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anything failing while summing from the parse declines, and stats' own pass gives the
    sums (or refuses the recording): the recording is never skipped for it."""
    from tracetool.index import overhead

    def broken(events: Any) -> Any:
        raise RuntimeError("summing failed")

    raw = _CALL + b',"lineno":1},' + _RETURN + b"0.5}"
    raw = b'{"classMap":[],"events":[' + raw + b"]}"
    path = tmp_path / "r.trace.json"
    path.write_bytes(raw)
    expected = orjson.dumps(file_overhead(path, raw)).decode()
    assert expected == '[["function:C#a",1,0.5,0]]'
    monkeypatch.setattr(overhead, "_raw_sums", broken)
    assert _sums(raw) is None
    assert worker._overhead(str(path), raw, parse(raw, str(path))) == expected


def _kept(path: Path, raw: bytes) -> str | None:
    """What the index must keep of a recording: stats' own pass, as `worker._overhead` words
    it (None for a recording stats refuses, or sums JSON cannot hold)."""
    try:
        rows = file_overhead(path, raw)
    except TraceToolError:
        return None
    if not all(math.isfinite(row[2]) for row in rows):
        return None
    return orjson.dumps(rows).decode()


def _processed(path: Path, tmp_path: Path) -> worker.Result:
    stat = path.stat()
    sidecar = str(tmp_path / "sidecar.json")
    task = worker.Task(str(path), path.name, stat.st_size, stat.st_mtime_ns, sidecar, 1 << 34)
    return worker.process(task)


_SQL_TEXTS = [
    'SELECT "users".* FROM "users" WHERE "users"."id" = $1 LIMIT $2',  # plain
    "select  a,\n b from t where c = ?",  # plain, spaced
    "SELECT * FROM t WHERE name = 'o''brien' AND n = 7",  # literals
    "SELECT `a` FROM `t` -- note",
    "",
    "not sql at all (",
]
_LONG = "INSERT INTO big (a) VALUES " + ", ".join(f"({i})" for i in range(12000))  # (not cached)


def _sql_document(rng: random.Random, texts: list[str] = _SQL_TEXTS) -> dict[str, Any]:
    events: list[Any] = []
    for number in range(1, 40, 2):
        query: Any = {"sql": rng.choice(texts)}
        if rng.random() < 0.8:
            query["database_type"] = rng.choice(["postgres", "sqlite", "mysql", "", None, 3])
        call = {"id": number, "event": "call", "thread_id": 1, "sql_query": query}
        if rng.random() < 0.05:
            call["sql_query"] = rng.choice(["SELECT 2", None, {"sql": 5}])
        events.append(call)
        ret = {"id": number + 1, "event": "return", "thread_id": 1, "parent_id": number}
        ret["elapsed_instrumentation"] = rng.choice([0.001, 0.25, 0])
        events.append(ret)
    return {"version": "1.12", "metadata": {"name": "q"}, "classMap": [], "events": events}


def test_indexed_sums_are_stats_own(corpus: Path, tmp_path: Path) -> None:
    """What `process` keeps (its SQL named from the extract's analyses, after it) is stats' own
    pass: the shared corpus, SQL of every kind (plain or not, in each dialect, too long to cache,
    not text), and the generated recordings."""
    for path in corpus_recordings():
        result = _processed(path, tmp_path)
        assert isinstance(result, worker.Indexed), path
        assert result.overhead == _kept(path, path.read_bytes()), path
    rng = random.Random(7)
    path = tmp_path / "r.trace.json"
    kept = 0
    long = [_LONG, "SELECT 1"]
    documents = [_sql_document(rng, long)] + [_sql_document(rng) for _ in range(40)]
    for document in documents + [_document(rng) for _ in range(300)]:
        raw = orjson.dumps(document)
        path.write_bytes(raw)
        result = _processed(path, tmp_path)
        if isinstance(result, worker.Indexed):
            assert result.overhead == _kept(path, raw), raw[:300]
            kept += result.overhead is not None
    assert kept > 200


def test_indexed_sql_is_named_from_the_extract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A statement the extract analyzed is not normalized again for the sums."""
    from tracetool.stats import _collect

    def refused(text: str, database_type: str) -> str:
        raise AssertionError(f"named again: {text}")

    raw = orjson.dumps(_sql_document(random.Random(3)))
    path = tmp_path / "q.trace.json"
    path.write_bytes(raw)
    expected = _kept(path, raw)
    monkeypatch.setattr(_collect, "sql_fqid", refused)
    result = _processed(path, tmp_path)
    assert isinstance(result, worker.Indexed)
    assert result.overhead == expected


def test_indexed_analyses_are_the_same(tmp_path: Path) -> None:
    """The analyses a recording's indexing made (what the sqlcache keeps) are those made when
    stats' names were made before the extract (by `sql_fqid`); in the extract's order now."""
    from tracetool import sql
    from tracetool.index import sqlcache
    from tracetool.index.extract import extract_bound, release_bound

    raw = orjson.dumps(_sql_document(random.Random(5)))
    path = tmp_path / "q.trace.json"
    path.write_bytes(raw)
    sql.analyze.cache_clear()  # type: ignore[attr-defined]
    with sql.computed() as expected:
        doc = parse(raw, path.name)
        assert worker._overhead(str(path), raw, doc) is not None  # (names first)
        release_bound(extract_bound(doc, path.name)[1])
    assert len(expected) > 2
    sql.analyze.cache_clear()  # type: ignore[attr-defined]
    result = _processed(path, tmp_path)
    assert isinstance(result, worker.Indexed)
    stored = sqlcache.encoded(expected)  # (what a worker sends: the sqlcache's form)
    assert {key: result.sql[key] for key in stored} == stored


def _pairs_of(events: Any, python: bool) -> Any:
    """`_raw_sums` of events (C or its Python twin) as comparable data, or None where it
    declines or fails (the worker's `event_sums` declines then: C declines an event that is
    not a dict, where the Python fails)."""
    from tracetool.index import overhead

    try:
        found = overhead._py_raw_sums(events) if python else overhead._raw_sums(events)
    except Exception:
        return None
    if found is None:
        return None
    return [(repr(key), entry[0], repr(entry[1]), id(entry[2])) for key, entry in found.items()]


def _m(**fields: Any) -> dict[str, Any]:
    """A call of function `m` (id 1), `fields` added."""
    return {"event": "call", "id": 1, "method_id": "m", **fields}


def _r(**fields: Any) -> dict[str, Any]:
    """A return, `fields` added."""
    return {"event": "return", **fields}


_NAN = float("nan")
_HOSTILE: list[Any] = [
    [],
    [_m(thread_id=1)],  # never returns
    [_r(parent_id=None)],  # closes nothing
    [_r(parent_id=3)],  # names a call never made
    [_m(id=[1]), _r()],  # unhashable id
    [_m(method_id=["m"]), _r()],  # unhashable key
    [_m(), _r(thread_id=None)],
    [_m(thread_id=_NAN), _r(thread_id=_NAN, elapsed_instrumentation=1)],
    [_m(id=_NAN), _r(parent_id=_NAN)],
    [_m(), _r(elapsed_instrumentation=10**400)],  # too big for a float
    [_m(), _r(elapsed_instrumentation=2**70)],
    [_m(), _r(elapsed_instrumentation=_NAN)],
    [_m(), _r(elapsed_instrumentation=True)],
    [{**_m(), 5: "x", None: 1}, {**_r(elapsed_instrumentation=-0.0), (1,): 2}],  # non-str keys
    [_m(sql_query={"sql": 0, "database_type": ["x"]}), _r(elapsed_instrumentation=0.5)],
    [_m(sql_query="SELECT 1"), _r()],
    [_m(http_server_request=None), _r()],
    [_m(method_id=None, defined_class="C"), _r()],
    [_m(), _r(), 7],  # not an object
    [{"event": 1, "id": 1}, {"event": b"call"}, _r(parent_id=False)],
    [_m(), _m(), _r(), _r()],  # an id opened twice
    [_m(id=True), _m(id=1.0)],
    [_m(id=n, thread_id=n % 3) for n in range(5000)]
    + [_r(thread_id=n % 3, elapsed_instrumentation=0.1) for n in range(5000)],
]


@pytest.mark.parametrize("events", _HOSTILE)
def test_c_pairs_are_the_python_ones_on_hostile_events(events: Any) -> None:
    """`overhead_pairs` (C) and `_py_raw_sums`: the same sums, declines or failures."""
    from tracetool.index import overhead

    if overhead._PAIRS is None:
        pytest.skip("the accelerator is not built")
    assert _pairs_of(events, False) == _pairs_of(events, True)
    assert overhead._PAIRS(tuple(events), overhead.UNSET, None, "") is None  # (not a list)


def test_c_pairs_are_the_python_ones(tmp_path: Path) -> None:
    """The shared corpus and generated recordings: the same raw sums from C and Python."""
    from tracetool.index import overhead

    if overhead._PAIRS is None:
        pytest.skip("the accelerator is not built")
    rng = random.Random(11)
    raws = [path.read_bytes() for path in corpus_recordings()]
    raws += [orjson.dumps(_document(rng)) for _ in range(600)]
    raws += [orjson.dumps(_sql_document(rng)) for _ in range(20)]
    for raw in raws:
        doc = parse(raw, "x.trace.json")
        apply_event_updates(doc)
        assert _pairs_of(doc.events, False) == _pairs_of(doc.events, True), raw[:300]


def test_sums_named_by_the_extract_are_stats_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """`extract_named` (C's naming, then `_ResolvedNames`, then stats' own), with and without
    the C naming, gives `recording_overhead`'s sums: the corpus and generated recordings,
    functions outside the classMap whose made objects share a location included."""
    from tracetool.index import overhead
    from tracetool.index.extract import extract_resolved, release_bound

    rng = random.Random(23)
    raws = [path.read_bytes() for path in corpus_recordings()]
    raws += [orjson.dumps(_document(rng)) for _ in range(600)]
    # (a made object found by location by a later call: the extract's order differs from stats')
    collide = [
        {"id": 1, "event": "call", "thread_id": 1, "method_id": "a", "defined_class": None}
        | {"path": "p.rb", "lineno": "1", "static": 0},
        {"id": 2, "event": "call", "thread_id": 1, "method_id": "a", "defined_class": "C"}
        | {"path": "p.rb", "lineno": 1, "static": None},
        {"id": 3, "event": "return", "thread_id": 1, "parent_id": 2},
        {"id": 4, "event": "return", "thread_id": 1, "parent_id": 1},
    ]
    raws.append(orjson.dumps({"events": collide}))
    raws.append(orjson.dumps({"events": collide, "classMap": _CLASS_MAP}))
    for c_names in (overhead._NAMES, None):
        monkeypatch.setattr(overhead, "_NAMES", c_names)
        for raw in raws:
            doc = parse(raw, "x.trace.json")
            apply_event_updates(doc)
            expected = overhead.recording_overhead(doc.events, doc.class_map)
            paired = overhead.event_sums(doc.events)
            assert (paired is None) == (expected is None)
            if paired is None:
                continue
            _, bound, resolved = extract_resolved(doc)
            found = overhead.extract_named(paired, resolved, bound.static, doc.class_map)
            release_bound(bound)
            assert repr(found) == repr(expected), raw[:300]
