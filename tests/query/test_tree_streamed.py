"""`query tree` of a big recording, folded as its calls close (`tracetool.query.tree._Fold`),
against the whole tree's rows (`_rows`), which stay the reference.

A recording over `STREAM_THRESHOLD` is read a block at a time and each call's rows are made
when it closes, so memory follows `--limit` and the open calls, not the recording. Every row
must be the whole tree's: the same runs folded, counts, times, ids, the first `limit` rows; a
return naming a call already closed without one sends the recording to the whole tree."""

from __future__ import annotations

import importlib
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import CORPUS, corpus_recordings, make_corpus
from tracetool.index import IndexOptions, index_directory
from tracetool.query import open_db, tree
from tracetool.trace import build_call_tree
from tracetool.trace.normalize import apply_event_updates
from tracetool.trace.slim import load_slim

T = importlib.import_module("tracetool.query.tree")

_VARIANTS = [
    (None, True, 1000),
    (None, False, 1000),
    (1, True, 1000),
    (None, True, None),
    (None, True, 3),
    (0, True, 7),
    (2, False, 1),
    (3, True, 40),
]


def _labels(events: list[Any], every: int = 2) -> dict[Any, str]:
    """SQL names as the index gives them, for some SQL calls (the others are normalized)."""
    sql = [e for e in events if isinstance(e, dict) and "sql_query" in e]
    return {e.get("id"): f"Q{i % 5}" for i, e in enumerate(sql) if i % every == 0}


def _blocks(events: list[Any], rng: random.Random) -> Iterator[list[Any]]:
    """The events in blocks of random sizes, as the block reader hands them out."""
    at = 0
    while at < len(events):
        size = rng.randint(1, 300)
        yield events[at : at + size]
        at += size


def _by_id(item: tuple[Any, str]) -> tuple[Any, ...]:
    """The index's order of SQL names: by event id (what is not an int after)."""
    key = item[0]
    return (0, key, "") if type(key) is int else (1, 0, repr(key))


def _known(labels: dict[Any, str]) -> Any:
    """`labels` as `_SqlLabels` holds the index's: code object numbers, and their names."""
    known = T._SqlLabels()
    number = {name: n for n, name in enumerate(sorted(set(labels.values())))}
    known.load((key, number[name]) for key, name in sorted(labels.items(), key=_by_id))
    known.names = {n: name for name, n in number.items()}
    return known


def _folded(
    events: list[Any], labels: dict[Any, str], variant: tuple[Any, ...], rng: random.Random
) -> list[dict[str, Any]] | None:
    """The streamed rows, or None where the fold declines (a late return)."""
    depth, fold, limit = variant
    folder = T._Fold(_known(labels), depth, fold, limit)
    if not folder.read(_blocks(events, rng)):
        return None
    return folder.result()  # type: ignore[no-any-return]


def _same(events: list[Any], labels: dict[Any, str], rng: random.Random) -> int:
    """Asserts the fold's rows are the whole tree's for every variant it did not decline; how
    many it declined (a late return read)."""
    roots = build_call_tree(events).roots
    declined = 0
    for variant in _VARIANTS:
        streamed = _folded(events, labels, variant, rng)
        if streamed is None:
            declined += 1
            continue
        assert streamed == T._rows(roots, *variant, labels), variant
    # (a variant whose rows were all made before the late return stops reading earlier)
    return declined


def test_shared_and_generated_recordings(tmp_path: Path) -> None:
    rng = random.Random(1129)
    paths = corpus_recordings() + make_corpus(tmp_path, 4, 1.5, 5, "--ext", ".appmap.json")
    checked = 0
    for path in paths:
        doc = load_slim(path, extras=False, messages=True)
        apply_event_updates(doc)
        if doc.events:
            assert _same(doc.events, _labels(doc.events), rng) == 0, path
            checked += 1
    assert checked > 40


def _odd_events(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """What real and broken recordings do to the pairing: three threads interleaved, returns
    by `parent_id` or by thread, returns naming an outer call (closing the inner ones without
    a return), returns naming nothing, ids repeated or missing, calls that never return, a
    few returns naming a call closed without one (the fold declines those); repeated
    subtrees so that runs fold, nested."""
    events: list[dict[str, Any]] = []
    open_calls: dict[int, list[Any]] = {1: [], 2: [], 3: []}
    closed: list[Any] = []
    next_id = 1
    shapes: list[dict[str, Any]] = [
        {"defined_class": "Repo", "method_id": "find", "path": "repo.py", "lineno": 3},
        {"defined_class": "Repo", "method_id": "save", "path": "repo.py", "lineno": 9},
        {"defined_class": "Repo", "method_id": "find", "path": "repo.py", "lineno": 4},
        {"method_id": "helper"},
        {"sql_query": {"sql": "SELECT * FROM t WHERE id = 1"}},
        {"sql_query": {"sql": "UPDATE t SET a = 2"}},
        {"http_server_request": {"request_method": "GET", "path_info": "/o/1"}},
        {"http_client_request": {"request_method": "GET", "url": "http://x/y"}},
        {"message": [{"name": "p", "value": "1"}]},
    ]
    late = rng.random() < 0.3
    for _ in range(count):
        thread = rng.choice([1, 1, 1, 2, 3])
        stack = open_calls[thread]
        roll = rng.random()
        if stack and roll < 0.42:
            ret: dict[str, Any] = {"id": next_id, "event": "return", "thread_id": thread}
            if rng.random() < 0.85:
                target = stack[-1] if rng.random() < 0.9 else rng.choice(stack)
                ret["parent_id"] = target
                while stack:
                    popped = stack.pop()
                    if popped != target:
                        closed.append(popped)
                    if popped == target:
                        break
            else:
                stack.pop()
            if rng.random() < 0.9:
                ret["elapsed"] = rng.choice([0.001, 0.5, 2, 0.25, 1e-7])
            if rng.random() < 0.2:
                ret["http_server_response"] = {"status": rng.choice([200, 404])}
            events.append(ret)
        elif roll < 0.45:
            parent = rng.choice([10**9, "x", None])
            if late and closed and rng.random() < 0.5:
                parent = rng.choice(closed)
            events.append(
                {"id": next_id, "event": "return", "thread_id": thread, "parent_id": parent}
            )
        else:
            call = {"id": next_id, "event": "call", "thread_id": thread, **rng.choice(shapes)}
            if rng.random() < 0.03:
                call["id"] = rng.randint(1, next_id)  # a repeated id
            if rng.random() < 0.01:
                del call["id"]
            events.append(call)
            stack.append(call.get("id", -1))
        next_id += 1
    return events


def test_odd_pairings_fold_as_the_whole_tree() -> None:
    rng = random.Random(20261129)
    declined = checked = 0
    for _ in range(150):
        events = _odd_events(rng, rng.randint(1, 500))
        labels = _labels(events, every=rng.choice([1, 2, 3]))
        declined += _same(events, labels, rng) > 0
        checked += 1
    assert 0 < declined < checked / 2  # (both paths were taken)


def test_repeated_loops_fold_nested() -> None:
    """Ten identical trees of `find` calling itself twice, three levels down, then a query;
    then one that differs in its queries: `find` ×10 over ×20, ×40, ×80 and the query ×80, the
    odd tree apart; times summed member by member."""
    events: list[dict[str, Any]] = []
    ids = iter(range(1, 10**6))

    def call(depth: int, sql: str) -> None:
        cid = next(ids)
        events.append(
            {
                "id": cid,
                "event": "call",
                "thread_id": 1,
                "defined_class": "Repo",
                "method_id": "find",
            }
        )
        if depth:
            for _ in range(2):
                call(depth - 1, sql)
        else:
            qid = next(ids)
            events.append({"id": qid, "event": "call", "thread_id": 1, "sql_query": {"sql": sql}})
            events.append(
                {
                    "id": next(ids),
                    "event": "return",
                    "thread_id": 1,
                    "parent_id": qid,
                    "elapsed": 0.1,
                }
            )
        events.append(
            {"id": next(ids), "event": "return", "thread_id": 1, "parent_id": cid, "elapsed": 0.5}
        )

    for _ in range(10):
        call(3, "SELECT a FROM t")
    call(3, "SELECT a FROM u")
    rng = random.Random(7)
    assert _same(events, {}, rng) == 0
    rows = _folded(events, {}, (None, True, 1000), rng)
    assert rows is not None
    assert [(r["depth"], r["count"]) for r in rows][:5] == [
        (0, 10),
        (1, 20),
        (2, 40),
        (3, 80),
        (4, 80),
    ]
    assert rows[0]["elapsed_ms"] == 5000.0 and rows[4]["elapsed_ms"] == 8000.0
    assert rows[5]["count"] == 1 and rows[5]["depth"] == 0


def test_it_stops_reading_once_the_rows_are_made() -> None:
    """Roots past the first `limit` rows cannot change them once a run of other roots began:
    the rest of the recording is not read."""
    events = []
    for n in range(1, 2001, 2):
        method = "a" if n < 20 else f"m{n % 3}"
        events.append({"id": n, "event": "call", "thread_id": 1, "method_id": method})
        events.append({"id": n + 1, "event": "return", "thread_id": 1, "parent_id": n})
    read: list[int] = []

    def blocks() -> Iterator[list[Any]]:
        for at in range(0, len(events), 10):
            read.append(at)
            yield events[at : at + 10]

    folder = T._Fold(T._SqlLabels(), None, True, 3)
    assert folder.read(blocks())
    assert [(r["label"], r["count"]) for r in folder.result()] == [
        ("#a", 10),
        ("#m0", 1),
        ("#m2", 1),
    ]
    assert len(read) < 5  # (of 200 blocks)


def _one_root(path: Path, calls: int, updates: dict[str, Any] | None = None) -> None:
    """One request whose handler loops `calls` times over a function and its query: one call
    tree as big as the recording (what batching whole roots cannot bound)."""
    pad = "x" * 150
    events: list[dict[str, Any]] = [
        {
            "id": 1,
            "event": "call",
            "thread_id": 1,
            "http_server_request": {"request_method": "GET", "path_info": "/big"},
        }
    ]
    n = 2
    for k in range(calls):
        fn, q = n, n + 1
        events.append(
            {
                "id": fn,
                "event": "call",
                "thread_id": 1,
                "defined_class": "Repo",
                "method_id": "save" if k % 7 == 0 else "find",
                "path": "app/repo.py",
                "lineno": 10,
                "parameters": [{"name": "x", "class": "str", "value": pad}],
            }
        )
        events.append(
            {
                "id": q,
                "event": "call",
                "thread_id": 1,
                "sql_query": {
                    "sql": f"SELECT * FROM t WHERE id = {k % 13}",
                    "database_type": "sqlite",
                },
            }
        )
        events.append(
            {"id": n + 2, "event": "return", "thread_id": 1, "parent_id": q, "elapsed": 0.0001}
        )
        events.append(
            {"id": n + 3, "event": "return", "thread_id": 1, "parent_id": fn, "elapsed": 0.0003}
        )
        n += 4
    events.append(
        {
            "id": n,
            "event": "return",
            "thread_id": 1,
            "parent_id": 1,
            "elapsed": 2.5,
            "http_server_response": {"status": 200},
        }
    )
    doc = {
        "version": "1.12",
        "metadata": {"name": "one big request"},
        "classMap": [],
        "events": events,
    }
    if updates is not None:
        doc["eventUpdates"] = updates  # (after the events: found by the key scan)
    path.write_bytes(orjson.dumps(doc))


# (VmHWM, not ru_maxrss: that keeps the high-water mark of the forking pytest across exec)
_PEAK = """
import importlib, sys
from tracetool.query import open_db, tree
def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
T = importlib.import_module("tracetool.query.tree")
T.STREAM_THRESHOLD = int(sys.argv[2])
db = open_db(query_db=sys.argv[1])
base = peak()
rows = tree(db, "one", limit=int(sys.argv[3]))
print(len(rows), (peak() - base) // 1024)
"""


@pytest.fixture(scope="module")
def one_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 30 MB recording of one call tree, indexed."""
    base = tmp_path_factory.mktemp("one")
    (base / "trace").mkdir()
    _one_root(base / "trace" / "one.appmap.json", 50_000)
    qdb = base / "query.db"
    index_directory(base / "trace", IndexOptions(query_db=qdb, workers=1))
    return qdb


def test_a_recording_of_one_big_call_tree_is_read_in_little_memory(one_root: Path) -> None:
    """The same rows as the whole tree in a fraction of its memory (peak RSS above the start
    of the command, in a process of its own)."""
    size = (one_root.parent / "trace" / "one.appmap.json").stat().st_size
    assert size > 20 * 2**20

    def peak(threshold: int, limit: int) -> tuple[int, int]:
        argv = [sys.executable, "-c", _PEAK, str(one_root), str(threshold), str(limit)]
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        rows, mb = done.stdout.split()
        return int(rows), int(mb)

    streamed, whole = peak(-1, 1000), peak(2**40, 1000)
    assert streamed[0] == whole[0] == 1000
    assert streamed[1] * 2 < whole[1], (streamed, whole)
    db = open_db(query_db=one_root)
    for variant in ({"depth": 1, "limit": 5}, {"fold": False, "limit": 50}):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(T, "STREAM_THRESHOLD", -1)
            rows = tree(db, "one", **variant)  # type: ignore[arg-type]
        assert rows == tree(db, "one", **variant), variant  # type: ignore[arg-type]
    first = tree(db, "one", depth=1)
    assert (first[0]["label"], first[0]["status"], first[0]["elapsed_ms"]) == (
        "GET /big",
        200,
        2500.0,
    )
    assert [(r["label"], r["count"]) for r in first[1:4]] == [
        ("Repo#save", 1),
        ("Repo#find", 6),
        ("Repo#save", 1),
    ]


def test_streamed_from_the_index_as_the_whole_tree(tmp_path: Path) -> None:
    """End to end: every indexed recording of the shared corpus and a generated one, with
    their SQL names from the index and their eventUpdates, folded and not."""
    trace = tmp_path / "trace"
    for path in sorted(CORPUS.rglob("*.appmap.json")):
        target = trace / path.relative_to(CORPUS)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    make_corpus(trace / "gen", 2, 1, 9, "--ext", ".appmap.json")
    qdb = tmp_path / "query.db"
    index_directory(trace, IndexOptions(query_db=qdb, workers=1))
    db = open_db(query_db=qdb)
    checked = 0
    for (rel,) in db.execute("SELECT path FROM recordings ORDER BY path").fetchall():
        for kwargs in ({}, {"fold": False}, {"depth": 2, "limit": 30}):
            whole = tree(db, rel, **kwargs)  # type: ignore[arg-type]
            with pytest.MonkeyPatch.context() as m:
                m.setattr(T, "STREAM_THRESHOLD", -1)
                assert tree(db, rel, **kwargs) == whole, (rel, kwargs)  # type: ignore[arg-type]
        checked += 1
    assert checked >= 40


def test_a_late_return_is_paired_by_the_whole_tree(tmp_path: Path) -> None:
    """A return naming a call its caller's return already closed gives that call its time in
    the whole tree; the streamed read hands such a recording over to it."""
    events = [
        {"id": 1, "event": "call", "thread_id": 1, "method_id": "outer"},
        {"id": 2, "event": "call", "thread_id": 1, "method_id": "inner"},
        {"id": 3, "event": "return", "thread_id": 1, "parent_id": 1, "elapsed": 0.004},
        {"id": 4, "event": "return", "thread_id": 1, "parent_id": 2, "elapsed": 0.002},
    ]
    (tmp_path / "trace").mkdir()
    doc = {"version": "1.12", "metadata": {}, "classMap": [], "events": events}
    (tmp_path / "trace" / "late.appmap.json").write_bytes(orjson.dumps(doc))
    qdb = tmp_path / "query.db"
    index_directory(tmp_path / "trace", IndexOptions(query_db=qdb, workers=1))
    assert T._Fold(T._SqlLabels(), None, True, 10).read([events]) is False
    with pytest.MonkeyPatch.context() as m:
        m.setattr(T, "STREAM_THRESHOLD", -1)
        rows = tree(open_db(query_db=qdb), "late")
    assert [(r["label"], r["elapsed_ms"]) for r in rows] == [("#outer", 4.0), ("#inner", 2.0)]


def test_sql_names_keep_the_last_of_a_repeated_id() -> None:
    labels = _known({1: "A", 2: "C", 2**70: "D", "x": "E"})
    labels.load([(3, 1), (3, 0)])  # (an id repeated: the last row wins)
    assert labels.get(3) == "A"
    labels = _known({1: "A", 2: "C", 2**70: "D", "x": "E"})
    assert [labels.get(k) for k in (1, 2, 3, 2**70, "x", None)] == ["A", "C", None, "D", "E", None]
    # an id a dict finds by equality: 2.0 and True are 2 and 1
    assert [labels.get(k) for k in (2.0, True, 2.5, float("nan"))] == ["C", "A", None, None]


def test_event_updates_after_the_events_apply_to_a_streamed_read(tmp_path: Path) -> None:
    """`eventUpdates` written after a big recording's events replace them in the streamed read
    too (its first pass takes the members before the events for the header, then finds more)."""
    last = 2 + 4 * 16_000  # the request's return
    update = {
        "id": last,
        "event": "return",
        "thread_id": 1,
        "parent_id": 1,
        "elapsed": 9.0,
        "http_server_response": {"status": 503},
    }
    first_return = {"id": 5, "event": "return", "thread_id": 1, "parent_id": 2, "elapsed": 0.25}
    (tmp_path / "trace").mkdir()
    updates = {str(last): update, "5": first_return}  # (5: the first `Repo#save`'s return)
    _one_root(tmp_path / "trace" / "one.appmap.json", 16_000, updates)
    assert (tmp_path / "trace" / "one.appmap.json").stat().st_size > 8 * 2**20
    qdb = tmp_path / "query.db"
    index_directory(tmp_path / "trace", IndexOptions(query_db=qdb, workers=1))
    db = open_db(query_db=qdb)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(T, "STREAM_THRESHOLD", -1)
        streamed = tree(db, "one", depth=1, limit=3)
    assert streamed == tree(db, "one", depth=1, limit=3)
    assert [(r["label"], r.get("status"), r["elapsed_ms"]) for r in streamed] == [
        ("GET /big", 503, 9000.0),
        ("Repo#save", None, 250.0),
        ("Repo#find", None, 1.8),
    ]


@pytest.mark.parametrize("threshold", [-1, 2**40])
@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("thread_id", [1], "event 1: thread_id is an array, expected a scalar"),
        ("id", {"a": 1}, "event 1: id is an object, expected a scalar"),
        ("path", ["a.py"], "event 1: path is an array, expected a scalar"),
    ],
)
def test_a_field_no_row_can_be_made_of_is_named(
    tmp_path: Path, threshold: int, field: str, value: Any, message: str
) -> None:
    """A recording changed since it was indexed into one with an array for an id (the index
    refuses such a file) gets the index's one line naming the field, read whole or streamed."""
    from tracetool.errors import TraceFormatError

    events = [
        {"id": 1, "event": "call", "thread_id": 1, "method_id": "m", "path": "a.py"},
        {"id": 2, "event": "return", "thread_id": 1, "parent_id": 1},
    ]
    (tmp_path / "trace").mkdir()
    path = tmp_path / "trace" / "odd.appmap.json"
    path.write_bytes(orjson.dumps({"version": "1.12", "events": events}))
    qdb = tmp_path / "query.db"
    index_directory(tmp_path / "trace", IndexOptions(query_db=qdb, workers=1))
    db = open_db(query_db=qdb)
    assert tree(db, "odd")[0]["label"] == "#m"
    events[0][field] = value
    path.write_bytes(orjson.dumps({"version": "1.12", "events": events}))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(T, "STREAM_THRESHOLD", threshold)
        with pytest.raises(TraceFormatError) as caught:
            tree(db, "odd")
    assert str(caught.value) == f"{path}: {message}"


def test_an_event_replaced_by_an_update_after_the_events_is_read_replaced(
    tmp_path: Path,
) -> None:
    """A streamed read takes the members before the events for the header; an event its
    eventUpdates (written after the events) replace may be one no row can be made of until
    replaced (a return naming an object): the read starts again with the updates (found by
    the fuzz harness)."""
    stream = importlib.import_module("tracetool.trace.stream")
    events = [
        {"id": 1, "event": "call", "thread_id": 1, "method_id": "m"},
        {"id": 2, "event": "return", "thread_id": 1, "parent_id": {}, "elapsed": 1.0},
    ]
    fixed = {"id": 2, "event": "return", "thread_id": 1, "parent_id": 1, "elapsed": 0.5}
    doc = {"version": "1.12", "events": events, "eventUpdates": {"2": fixed}}
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "upd.appmap.json").write_bytes(orjson.dumps(doc))
    qdb = tmp_path / "query.db"
    index_directory(tmp_path / "trace", IndexOptions(query_db=qdb, workers=1))
    db = open_db(query_db=qdb)
    whole = tree(db, "upd")
    assert [(r["label"], r["elapsed_ms"]) for r in whole] == [("#m", 500.0)]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(T, "STREAM_THRESHOLD", -1)
        m.setattr(stream, "STREAM_THRESHOLD", 0)  # (read a block at a time, however small)
        assert tree(db, "upd") == whole
