"""Diagram JSON against AppMap's goldens: actors, structure, digests, loops; options; scale."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from tests.conftest import corpus_recordings
from tests.diagram.conftest import GOLD, REVOKE, REVOKE_JSON, app
from tracetool.diagram import (
    DiagramOptions,
    bound_digest,
    build_diagram,
    builder,
    from_json,
    roots_digest,
    to_json,
)
from tracetool.diagram import digests as dg
from tracetool.diagram.digests import SQL_ALGORITHM, canonical_sql
from tracetool.diagram.model import LOOP, QUERY
from tracetool.filters import bind, decode
from tracetool.trace import from_data, load
from tracetool.trace.slim import load_slim


def _flat(diagram: dict[str, Any]) -> list[dict[str, Any]]:
    out, stack = [], list(reversed(diagram["rootActions"]))
    while stack:
        action = stack.pop()
        out.append(action)
        stack.extend(reversed(action["children"]))
    return out


def _without(diagram: dict[str, Any], *keys: str, sql: bool = False) -> dict[str, Any]:
    diagram = copy.deepcopy(diagram)
    for action in _flat(diagram):
        for key in keys:
            action.pop(key, None)
        if sql and action["nodeType"] == QUERY:
            action["digest"] = "sql"
    return diagram


def test_show_user_matches_appmap_golden_exactly_except_new_labels() -> None:
    ours = to_json(build_diagram(load(app("show_user"))))
    golden = orjson.loads((GOLD / "show_user.sequence.json").read_bytes())
    # the golden predates AppMap's `labels` field; everything else, digests included, is equal
    assert _without(ours, "labels") == golden
    labels = {a.get("name"): a.get("labels") for a in _flat(ours)}
    assert labels["find"] == ["mvc.model"] and labels["query"] == ["db"]


def test_revoke_api_key_actors_structure_and_function_digests() -> None:
    ours = to_json(build_diagram(load(REVOKE)))
    golden = orjson.loads(REVOKE_JSON.read_bytes())
    assert len(ours["rootActions"]) == 3
    assert ours["actors"] == golden["actors"]
    assert [a["id"] for a in ours["actors"]] == [
        "http:HTTP server requests",
        "package:app/models",
        "package:app/controllers",
        "package:json",
        "database:Database",
    ]
    # SQL digests are ours (documented divergence), so subtree digests above SQL differ too
    assert _without(ours, "subtreeDigest", sql=True) == _without(golden, "subtreeDigest", sql=True)
    ours_fn = [a["digest"] for a in _flat(ours) if a["nodeType"] != QUERY]
    gold_fn = [a["digest"] for a in _flat(golden) if a["nodeType"] != QUERY]
    assert ours_fn == gold_fn


def test_any_filter_keeps_only_command_roots() -> None:
    filtered = build_diagram(load(REVOKE), filter=decode("{}"))
    assert len(filtered.root_actions) == 2
    assert [a.route for a in filtered.root_actions] == ["DELETE /api/api_keys"] * 2


def test_sql_digest_is_versioned_canonical_form() -> None:
    ours = to_json(build_diagram(load(REVOKE)))
    selects = [
        a
        for a in _flat(ours)
        if a["nodeType"] == QUERY and a["query"].startswith('SELECT * FROM "api_keys"')
    ]
    assert len({a["digest"] for a in selects}) == 1
    assert canonical_sql("select * from t where id in (1, 2, 3) and name = 'x'") == (
        "SELECT * FROM t WHERE id IN (?) AND name = ?"
    )
    assert canonical_sql('SELECT "a" FROM "t" WHERE x = $1') == canonical_sql(
        'SELECT "a" FROM "t" WHERE x = 7'
    )
    assert SQL_ALGORITHM == "tracetool-sql-canonical-v1"


def test_json_round_trips_through_from_json() -> None:
    diagram = build_diagram(load(app("list_users")))
    data = to_json(diagram)
    assert to_json(from_json(orjson.loads(orjson.dumps(data)))) == data


def _doc(calls: list[tuple[str, list[Any]]]) -> dict[str, Any]:
    """A recording from a nested spec [(method, children), …] of functions in package app."""
    events: list[dict[str, Any]] = []
    ids = iter(range(1, 10**7))
    # iterative: emit the call, push its return marker, then its children
    work: list[Any] = [("call", c) for c in reversed(calls)]
    while work:
        kind, item = work.pop()
        if kind == "ret":
            events.append(
                {
                    "id": next(ids),
                    "event": "return",
                    "thread_id": 1,
                    "parent_id": item,
                    "elapsed": 0.001,
                }
            )
            continue
        name, children = item
        call_id = next(ids)
        events.append(
            {
                "id": call_id,
                "event": "call",
                "thread_id": 1,
                "defined_class": "Svc",
                "method_id": name,
                "path": "app/svc.py",
                "lineno": ord(name[0]),
                "static": False,
            }
        )
        work.append(("ret", call_id))
        work.extend(("call", c) for c in reversed(children))
    names = sorted({e["method_id"] for e in events if e["event"] == "call"})
    class_map = [
        {
            "name": "app",
            "type": "package",
            "children": [
                {
                    "name": "Svc",
                    "type": "class",
                    "children": [
                        {
                            "name": n,
                            "type": "function",
                            "location": f"app/svc.py:{ord(n[0])}",
                            "static": False,
                        }
                        for n in names
                    ],
                }
            ],
        }
    ]
    return {"version": "1.12", "metadata": {}, "classMap": class_map, "events": events}


def test_loop_folding_keeps_trailing_siblings() -> None:
    leaf = lambda n: (n, [])  # noqa: E731
    doc = _doc([("root", [leaf("a"), leaf("b"), leaf("a"), leaf("b"), leaf("c")])])
    diagram = build_diagram(from_data(doc))
    kids = diagram.root_actions[0].children
    assert [k.node_type for k in kids] == [LOOP, 3]
    assert kids[0].count == 2 and [c.name for c in kids[0].children] == ["a", "b"]
    assert kids[1].name == "c"  # AppMap drops this trailing sibling
    assert kids[0].children[0].event_ids == [2, 6]
    unfolded = build_diagram(from_data(doc), DiagramOptions(loops=False))
    assert [k.name for k in unfolded.root_actions[0].children] == ["a", "b", "a", "b", "c"]
    # subtree digests do not depend on loop folding
    assert unfolded.root_actions[0].subtree_digest == diagram.root_actions[0].subtree_digest


def test_loop_folding_is_fast_on_long_runs() -> None:
    doc = _doc([("root", [("a", [("b", [])]) for _ in range(20000)] + [("c", [])])])
    diagram = build_diagram(from_data(doc))
    kids = diagram.root_actions[0].children
    assert kids[0].node_type == LOOP and kids[0].count == 20000
    assert len(kids[0].children[0].event_ids) == 20000
    assert kids[-1].name == "c"


def test_deep_call_stacks_do_not_recurse() -> None:
    chain: Any = ("z", [])
    for _ in range(30000):
        chain = ("d", [chain])
    diagram = build_diagram(from_data(_doc([chain])))
    depth = max(d for _, d in diagram.walk())
    assert depth == 30000
    assert to_json(diagram)["rootActions"][0]["name"] == "d"


def test_expand_puts_classes_on_their_own_lifelines() -> None:
    plain = build_diagram(load(REVOKE))
    expanded = build_diagram(load(REVOKE), DiagramOptions(expand=("package:app/models",)))
    assert "package:app/models" in [a.id for a in plain.actors]
    ids = [a.id for a in expanded.actors]
    assert "class:app/models/ApiKey" in ids and "package:app/models" not in ids
    assert len(expanded) == len(plain)


def test_exclude_drops_code_object_and_reparents() -> None:
    diagram = build_diagram(load(REVOKE), DiagramOptions(exclude=("package:app/models",)))
    assert "package:app/models" not in [a.id for a in diagram.actors]
    assert all(a.callee is None or a.callee.id != "package:app/models" for a, _ in diagram.walk())


RECORDINGS = [p for p in corpus_recordings() if p.stat().st_size < 2_500_000]


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name[:60])
def test_slim_and_full_loads_give_the_same_diagram(path: Any) -> None:
    full = to_json(build_diagram(load(path)))
    slim = to_json(build_diagram(load_slim(path)))
    assert slim == full


def test_every_return_shape_gets_its_own_return_value_and_digest() -> None:
    """Plain calls share cached templates and digests per (function, return shape): calls of
    one function with different return shapes keep their own, in both the full and the
    digest-only builds."""
    shapes: list[dict[str, Any]] = [
        {},
        {"return_value": None},
        {"return_value": {}},
        {"return_value": {"class": "builtins.str", "value": "x"}},
        {"return_value": {"class": "builtins.int", "value": "1"}},
        {"return_value": {"class": "builtins.dict", "properties": [{"name": "a", "class": "int"}]}},
        {"return_value": {"class": "builtins.dict", "properties": [{"name": "b", "class": "int"}]}},
        {"return_value": {"class": "builtins.dict", "properties": None}},
        {"return_value": "bare"},
        {"return_value": {"class": "builtins.str"}, "exceptions": [{"class": "E"}]},
        {"exceptions": [{"class": "E"}]},
    ]
    doc = _doc([("root", [("a", [("b", [])]) for _ in shapes] * 2)])
    rets = [e for e in doc["events"] if e["event"] == "return" and e["parent_id"] != 1]
    for i, ret in enumerate(rets):  # each `a` and its `b` return the same shape
        ret.update(shapes[(i // 2) % len(shapes)])
    by_call = {e["parent_id"]: e for e in doc["events"] if e["event"] == "return"}
    diagram = build_diagram(from_data(doc), DiagramOptions(loops=False))
    for action, _ in diagram.walk():
        ret = by_call[action.event_ids[0]]
        assert action.return_value == dg.return_value(ret)
        raises = bool(ret.get("exceptions"))
        assert action.stable_properties == {
            "event_type": "function",
            "id": f"app/Svc#{action.name}",
            "raises_exception": raises,
        }
        assert action.digest == dg.function_digest(f"app/Svc#{action.name}", raises)
    roots = [a.subtree_digest for a in diagram.root_actions]
    assert bound_digest(bind(from_data(doc), sql_names=False)) == roots_digest(roots)


def test_http_actions_cached_by_plain_fields_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP actions share their digest, route and status through a cache keyed by the fields
    they are made of (`ActionFactory._rpc`): values that compare equal but print differently
    (`true` and 1, 200 and 200.0), lists and absent objects never share an entry."""
    from tracetool.diagram import builder
    from tracetool.diagram.service import render_bytes

    requests: list[Any] = [
        {"request_method": "GET", "path_info": "/u/1", "normalized_path_info": "/u/:id"},
        {"request_method": "GET", "path_info": "/u/1"},
        {"request_method": "GET", "path_info": ["/u", "1"]},
        {"request_method": 1, "path_info": "/u/1"},
        {"request_method": True, "path_info": "/u/1"},
        "not an object",
        None,
    ]
    clients: list[Any] = [
        {"request_method": "POST", "url": "http://svc:81/x/1"},
        {"request_method": "POST", "url": "http://svc:82/x/1"},
        {"request_method": "POST", "url": 5},
        None,
    ]
    statuses: list[Any] = [
        {"status_code": 200},
        {"status_code": 200.0},
        {"status_code": True},
        {"status_code": 1},
        {"status": "201", "status_code": 200},
        {"mime_type": "text/html"},
        {"status_code": "200"},
    ]
    events: list[dict[str, Any]] = []
    n = 0
    for i, status in enumerate(statuses * 2):
        for request in requests:
            n += 2
            events.append(
                {"id": n, "event": "call", "thread_id": 1, "http_server_request": request}
            )
            events.append({"id": n + 1, "event": "return", "thread_id": 1, "parent_id": n,
                           "http_server_response": status, "elapsed": 0.1})  # fmt: skip
        for client in clients:
            n += 2
            call = {"id": n, "event": "call", "thread_id": 1, "http_client_request": client}
            if i % 2:
                call["http_server_request"] = requests[i % len(requests)]
            events.append(call)
            events.append({"id": n + 1, "event": "return", "thread_id": 1, "parent_id": n,
                           "http_client_response": status,
                           "http_server_response": statuses[i % 3]})  # fmt: skip
    doc = {"version": "1.12", "metadata": {}, "classMap": [], "events": events}

    def rendered() -> list[bytes]:
        out = []
        for routes in (False, True):
            options = DiagramOptions(client_routes=routes)
            diagram = build_diagram(from_data(copy.deepcopy(doc), "<http>"), options)
            out += [render_bytes(diagram, "json"), render_bytes(diagram, "plantuml")]
        return out

    cached = rendered()
    monkeypatch.setattr(builder, "_rpc_key", lambda *args: None)
    assert cached == rendered()


@pytest.mark.parametrize("accelerated", [True, False])
def test_diagram_size_counts_every_action(
    accelerated: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `len(diagram)` (counted a level at a time) is the number of actions `walk` visits, and
    # so is the builder's count (`built_size`, kept as loops fold), with the C subtree pass
    # and without it
    if not accelerated:
        monkeypatch.setattr(builder, "_SUBTREES", None)
    for path in corpus_recordings():
        for loops in (True, False):
            diagram = build_diagram(load(path), DiagramOptions(loops=loops))
            assert len(diagram) == sum(1 for _ in diagram.walk()), path
            assert diagram.built_size == len(diagram), path
    names = ["root", "f", "g", "h", "i", "x"]
    functions = [
        {"type": "function", "name": n, "location": f"a.py:{i}", "static": False}
        for i, n in enumerate(names)
    ]
    cmap = [{"type": "package", "name": "app", "children": [
        {"type": "class", "name": "A", "children": functions}]}]  # fmt: skip
    doc = {"version": "1.12", "metadata": {}, "classMap": cmap, "events": _looping_events(names)}
    diagram = build_diagram(from_data(doc, "<loops>"))
    assert diagram.built_size == len(diagram) == sum(1 for _ in diagram.walk())
    assert any(a.node_type == LOOP for a, _ in diagram.walk())


def _looping_events(names: list[str]) -> list[dict[str, Any]]:
    """Calls whose children repeat in windows of 1 to 3, nested: loops in loops."""
    events: list[dict[str, Any]] = []
    ids = iter(range(1, 100000))

    def call(name: str, inner: list[str]) -> None:
        n = next(ids)
        events.append({"id": n, "event": "call", "thread_id": 1, "defined_class": "A",
                       "method_id": name, "path": "a.py", "lineno": names.index(name),
                       "static": False})  # fmt: skip
        for child in inner:
            call(child, ["g", "g", "h"] if child == "f" else [])
        events.append({"id": next(ids), "event": "return", "thread_id": 1, "parent_id": n})

    call("root", ["f", "f", "f", "g", "h", "g", "h", "x", "g", "h", "i", "g", "h", "i", "f"])
    return events


def _sql_doc() -> dict[str, Any]:
    """Function calls around SQL calls: two statements (one twice), an empty statement, and a
    call that is both an HTTP request and a query (bound to its route, not to a query)."""
    doc = _doc([("root", [("a", []), ("b", []), ("c", []), ("d", []), ("e", [])])])
    calls = [e for e in doc["events"] if e["event"] == "call" and e["id"] != 1]
    for call, sql in zip(calls[:4], ["SELECT 1", "SELECT * FROM t", "SELECT 1", ""]):
        call["sql_query"] = {"sql": sql, "database_type": "sqlite"}
    calls[4]["http_server_request"] = {"request_method": "GET", "path_info": "/x"}
    calls[4]["sql_query"] = {"sql": "SELECT 2"}
    return doc


@pytest.mark.parametrize("walk", [True, False])
@pytest.mark.parametrize("route_too", [True, False])
def test_digest_of_named_sql_calls_as_without_sql_names(
    walk: bool, route_too: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`root_digests(bound, sql_names=False)` swaps each SQL call's query for the unnamed one
    as the walk meets it: the digests of `without_sql_names(bound)`, with the C walk and
    without; a SQL call bound to something else than a query (here an HTTP request's route)
    makes it walk `without_sql_names(bound)` itself."""
    from tracetool.filters import without_sql_names

    if not walk:
        monkeypatch.setattr(builder, "_WALK", None)
    doc = _sql_doc()
    if not route_too:
        route = doc["events"][-3]["id"]  # (the last call: its return, then the root's)
        doc["events"] = [e for e in doc["events"] if route not in (e["id"], e.get("parent_id"))]
    named = bind(from_data(doc))
    expected = builder.root_digests(without_sql_names(bind(from_data(doc))))
    copied: list[Any] = []

    def spy(bound: Any) -> Any:
        copied.append(bound)
        return without_sql_names(bound)

    monkeypatch.setattr(builder, "without_sql_names", spy)
    assert builder.root_digests(named, sql_names=False) == expected
    assert len(copied) == (1 if route_too else 0)
    assert bound_digest(named) == bound_digest(bind(from_data(doc), sql_names=False))


def test_digest_lifelines_of_modules_and_classes_without_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The digest walk finds whether a call has a lifeline (`Actors.actor_for` of actors
    without names: in C where the accelerator is) as the Python loop does: a module's
    functions (`class app/users`) join the package of the same id, a class outside any
    package has none (its calls are left out, their children move up)."""

    def fn(name: str, line: int) -> dict[str, Any]:
        return {"name": name, "type": "function", "location": f"x.py:{line}", "static": False}

    class_map = [
        {
            "name": "app",
            "type": "package",
            "children": [
                {
                    "name": "users",
                    "type": "package",
                    "children": [
                        {"name": "Admin", "type": "class", "children": [fn("grant", 1)]},
                    ],
                },
                {"name": "users", "type": "class", "children": [fn("find", 2)]},
            ],
        },
        {"name": "Loose", "type": "class", "children": [fn("run", 3)]},
    ]
    calls = [("Loose", "run", 3), ("app/users", "find", 2), ("app/users/Admin", "grant", 1)]
    events: list[dict[str, Any]] = []
    for n, (cls, method, line) in enumerate(calls * 2):  # nested: each call inside the last
        events.append(
            {
                "id": n + 1,
                "event": "call",
                "thread_id": 1,
                "defined_class": cls,
                "method_id": method,
                "path": "x.py",
                "lineno": line,
                "static": False,
            }
        )
    for n in reversed(range(len(calls) * 2)):
        events.append({"id": 100 + n, "event": "return", "thread_id": 1, "parent_id": n + 1})
    doc = {"version": "1.12", "metadata": {}, "classMap": class_map, "events": events}
    fast = builder.root_digests(bind(from_data(doc)), sql_names=False)
    monkeypatch.setattr(builder, "_WALK", None)
    monkeypatch.setattr(builder, "_SUBTREES", None)
    assert fast == builder.root_digests(bind(from_data(doc)), sql_names=False)
    diagram = build_diagram(from_data(doc), DiagramOptions(loops=False))
    assert sorted(a.id for a in diagram.actors) == ["package:app/users"]
    assert fast == [a.subtree_digest for a in diagram.root_actions]
