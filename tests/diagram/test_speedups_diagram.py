"""The C accelerator of the sequence diagram (tracetool/_speedups_diagram.c: the call tree of
`tracetool.filters.apply.call_tree`, the walk of `tracetool.diagram.builder.actions_of`, the
subtree digests of `_subtree_digests`, PlantUML lines of `plantuml._batch_lines`) makes exactly the diagrams of the pure-Python code:
every recording of the shared corpus, generated ones, and recordings with odd or mutated
events, as structs and as dicts, filtered, expanded, digests only and streamed."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import corpus_recordings, make_corpus
from tracetool.diagram import builder, loops, plantuml
from tracetool.diagram.builder import DiagramOptions, build_diagram, root_digests
from tracetool.diagram.service import json_stream, render_bytes
from tracetool.diagram.streamed import stream_diagram
from tracetool.errors import TraceToolError
from tracetool.filters import FilterState, apply, bind
from tracetool.trace.document import from_data
from tracetool.trace.slim import load_slim
from tracetool.trace.tree import CallNode, CallTree, CallTreeBuilder, field_getter, preorder

try:
    from tracetool import _speedups  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - a build without a compiler
    _speedups = None

needs_c = pytest.mark.skipif(
    _speedups is None
    or builder._WALK is None
    or builder._SUBTREES is None
    or builder._DIGESTS is None
    or apply._CALL_TREE is None
    or plantuml._UML_LINES is None
    or apply._PREORDER_CALLS is None,
    reason="tracetool._speedups is not built",
)

CASES: list[tuple[DiagramOptions, FilterState | None]] = [
    (DiagramOptions(), None),
    (DiagramOptions(loops=False, expand=("package:app",), exclude=("package:lib",)), None),
    (DiagramOptions(client_routes=True), FilterState(hide_name=("class:app/User",))),
    (DiagramOptions(), FilterState(hide_external=True, limit_root_events=False)),
]


def _diagrams(path: Path) -> list[Any]:
    """Everything the walk decides, for one recording: rendered diagrams of its events as
    structs (options, filters) and as dicts, root digests, a streamed diagram; an error by its
    type (a malformed recording fails in the same place either way)."""
    out: list[Any] = []
    for structs in (True, False):
        try:
            doc = load_slim(path, extras=False, structs=structs)
            for options, state in CASES if structs else CASES[:1]:
                diagram = build_diagram(doc, options, state)
                out.append(render_bytes(diagram, "json"))
                out.append(render_bytes(diagram, "plantuml"))
            out.append(root_digests(bind(doc, sql_names=False)))
            # SQL calls' queries swapped for the unnamed one in the walk (the index's digest)
            swapped = root_digests(bind(doc), sql_names=False)
            out.append(swapped)
            copied = root_digests(apply.without_sql_names(bind(doc)))
            out.append(_AS_WITHOUT_SQL_NAMES if swapped == copied else (_DIFFERS, swapped, copied))
        except Exception as exc:
            out.append(
                f"{type(exc).__name__}: {exc}" if isinstance(exc, TraceToolError) else type(exc)
            )
    try:
        streamed = stream_diagram(path, DiagramOptions(), threshold=0)
        if streamed is not None:
            out.append(b"".join(json_stream(streamed.actors, streamed.batches())))
    except Exception as exc:
        out.append(type(exc))
    return out


_AS_WITHOUT_SQL_NAMES = "root_digests(bound, sql_names=False) as without_sql_names's"
_DIFFERS = "root_digests(bound, sql_names=False) differs from without_sql_names's"


def _same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[bool] = []
    walk = builder._WALK
    assert walk is not None

    def spy(*args: Any) -> Any:
        result = walk(*args)
        walked.append(result is not NotImplemented)
        return result

    with monkeypatch.context() as m:
        _fresh_caches(m)
        m.setattr(builder, "_WALK", spy)
        fast = _diagrams(path)
    assert all(walked), path  # (never declined)
    with monkeypatch.context() as m:
        _fresh_caches(m)
        m.setattr(builder, "_WALK", None)
        m.setattr(builder, "_SUBTREES", None)
        m.setattr(builder, "_DIGESTS", None)
        m.setattr(loops, "_FOLD", None)
        m.setattr(apply, "_CALL_TREE", None)
        m.setattr(apply, "_PREORDER_CALLS", None)
        m.setattr(apply, "_BIND_HEADS", None)
        m.setattr(plantuml, "_UML_LINES", None)
        reference = _diagrams(path)
    assert fast == reference, path
    assert not [x for x in fast if isinstance(x, tuple) and x[0] == _DIFFERS], path


def _counted_special_calls(m: pytest.MonkeyPatch) -> list[int]:
    """`ActionFactory.special_call` counted while `m` holds: [calls so far]."""
    count = [0]
    special = builder.ActionFactory.special_call

    def spy(*args: Any) -> Any:
        count[0] += 1
        return special(*args)

    m.setattr(builder.ActionFactory, "special_call", spy)
    return count


def _fresh_caches(m: pytest.MonkeyPatch) -> None:
    """Empty the caches kept across diagrams (the reference makes its own values)."""
    m.setattr(builder, "_SHARED", ({}, {}))
    m.setattr(builder, "_RPCS", {})


@needs_c
def test_shared_corpus(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recordings = corpus_recordings()
    assert recordings
    for path in recordings:
        _same(path, monkeypatch)


@needs_c
def test_generated_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for path in make_corpus(tmp_path, 6, 3.0, 11, "--ext", ".appmap.json"):
        _same(path, monkeypatch)


# ---------------------------------------------------------------- odd and mutated events

CLASS_MAP = [
    {
        "type": "package",
        "name": "app",
        "children": [
            {
                "type": "class",
                "name": "User",
                "children": [
                    {"type": "function", "name": "save", "location": "app/user.rb:3",
                     "static": False, "labels": ["persist"]},
                    {"type": "function", "name": "find", "location": "app/user.rb:9",
                     "static": True},
                ],
            }
        ],
    },
    {"type": "package", "name": "lib", "children": [
        {"type": "class", "name": "Util", "children": [
            {"type": "function", "name": "run", "location": "lib/util.rb:1", "static": True}]}]},
]  # fmt: skip

SAVE = {"defined_class": "User", "method_id": "save", "path": "app/user.rb", "lineno": 3}
FIND = {"defined_class": "User", "method_id": "find", "path": "app/user.rb", "lineno": 9}
RUN = {"defined_class": "Util", "method_id": "run", "path": "lib/util.rb", "lineno": 1}
UNKNOWN = {"defined_class": "Other", "method_id": "go", "path": "x/other.rb", "lineno": 4}
REQUEST = {"request_method": "GET", "path_info": "/users/1", "normalized_path_info": "/users/:id"}

CALL_VALUES: dict[str, list[Any]] = {
    "labels": [None, [], ["b", "a", "b"], [1, None], "label", {"a": 1}],
    "id": [None, "seven", 3.5, True],
    "sql_query": [
        {"sql": "SELECT * FROM users WHERE id = 1", "database_type": "sqlite"},
        {"sql": "SELECT users.id, users.name, users.email FROM users WHERE users.id = 1"},
        {"normalized_sql": "SELECT ?", "sql": "SELECT 2"},
        {"sql": ""},
        {"sql": 5},
        {"sql": "SELECT 1 ..."},
        None,
    ],
    "http_server_request": [REQUEST, {}, None],
    "http_client_request": [{"request_method": "POST", "url": "http://svc:81/x"}, None],
    "static": [True, False, None, "yes"],
}
RETURN_VALUES: dict[str, list[Any]] = {
    "return_value": [
        None,
        {},
        {"class": "User"},
        {"class": "builtins.str", "value": "x"},
        {"class": "Hash", "properties": [{"name": "a", "class": "Int"}, "odd", {"name": None}]},
        {"class": "Hash", "properties": "not a list"},
        {"properties": []},
        {"class": "Hash", "properties": None},
        {"properties": [{"class": "A"}, {"name": "b", "class": "B", "x": 1}, 1]},
    ],
    "elapsed": [None, 0, 1.25, True, "slow", [1]],
    "exceptions": [None, [], [{"class": "Boom"}], "boom"],
    "http_server_response": [{"status_code": 200}, {"status": 404}, None],
    "http_client_response": [{"status_code": 201}, None],
}


def _events(rng: random.Random, count: int) -> list[Any]:
    """`count` calls over 1-3 threads, nested at random, with random odd values."""
    events: list[Any] = []
    open_calls: dict[int, list[int]] = {1: [], 2: [], 3: []}
    next_id = 1
    while count or any(open_calls.values()):
        thread = rng.choice([1, 1, 1, 2, 3])
        stack = open_calls[thread]
        if count and (not stack or rng.random() < 0.55):
            call: dict[str, Any] = {"id": next_id, "event": "call", "thread_id": thread}
            call.update(rng.choice([SAVE, SAVE, FIND, RUN, UNKNOWN, {}]))
            for key, values in CALL_VALUES.items():
                if rng.random() < 0.12:
                    call[key] = rng.choice(values)
            events.append(call)
            stack.append(next_id)
            next_id += 1
            count -= 1
        elif stack:
            parent = stack.pop()
            ret: dict[str, Any] = {"id": next_id, "event": "return", "thread_id": thread}
            if rng.random() < 0.9:
                ret["parent_id"] = parent
            ret["elapsed"] = 0.5
            for key, values in RETURN_VALUES.items():
                if rng.random() < 0.2:
                    ret[key] = rng.choice(values)
            if rng.random() < 0.05:
                continue  # a call that never returns
            events.append(ret)
            next_id += 1
    return events


def _write(path: Path, events: list[Any], **extra: Any) -> Path:
    doc = {"version": "1.12", "metadata": {}, "classMap": CLASS_MAP, "events": events, **extra}
    path.write_bytes(orjson.dumps(doc))
    return path


@needs_c
def test_random_recordings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(18)
    for n in range(60):
        events = _events(rng, rng.randint(1, 60))
        extra: dict[str, Any] = {}
        if n % 7 == 3 and events:  # an eventUpdates entry replacing a return
            last = next(e for e in reversed(events) if e["event"] == "return")
            extra["eventUpdates"] = {str(last["id"]): {**last, "return_value": {"class": "X"}}}
        _same(_write(tmp_path / f"r{n}.appmap.json", events, **extra), monkeypatch)


def _mutations(rng: random.Random, events: list[Any]) -> Iterator[list[Any]]:
    """Copies of `events` with one event changed: a field dropped, set to an odd value, or the
    event replaced by something that is not one."""
    odd = [None, 0, "", [], {}, "x", 1.5, -1, {"class": None}]
    for _ in range(12):
        copy = [dict(e) for e in events]
        event = rng.choice(copy)
        action = rng.random()
        if action < 0.3 and len(event) > 1:
            del event[rng.choice([k for k in event if k != "event"] or ["id"])]
        elif action < 0.9:
            event[rng.choice(list(event))] = rng.choice(odd)
        else:
            copy[copy.index(event)] = rng.choice(["text", 5, None, []])
        yield copy


@needs_c
def test_mutated_recordings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    for n in range(8):
        events = _events(rng, 25)
        for k, mutated in enumerate(_mutations(rng, events)):
            _same(_write(tmp_path / f"m{n}_{k}.appmap.json", mutated), monkeypatch)


class _Event(Mapping[str, Any]):
    """An event that is neither a dict nor a struct: read through its `get` (`field_getter`'s
    generic reader)."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


@needs_c
def test_events_read_through_get(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    events = _events(rng, 40)
    data = {"version": "1.12", "metadata": {}, "classMap": CLASS_MAP, "events": events}

    def rendered() -> list[bytes]:
        doc = from_data(orjson.loads(orjson.dumps(data)), "<mapping>")
        doc.data["events"] = [_Event(e) for e in doc.events]
        diagram = build_diagram(doc, DiagramOptions())
        return [render_bytes(diagram, "json"), render_bytes(diagram, "plantuml")]

    fast = rendered()
    monkeypatch.setattr(builder, "_WALK", None)
    monkeypatch.setattr(builder, "_SUBTREES", None)
    monkeypatch.setattr(apply, "_CALL_TREE", None)
    monkeypatch.setattr(plantuml, "_UML_LINES", None)
    assert fast == rendered()


@needs_c
def test_declines_an_action_class_it_does_not_know(monkeypatch: pytest.MonkeyPatch) -> None:
    """A class without the slots (or with other ones) is declined: the Python loop runs."""

    class Plain:
        pass

    assert _speedups.diagram_actions([], {}, None, None, False, _context(Plain)) is NotImplemented
    digests = _speedups.diagram_digests([], {}, None, _context(Plain), {}, {}, None, None)
    assert digests is NotImplemented


def _context(action_class: Any) -> tuple[Any, ...]:
    factory = builder.ActionFactory()
    return (
        factory.callees,
        factory.callee,
        None,
        factory.special_call,
        factory.plain,
        factory._template,
        builder._return_key,
        factory.digests,
        None,
        builder._merge_labels,
        dict.get,
        0,
        action_class,
        builder._LEFT_OUT,
        factory.sql,
        None,
        CallNode,
        None,
        None,
        {},
        None,
    )


# ---------------------------------------------------------------- the call tree


def _shape(tree: CallTree, events: list[Any]) -> list[Any]:
    """A tree as plain data: per node in pre-order, its call and return (by position in
    `events`), parent and children (by pre-order number) and whether it is still open."""
    order = list(tree)
    number = {id(n): i for i, n in enumerate(order)}
    where = {id(e): i for i, e in enumerate(events)}
    return [
        (
            where[id(n.call)],
            None if n.ret is None else where[id(n.ret)],
            None if n.parent is None else number[id(n.parent)],
            [number[id(c)] for c in n.children],
            n._open,
        )
        for n in order
    ] + [sorted(map(repr, tree.nodes)), [number[id(r)] for r in tree.roots]]


def _trees(events: list[Any]) -> tuple[Any, Any]:
    def python() -> Any:
        builder = CallTreeBuilder()
        try:
            builder.add(events)
        except Exception as exc:
            return type(exc)
        return _shape(builder.tree(), events)

    def c() -> Any:
        try:
            tree = apply.call_tree(events)
        except Exception as exc:
            return type(exc)
        nodes, calls = _speedups.preorder_calls(tree.roots, CallNode)
        assert nodes == preorder(tree.roots) and calls == [n.call for n in nodes]
        return _shape(tree, events)

    return c(), python()


@needs_c
def test_call_trees(tmp_path: Path) -> None:
    """Random and mutated events, as dicts and as structs: the same tree node for node
    (returns by parent_id or by thread, calls never returned, returns of unknown calls,
    odd ids and threads)."""
    rng = random.Random(5)
    as_structs = 0
    for n in range(40):
        events = _events(rng, rng.randint(1, 50))
        for mutated in [events, *_mutations(rng, events)]:
            for _ in range(rng.randint(0, 3)):  # returns naming other calls
                if mutated and isinstance(mutated[-1], dict):
                    odd = rng.choice([1, 2, 3, "1", None, 2.0, True])
                    mutated.append({"event": "return", "thread_id": 1, "parent_id": odd})
            fast, reference = _trees(mutated)
            assert fast == reference
        path = _write(tmp_path / f"t{n}.appmap.json", events)
        structs = load_slim(path, structs=True).events
        as_structs += field_getter(structs[0]) is getattr
        fast, reference = _trees(structs)
        assert fast == reference
    assert as_structs  # (odd values make the others dicts)


@needs_c
def test_call_tree_declines_a_node_class_it_does_not_know() -> None:
    assert _speedups.call_tree([], [], {}, {}, object, dict.get, 0) is NotImplemented
    assert CallNode.__slots__  # (the class it knows)


@needs_c
def test_loops_and_nodes_out_of_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of repeated calls (folded into loops, nested, up to windows of 5) and a walk given
    nodes that are not its pre-order (read by id instead): the Python code's diagram."""
    rng = random.Random(11)
    events: list[Any] = []
    n = 0

    def call(fields: dict[str, Any], inner: int) -> None:
        nonlocal n
        n += 1
        me = n
        events.append({"id": me, "event": "call", "thread_id": 1, **fields})
        for _ in range(inner):
            call(rng.choice([SAVE, FIND, RUN]), rng.choice([0, 0, 1, 2]))
        n += 1
        events.append({"id": n, "event": "return", "thread_id": 1, "parent_id": me})

    for _ in range(30):
        call(SAVE, rng.randint(0, 40))
    data = {"version": "1.12", "metadata": {}, "classMap": CLASS_MAP, "events": events}

    def rendered(shuffle: bool) -> list[bytes]:
        doc = from_data(orjson.loads(orjson.dumps(data)), "<loops>")
        bound = bind(doc)
        if shuffle and bound.node_code_objects is not None:
            pairs = list(zip(bound.nodes, bound.node_code_objects))
            random.Random(2).shuffle(pairs)
            bound.nodes[:] = [p[0] for p in pairs]
            bound.node_code_objects[:] = [p[1] for p in pairs]
        out = []
        for options in (DiagramOptions(), DiagramOptions(loops=False)):
            diagram = builder.build_from_bound(bound, options)
            out += [render_bytes(diagram, "json"), render_bytes(diagram, "plantuml")]
        return out

    fast, shuffled = rendered(False), rendered(True)
    monkeypatch.setattr(builder, "_WALK", None)
    monkeypatch.setattr(builder, "_SUBTREES", None)
    monkeypatch.setattr(loops, "_FOLD", None)
    monkeypatch.setattr(apply, "_CALL_TREE", None)
    monkeypatch.setattr(plantuml, "_UML_LINES", None)
    assert fast == shuffled == rendered(False)
    assert b'"nodeType": 1' in fast[0]  # (loops were folded)


@needs_c
def test_plantuml_options_and_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """PlantUML without markup or notes, in chunks of a few lines (the C stops at each), of
    names long enough for notes and elapsed times of every kind: the Python lines."""
    rng = random.Random(9)
    events = _events(rng, 300)
    long_name = {"defined_class": "User", "method_id": "x" * 70, "path": "app/user.rb",
                 "lineno": 3}  # fmt: skip
    for event in events[::7]:
        if event["event"] == "call":
            event.update(long_name)
    data = {"version": "1.12", "metadata": {}, "classMap": CLASS_MAP, "events": events}
    diagram = build_diagram(from_data(data, "<uml>"), DiagramOptions())

    def rendered() -> list[str]:
        return [
            "\x00".join(plantuml.chunks(diagram, markup=markup, notes=notes, lines_per_chunk=n))
            for markup in (True, False)
            for notes in (True, False)
            for n in (1, 3, 8192)
        ]

    fast = rendered()
    monkeypatch.setattr(plantuml, "_UML_LINES", None)
    assert fast == rendered()


@needs_c
def test_plantuml_http_and_loops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP requests (odd fields, long routes, statuses from 400, with and without a caller)
    and loops (nested, timed) in PlantUML: the Python lines, in every option and chunk size;
    and once their texts are memoized, the C writes them all."""
    rng = random.Random(41)
    diagram = None
    seen: set[int] = set()
    for n in range(12):
        events = _http_events(rng, rng.randint(2, 40))
        if n % 2:  # all under one call: its repeated children are loops
            top = {"id": 10**6, "event": "call", "thread_id": 1, **SAVE}
            end = {"id": 10**6 + 1, "event": "return", "thread_id": 1, "parent_id": 10**6}
            events = [top, *events, end]
        for event in events:
            request = event.get("http_server_request") or event.get("http_client_request")
            if isinstance(request, dict) and rng.random() < 0.2:
                request["url" if "url" in request else "path_info"] = "/" + "p" * 60
            if event["event"] == "return" and rng.random() < 0.7:
                event["elapsed"] = rng.choice([0, 0.5, 1.25e-4, 3, 0.001234, 2.5e-9])
        data = {"version": "1.12", "metadata": {}, "classMap": CLASS_MAP, "events": events}
        path = _write(tmp_path / f"u{n}.appmap.json", events)
        try:
            diagrams = [build_diagram(from_data(data, "<uml>"), DiagramOptions())]
            doc = load_slim(path, extras=False, structs=True)
            diagrams.append(build_diagram(doc, DiagramOptions(client_routes=True)))
        except TraceToolError:
            continue
        kinds = {a.node_type for root in diagrams[0].root_actions for a, _ in root.walk()}
        seen |= kinds
        if {4, 5} & kinds:
            diagram = diagrams[0]

        def rendered(diagrams: list[Any] = diagrams) -> list[str]:
            return [
                "\x00".join(plantuml.chunks(d, markup=markup, notes=notes, lines_per_chunk=size))
                for d in diagrams
                for markup in (True, False)
                for notes in (True, False)
                for size in (2, 8192)
            ]

        fast = rendered()
        with monkeypatch.context() as m:
            m.setattr(plantuml, "_UML_LINES", None)
            assert fast == rendered(), n
    assert diagram is not None and {1, 4, 5} <= seen  # (loops, HTTP server and client)
    # memoized texts: the C alone writes the lines of a diagram's second rendering
    events = [{"id": 1, "event": "call", "thread_id": 1, **SAVE}]
    for i in range(2, 240, 2):
        j = i // 6  # (shapes in threes: loops)
        request: dict[str, Any] = (
            {"http_server_request": {"request_method": "GET", "path_info": f"/u/{j % 3}"}}
            if j % 4
            else {"http_client_request": {"request_method": "PUT", "url": "http://x/" + "y" * j}}
        )
        response = "http_server_response" if j % 4 else "http_client_response"
        status = {"status": [200, 404, 500][j % 5 % 3]} if j % 7 else {}
        events.append({"id": i, "event": "call", "thread_id": 1, **request})
        events.append({"id": i + 1, "event": "return", "thread_id": 1, "parent_id": i,
                       "elapsed": i / 1000, response: status})  # fmt: skip
    events.append({"id": 999, "event": "return", "thread_id": 1, "parent_id": 1, "elapsed": 1.5})
    data = {"version": "1.12", "metadata": {}, "classMap": CLASS_MAP, "events": events}
    diagram = build_diagram(from_data(data, "<uml>"), DiagramOptions())
    kinds = {a.node_type for root in diagram.root_actions for a, _ in root.walk()}
    assert {1, 4, 5} <= kinds
    texts = plantuml._Texts(plantuml._Writer(True, True))
    indents: list[str] = []
    first: list[str] = []
    stack: list[Any] = [(a, 1, False) for a in reversed(diagram.root_actions)]
    for _ in plantuml._batch_lines(stack, first, texts.w, texts, indents, True, 10**9):
        pass
    again: list[str] = []
    stack = [(a, 1, False) for a in reversed(diagram.root_actions)]
    memo = plantuml._memo(texts, False, indents)  # (notes are Python's)
    plantuml._UML_LINES(stack, again, memo, 10**9, builder.Action)
    assert stack == []
    texts.w.notes = False
    fresh: list[str] = []
    stack = [(a, 1, False) for a in reversed(diagram.root_actions)]
    with monkeypatch.context() as m:
        m.setattr(plantuml, "_UML_LINES", None)
        for _ in plantuml._batch_lines(stack, fresh, texts.w, texts, indents, False, 10**9):
            pass
    assert again == fresh


# ---------------------------------------------------------------- HTTP digests (`rpc_action`)

_ODD_HTTP: list[Any] = [None, "", "GET", "/a/{id}", 200, 0, -1, 2**63 - 1, True, 1.5, [1], {"x": 1}]


def _http_events(rng: random.Random, count: int) -> list[Any]:
    """HTTP server and client calls (nested under a function call), with odd fields, each
    shape repeated so the digest walk meets remembered requests."""
    shapes: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for _ in range(8):
        call: dict[str, Any] = {}
        for key, fields in (
            ("http_server_request", ("request_method", "normalized_path_info", "path_info")),
            ("http_client_request", ("request_method", "url")),
        ):
            roll = rng.random()
            if roll < 0.5:
                call[key] = {f: rng.choice(_ODD_HTTP) for f in fields if rng.random() < 0.8}
            elif roll < 0.6:
                call[key] = rng.choice([None, "x", [], 3])
        if rng.random() < 0.1:
            call["sql_query"] = {"sql": "SELECT 1"}
        ret: dict[str, Any] = {}
        for key in ("http_server_response", "http_client_response"):
            roll = rng.random()
            if roll < 0.6:
                ret[key] = {f: rng.choice(_ODD_HTTP) for f in ("status", "status_code")}
            elif roll < 0.7:
                ret[key] = rng.choice([None, {}, "x", [], 0])
        if rng.random() < 0.2:
            ret["exceptions"] = [{"class": "Boom"}]
        shapes.append((call, ret))
    events: list[Any] = []
    for i in range(count):
        call, ret = rng.choice(shapes)
        outer, inner = 4 * i + 1, 4 * i + 2
        events.append({"id": outer, "event": "call", "thread_id": 1, **SAVE})
        events.append({"id": inner, "event": "call", "thread_id": 1, **call})
        if rng.random() < 0.9:
            events.append({"id": 4 * i + 3, "event": "return", "thread_id": 1,
                           "parent_id": inner, **ret})  # fmt: skip
        events.append({"id": 4 * i + 4, "event": "return", "thread_id": 1, "parent_id": outer})
    return events


@needs_c
def test_http_digests_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The digest walk's HTTP requests whose key `_rpc` remembers are made in C: the digests of
    the Python code, odd fields (lists, booleans, floats, huge numbers, objects, a SQL query
    beside) and requests without a response included; and fewer calls to `special_call`."""
    rng = random.Random(29)
    spared = 0
    for n in range(40):
        path = _write(tmp_path / f"h{n}.appmap.json", _http_events(rng, rng.randint(1, 30)))
        doc = load_slim(path, extras=False, structs=False)
        results, calls = [], []
        for fast in (True, False):
            with monkeypatch.context() as m:
                _fresh_caches(m)
                count = _counted_special_calls(m)
                if not fast:
                    m.setattr(builder, "_WALK", None)
                    m.setattr(builder, "_SUBTREES", None)
                    m.setattr(builder, "_DIGESTS", None)
                for bound, names in ((bind(doc), False), (bind(doc, sql_names=False), True)):
                    results.append(root_digests(bound, sql_names=names))
            calls.append(count[0])
        assert results[:2] == results[2:], path
        assert calls[0] <= calls[1]
        spared += calls[1] - calls[0]
    assert spared > 50  # (the C path is taken)


@needs_c
def test_http_actions_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The diagram walk's HTTP requests whose key `_rpc` remembers are made in C, of events as
    structs and as dicts: the diagrams of the Python code (odd fields included), and fewer
    calls to `special_call`."""
    rng = random.Random(31)
    spared = 0
    for n in range(30):
        events = _http_events(rng, rng.randint(1, 30))
        for event in events:
            if event["event"] == "return" and rng.random() < 0.5:
                event["elapsed"] = rng.choice([0, 0.25, 3, True, "x", None])
        path = _write(tmp_path / f"a{n}.appmap.json", events)
        _same(path, monkeypatch)
        calls = []
        for fast in (True, False):
            with monkeypatch.context() as m:
                _fresh_caches(m)
                count = _counted_special_calls(m)
                if not fast:
                    m.setattr(builder, "_WALK", None)
                for structs in (True, False):
                    doc = load_slim(path, extras=False, structs=structs)
                    build_diagram(doc, DiagramOptions())
            calls.append(count[0])
        assert calls[0] <= calls[1]
        spared += calls[1] - calls[0]
    assert spared > 50  # (the C path is taken)


def test_rpc_key_leaves_out_an_unread_path_info() -> None:
    """Server requests of one non-empty normalized_path_info share a key whatever their
    path_info (`appmap_route` does not read it), and so one digest, route and status."""

    def key(normalized: Any, path: Any) -> Any:
        request = {"request_method": "GET", "normalized_path_info": normalized, "path_info": path}
        call = {"http_server_request": request}
        return builder._rpc_key(4, call, {"http_server_response": {"status": 200}}, False)

    assert key("/u/{id}", "/u/1") == key("/u/{id}", "/u/2") == key("/u/{id}", None)
    assert key("", "/u/1") != key("", "/u/2")
    assert key(None, "/u/1") != key(None, "/u/2")
    assert key(7, "/u/1") != key(7, "/u/2")  # (not a string: kept, as before)
    assert key("/u/{id}", [1]) is None


@needs_c
def test_rpc_context_checked() -> None:
    context = _context(builder.Action)
    for rpc in [(), ({}, 4, 5, False), ([], 4, 5, False, builder._NO_OBJECT), "rpc"]:
        with pytest.raises(TypeError):
            _speedups.diagram_actions([], {}, None, None, True, (*context, rpc))
    rpc = ({}, 4, 5, False, builder._NO_OBJECT)
    assert _speedups.diagram_actions([], {}, None, None, True, (*context, rpc)) == []


@needs_c
def test_digests_without_actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`diagram_digests` (no action made) gives the root digests of the C walk's actions and
    their subtree digests, on random recordings (calls without a lifeline, SQL, HTTP) bound as
    the index binds them; a list among a node's children is refused, not read as its frame."""
    rng = random.Random(41)
    for n in range(30):
        events = _events(rng, rng.randint(1, 80)) + _http_events(rng, rng.randint(0, 5))
        path = _write(tmp_path / f"d{n}.appmap.json", events)
        doc = load_slim(path, extras=False, structs=False)
        results = []
        for walk in (True, False):
            with monkeypatch.context() as m:
                _fresh_caches(m)
                if not walk:
                    m.setattr(builder, "_DIGESTS", None)
                for bound, names in ((bind(doc), False), (bind(doc, sql_names=False), True)):
                    results.append(root_digests(bound, sql_names=names))
        assert results[:2] == results[2:], path
    bound = bind(doc)
    assert bound.roots
    bound.roots[0].children.append([["x"]])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        root_digests(bound)


class _SlotEvent:
    """An event read with `getattr` (`field_getter`), its fields in slots as the structs'."""

    __slots__ = ("event", "id", "labels", "parent_id", "thread_id")
    field_getter = getattr

    def __init__(self, **fields: Any) -> None:
        for name in self.__slots__:
            if name in fields:
                setattr(self, name, fields[name])


@needs_c
def test_fields_read_by_slot_as_by_attribute() -> None:
    """The C reads a struct's fields at their slot offsets (`attr_of`): the same values as
    `getattr` gives, an empty slot raising as it does, and a class changed after a first read
    (a field now a property) read as it reads then."""
    events: list[Any] = []
    for i in range(1, 7):
        events.append(_SlotEvent(id=i, event="call", thread_id=i % 2, labels=None))
    for i in range(6, 0, -1):
        events.append(_SlotEvent(id=100 + i, event="return", thread_id=i % 2, parent_id=i))
    fast, reference = _trees(events)
    assert fast == reference and isinstance(fast, list)
    slot = _SlotEvent.__dict__["thread_id"]
    try:
        _SlotEvent.thread_id = property(lambda self: 1)  # type: ignore[assignment]
        changed, reference = _trees(events)
        assert changed == reference and changed != fast
    finally:
        _SlotEvent.thread_id = slot  # type: ignore[misc]
    assert _trees(events) == (fast, fast)
    del events[3].event  # (reading it raises AttributeError)
    fast, reference = _trees(events)
    assert fast is reference is AttributeError


class _TaggedEvent:
    """`_SlotEvent` with its `event` a class attribute, as the structs' tag."""

    __slots__ = ("id", "parent_id", "thread_id")
    event = "call"
    field_getter = getattr

    def __init__(self, **fields: Any) -> None:
        for name in _TaggedEvent.__slots__:
            if name in fields:
                setattr(self, name, fields[name])


class _TaggedReturn(_TaggedEvent):
    __slots__ = ()
    event = "return"


@needs_c
def test_class_attribute_read_as_by_attribute() -> None:
    """A field that is a class attribute (the structs' `event` tag) reads as `getattr` reads
    it, also once the class changes it."""
    events: list[Any] = [_TaggedEvent(id=i, thread_id=1, parent_id=None) for i in range(1, 5)]
    events += [_TaggedReturn(id=10 + i, thread_id=1, parent_id=i) for i in range(4, 0, -1)]
    fast, reference = _trees(events)
    assert fast == reference and isinstance(fast, list)
    try:
        _TaggedReturn.event = "call"
        changed, reference = _trees(events)
        assert changed == reference and changed != fast
    finally:
        _TaggedReturn.event = "return"
    assert _trees(events) == (fast, fast)
