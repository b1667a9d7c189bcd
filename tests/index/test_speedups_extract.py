"""The C accelerator of the index's walk (tracetool/_speedups_extract.c, the twin of
`tracetool.index.extract.Extractor._walk`) extracts exactly what the pure-Python walk does:
every field of the Extract (rows in order, items, full-text inputs, canonical forms, the
per-function aggregates to the last bit of their float sums) and of the Bound (pre-order nodes,
their code objects), on every recording of the shared corpus, generated ones, and recordings
with random or mutated events; in one batch and in several."""

from __future__ import annotations

import copy
import importlib
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import corpus_recordings, make_corpus
from tests.diagram.test_speedups_diagram import CLASS_MAP, _events, _mutations
from tracetool.trace.document import from_data

X = importlib.import_module("tracetool.index.extract")

needs_c = pytest.mark.skipif(X._WALK is None, reason="tracetool._speedups is not built")


def _state(extractor: Any) -> list[Any]:
    """What an Extractor keeps across batches, before `finish` sorts and merges it."""
    canonical = extractor.canonical
    # (code objects by their fqid, not their id)
    fqid = {id(co): co.fqid for co in extractor.cmap.objects()}
    return [
        extractor.funcs,
        canonical.values,
        sorted((fqid[a], fqid[b]) for a, b in canonical.pairs),
        sorted(fqid[a] for a in canonical.functions),
        sorted(((fqid[a], names) for a, names in canonical._params), key=repr),
        sorted(canonical._sql, key=repr),
        extractor.fts_routes,
        extractor.fts_sql,
        extractor.messages,
        extractor.elapsed_total,
        extractor.n_calls,
        [fqid[a] for a in extractor.used],
    ]


def _bound(bound: Any) -> list[Any]:
    """The Bound's nodes (by their call events), code objects and order of both."""
    position = {id(node): i for i, node in enumerate(bound.nodes)}
    assert len(position) == len(bound.nodes)
    assert [bound.code_objects[id(node)] for node in bound.nodes] == bound.node_code_objects
    return [
        [node.call for node in bound.nodes],
        [position[key] for key in bound.code_objects],
        [co.fqid for co in bound.node_code_objects],
        [co.fqid for co in bound.cmap.objects()],
    ]


def _extract(data: dict[str, Any], batches: int) -> list[Any]:
    """Everything extracting `data` decides, the whole document as one batch of an Extractor
    (`extract_bound`) or cut into `batches` of roots; an error by its type."""
    doc = from_data(copy.deepcopy(data))
    kept: list[Any] = []
    finish = X.Extractor.finish

    def finishing(self: Any, *args: Any) -> Any:
        kept.append(repr(_state(self)))
        return finish(self, *args)

    try:
        X.Extractor.finish = finishing  # type: ignore[method-assign]
        if batches == 1:
            out, bound = X.extract_bound(doc)
            return [repr(vars(out)), *kept, repr(_bound(bound))]
        X.apply_event_updates(doc)
        roots = X.call_tree(doc.events).roots
        extractor = X.Extractor(doc.class_map)
        size = max(1, len(roots) // batches)
        found: list[Any] = []
        for start in range(0, len(roots), size):
            chunk = roots[start : start + size]
            has_http = any("http_server_request" in n.call for n in roots[: start + size])
            found.append(repr(_bound(extractor.add(chunk, has_http))))
        out = extractor.finish(doc, "x", len(doc.events), None)
        return [repr(vars(out)), *kept, *found]
    except Exception as exc:
        return [type(exc), str(exc)]
    finally:
        X.Extractor.finish = finish  # type: ignore[method-assign]


def _same(data: dict[str, Any], monkeypatch: pytest.MonkeyPatch, batches: int = 1) -> None:
    walk = X._WALK
    assert walk is not None
    expected = _extract(data, batches)
    monkeypatch.setattr(X, "_WALK", None)
    assert _extract(data, batches) == expected
    monkeypatch.setattr(X, "_WALK", walk)


@needs_c
def test_shared_corpus(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recordings = corpus_recordings()
    assert recordings
    for path in recordings:
        data = orjson.loads(path.read_bytes())
        _same(data, monkeypatch)
        _same(data, monkeypatch, batches=3)


@needs_c
def test_generated_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for seed in (11, 12):
        for path in make_corpus(tmp_path / str(seed), 4, 2.0, seed, "--ext", ".appmap.json"):
            data = orjson.loads(path.read_bytes())
            _same(data, monkeypatch)
            _same(data, monkeypatch, batches=4)


LOGGER = {"defined_class": "logging.Logger", "method_id": "info", "path": "l.py", "lineno": 1}
PARAMETERS: list[Any] = [
    [{"name": "self", "value": "x"}, {"name": "msg", "value": "hello"}],
    [{"name": "a", "properties": [{"name": "b"}]}, {"value": None}],
    [{"name": "msg", "value": None}],
    ["odd", {"name": "x"}],
    [],
    "text",
    {"name": "a"},
]


def _with_odd_fields(rng: random.Random, events: list[Any]) -> list[Any]:
    """Log calls, parameters, numbers of every kind where the elapsed time goes; rarely a value
    that fails the extraction (both walks must raise the same error)."""
    for event in events:
        if not isinstance(event, dict):
            continue
        if event.get("event") == "call":
            if rng.random() < 0.15:
                event.update(LOGGER)
            if rng.random() < 0.4:
                event["parameters"] = rng.choice(PARAMETERS)
            elif rng.random() < 0.005:
                event["parameters"] = [{"name": ["unhashable"]}]
        elif rng.random() < 0.5:
            event["elapsed"] = rng.choice([0.1, 0.2, 1e-9, 3, 2**80, False, -0.5, 1e308])
        elif rng.random() < 0.005:
            event["elapsed"] = 10**400  # (too large for a float)
    return events


def _document(events: list[Any], **extra: Any) -> dict[str, Any]:
    return {"version": "1.12", "metadata": {}, "classMap": CLASS_MAP, "events": events, **extra}


@needs_c
def test_random_recordings(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(18)
    for n in range(80):
        events = _events(rng, rng.randint(1, 60))
        if n % 2:
            events = _with_odd_fields(rng, events)
        _same(_document(events), monkeypatch)
        _same(_document(events), monkeypatch, batches=3)


@needs_c
def test_mutated_recordings(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    for _ in range(10):
        events = _with_odd_fields(rng, _events(rng, 25))
        for mutated in _mutations(rng, events):
            _same(_document(mutated), monkeypatch)


@needs_c
def test_recursion_and_missing_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    """A function calling itself (its total counted at its outermost frame), calls that never
    return, and a deep tree (the walk has its own stack)."""
    events: list[Any] = []
    depth = 5000
    fn = {"defined_class": "User", "method_id": "save", "path": "app/user.rb", "lineno": 3}
    for i in range(depth):
        events.append({"id": i + 1, "event": "call", "thread_id": 1, **fn})
    for i in reversed(range(depth)):
        if i % 3:
            events.append(
                {
                    "id": 2 * depth - i,
                    "event": "return",
                    "thread_id": 1,
                    "parent_id": i + 1,
                    "elapsed": 0.001 * (depth - i),
                }
            )
    _same(_document(events), monkeypatch)


class _Node:
    """A call node that is not a `CallNode`: the C walk reads it by attribute."""

    def __init__(self, node: Any, parent: _Node | None) -> None:
        self.call, self.ret, self.parent = node.call, node.ret, parent
        self.children = [_Node(child, self) for child in node.children]


@needs_c
def test_nodes_of_another_class(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    walk = X._WALK
    for _ in range(10):
        data = _document(_with_odd_fields(rng, _events(rng, 40)))
        found = []
        for accelerated in (True, False):
            monkeypatch.setattr(X, "_WALK", walk if accelerated else None)
            doc = from_data(copy.deepcopy(data))
            roots = [_Node(root, None) for root in X.call_tree(doc.events).roots]
            extractor = X.Extractor(doc.class_map)
            try:
                bound = extractor.add(roots, True)
                out = extractor.finish(doc, "x", len(doc.events), None)
                found.append([repr(vars(out)), repr(_state(extractor)), repr(_bound(bound))])
            except Exception as exc:
                found.append([type(exc), str(exc)])
        assert found[0] == found[1]


LOGGING_CLASS_MAP = [
    *CLASS_MAP,
    {"type": "package", "name": "log", "children": [
        {"type": "class", "name": "Audit", "children": [
            {"type": "function", "name": "write", "location": "log/audit.py:2",
             "labels": ["logging", "io"]},
            {"type": "function", "name": "note", "location": "log/audit.py:8",
             "static": True, "labels": ["log"]},
        ]},
        {"type": "function", "name": "bare", "location": "log/bare.py:1"},
    ]},
    {"type": "function", "name": "top", "location": "top.py:1", "labels": ["x"]},
    {"type": "function", "name": "gen", "location": "ext/gen"},
    {"type": "function", "name": "5", "location": "n.py:True"},
]  # fmt: skip

# Function calls `Extractor._function` resolves in C: in the classMap or not, labelled log or
# not, logger methods and not, with odd defined classes.
FUNCTION_CALLS: list[dict[str, Any]] = [
    {"defined_class": "Audit", "method_id": "write", "path": "log/audit.py", "lineno": 2},
    {"defined_class": "Audit", "method_id": "note", "path": "log/audit.py", "lineno": 8},
    {"defined_class": "Audit", "method_id": "note", "static": True},
    {"defined_class": "", "method_id": "bare", "path": "log/bare.py", "lineno": 1},
    {"method_id": "bare", "path": "log/bare.py", "lineno": 1},
    {"method_id": "top", "path": "top.py", "lineno": 1},
    {"method_id": "top", "path": "top.py"},
    {"defined_class": "Logger", "method_id": "warn", "path": "l.rb", "lineno": 4},
    {"defined_class": "Logger", "method_id": "trace"},
    {"defined_class": "logging.Logger", "method_id": "error", "static": True},
    {"defined_class": "logging.Logger", "method_id": None},
    {"defined_class": 7, "method_id": "info"},
    {"defined_class": "a.b.C", "method_id": "go", "static": 0},
    {"defined_class": "User", "method_id": "save", "path": "app/user.rb", "lineno": 3},
    {"defined_class": "User", "method_id": "save", "path": "elsewhere.rb", "lineno": 3},
    {"defined_class": "User", "method_id": "save", "path": "app/user.rb", "lineno": 3.0},
    {"method_id": "bare", "path": "log/bare.py", "lineno": "1"},
    {"defined_class": "G", "method_id": "gen", "path": "ext/gen"},
    {"defined_class": "G", "method_id": "gen", "path": "ext/gen", "lineno": None},
    {"method_id": 5, "path": "n.py", "lineno": True},
    {"path": "top.py", "lineno": 1, "defined_class": "T"},
]


@needs_c
def test_function_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    """Function rows, class items, log tests and aggregates of functions met in many shapes
    (the C walk resolves a function's first call itself)."""
    rng = random.Random(31)
    for _ in range(40):
        events = _events(rng, rng.randint(5, 40))
        for event in events:
            if isinstance(event, dict) and event.get("event") == "call" and rng.random() < 0.6:
                for key in ("defined_class", "method_id", "path", "lineno", "static"):
                    event.pop(key, None)
                event.update(rng.choice(FUNCTION_CALLS))
                if rng.random() < 0.3:
                    event["parameters"] = [{"name": "msg", "value": "hi"}]
        data = _document(events)
        data["classMap"] = LOGGING_CLASS_MAP
        _same(data, monkeypatch)
        _same(data, monkeypatch, batches=3)


@needs_c
def test_events_with_key_objects_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C walk reads fields by the key objects it meets first (the decoder's, shared between
    events): events whose keys are other, equal objects read the same."""
    rng = random.Random(9)
    for _ in range(20):
        events = _with_odd_fields(rng, _events(rng, 30))
        mixed = [
            {key.encode().decode(): value for key, value in event.items()}
            if isinstance(event, dict) and rng.random() < 0.5
            else event
            for event in events
        ]
        _same(_document(mixed), monkeypatch)


def _http_and_sql_calls(rng: random.Random, n: int, functions: bool) -> list[Any]:
    """Calls and returns of HTTP server and client requests and SQL, with fields of the usual
    and of odd types, repeated (the C walk makes their dynamic code objects once their facts
    are kept), and function calls the classMap does not have (resolving one makes the
    ClassMap keep `by_fqid`: then the Python makes the dynamic objects)."""
    servers = [
        {"request_method": "GET", "path_info": "/a/1"},
        {"request_method": "GET", "path_info": "/a/2", "normalized_path_info": "/a/{id}"},
        {"request_method": "post", "path_info": "/b"},
        {"request_method": None, "path_info": "/c"},
        {"request_method": 1, "path_info": "/d"},
        {"path_info": ["/e"]},
        {},
        [],
        None,
        "GET /f",
    ]
    clients = [
        {"request_method": "GET", "url": "http://svc:8/x?q=1"},
        {"request_method": "PUT", "url": "https://u:p@svc/y"},
        {"url": None},
        {"url": 3},
        {},
        None,
    ]
    queries = [
        {"sql": "SELECT * FROM t WHERE id = 1", "database_type": "postgres"},
        {"sql": "SELECT * FROM t WHERE id = 2", "database_type": "postgres"},
        {"sql": "INSERT INTO u VALUES (1)"},
        {"sql": "select 1", "database_type": ""},
        "UPDATE v SET a = 1",
        {"sql": 5},
    ]
    events: list[Any] = []
    open_ids: list[int] = []
    for i in range(1, n + 1):
        if open_ids and rng.random() < 0.45:
            call_id = open_ids.pop()
            ret: dict[str, Any] = {"event": "return", "id": 10_000 + i, "parent_id": call_id}
            ret["elapsed"] = rng.choice([0.25, 1, 0.001])
            response = rng.choice(
                [
                    {"status_code": 200},
                    {"status": "404"},
                    {"status_code": True},
                    {"status_code": None, "status": 5},
                    {"status_code": 201.0},
                    {},
                    [],
                    None,
                ]
            )
            ret[rng.choice(["http_server_response", "http_client_response"])] = response
            if rng.random() < 0.2:
                ret["http_client_response"] = {"status_code": 502}
            events.append(ret)
            continue
        call: dict[str, Any] = {"event": "call", "id": i, "thread_id": 1}
        pick = rng.random()
        if pick < 0.3:
            call["http_server_request"] = copy.deepcopy(rng.choice(servers))
            message = rng.choice(
                [
                    [{"name": "id", "value": "1"}, {"name": "a", "properties": [{"name": "b"}]}],
                    [{"name": "é"}, {"name": 1}, "x", {"value": 2}, {"name": None}],
                    [],
                    None,
                    {"name": "id"},
                    "id",
                    "missing",
                ]
            )
            if message != "missing":
                call["message"] = message
        elif pick < 0.5:
            call["http_client_request"] = copy.deepcopy(rng.choice(clients))
        elif pick < 0.75 or not functions:
            call["sql_query"] = copy.deepcopy(rng.choice(queries))
        elif functions:
            call.update(defined_class=rng.choice(["Unknown", "app.C"]), method_id="m")
            call.update(path="nowhere.py", lineno=rng.randint(1, 3), static=False)
        events.append(call)
        open_ids.append(i)
    return events


@needs_c
def test_dynamic_code_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP and SQL calls' code objects, made in C from the kept facts where the Python would
    make them from the same (routes, external routes, queries), or by the Python."""
    rng = random.Random(47)
    for _ in range(60):
        data = _document(_http_and_sql_calls(rng, rng.randint(5, 60), rng.random() < 0.3))
        # (a document without a classMap list keeps `by_fqid` from the start)
        data["classMap"] = rng.choice([CLASS_MAP, [], None])
        _same(data, monkeypatch)
        _same(data, monkeypatch, batches=3)
