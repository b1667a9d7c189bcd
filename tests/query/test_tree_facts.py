"""`query tree`'s row facts and signatures in C (`_speedups.tree_facts`) against their Python
loop (`tracetool.query.tree._facts` without the accelerator), which stays the reference.

Both must give every node the same facts, and fold the same siblings: the signatures are
other ints in C, so what is compared is which siblings they find equal, and the rows."""

from __future__ import annotations

import importlib
import random
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import corpus_recordings, make_corpus
from tracetool.filters.apply import call_tree
from tracetool.trace import build_call_tree
from tracetool.trace.normalize import apply_event_updates
from tracetool.trace.slim import load_slim
from tracetool.trace.tree import CallNode, preorder

T = importlib.import_module("tracetool.query.tree")

pytestmark = pytest.mark.skipif(T._TREE_FACTS is None, reason="the C accelerator is not built")


def _in_python(monkeypatch: pytest.MonkeyPatch, make: Any) -> Any:
    """`make()` with the C loop off (`_facts` runs its Python loop)."""
    with monkeypatch.context() as m:
        m.setattr(T, "_TREE_FACTS", None)
        return make()


_VARIANTS = [(None, True, 1000), (None, False, 1000), (1, True, 1000), (None, True, None)]


def _same(monkeypatch: pytest.MonkeyPatch, roots: list[CallNode], labels: dict[Any, str]) -> int:
    """Asserts the C facts are the Python ones (facts, folding, rows); the number of nodes."""
    fn_labels: dict[Any, str] = {}
    made_in_c = T._TREE_FACTS(
        roots, labels, {}, T._ABSENT, lambda n: T._label(n, labels, fn_labels), CallNode
    )
    assert made_in_c is not NotImplemented  # (the C loop ran, not its fallback)
    info_c, sig_c = made_in_c
    info_py, sig_py = _in_python(monkeypatch, lambda: T._facts(roots, labels))
    nodes = preorder(roots)
    assert len(info_c) == len(sig_c) == len(nodes) == len(info_py)
    for node in nodes:
        assert info_c[node] == info_py[node]
        kids = node.children
        for a, b in zip(kids, kids[1:]):  # (runs fold neighbours: the partition that matters)
            assert (sig_c[a] == sig_c[b]) == (sig_py[a] == sig_py[b])
    for a, b in zip(roots, roots[1:]):
        assert (sig_c[a] == sig_c[b]) == (sig_py[a] == sig_py[b])

    def rows() -> list[Any]:
        return [T._rows(roots, d, f, lim, labels) for d, f, lim in _VARIANTS]

    assert rows() == _in_python(monkeypatch, rows)
    return len(nodes)


def _labels_of(events: list[Any], every: int = 2) -> dict[Any, str]:
    """SQL labels as the index would give them, for some of the SQL calls (the others are
    labelled by `_label`, as a changed file's are)."""
    sql = [e for e in events if isinstance(e, dict) and "sql_query" in e]
    return {e.get("id"): f"Q{i % 5}" for i, e in enumerate(sql) if i % every == 0}


def test_shared_and_generated_recordings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = corpus_recordings() + make_corpus(tmp_path, 4, 1.5, 5, "--ext", ".appmap.json")
    checked = 0
    for path in paths:
        doc = load_slim(path, extras=False, messages=True)
        apply_event_updates(doc)
        roots = call_tree(doc.events).roots
        if roots:
            checked += _same(monkeypatch, roots, _labels_of(doc.events))
    assert checked > 5000


def _random_events(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """Calls of every kind, with the shapes a function's key tells apart: an absent class or
    method against a null one, `static` of any truth, a path null, empty or set, a line of an
    int, a float or a bool; SQL with and without an id; HTTP with odd statuses."""
    events: list[dict[str, Any]] = []
    open_ids: list[int] = []
    next_id = 1
    for _ in range(count):
        if open_ids and rng.random() < 0.45:
            call_id = open_ids.pop()
            ret: dict[str, Any] = {"id": next_id, "event": "return", "thread_id": 1}
            ret["parent_id"] = call_id
            if rng.random() < 0.8:
                ret["elapsed"] = rng.choice([0.001, 0.5, 2, 0.25])
            if rng.random() < 0.3:
                ret["http_server_response"] = {"status": rng.choice([200, 200.0, True, 404])}
            events.append(ret)
            next_id += 1
            continue
        call: dict[str, Any] = {"id": next_id, "event": "call", "thread_id": 1}
        shape = rng.random()
        if shape < 0.55:
            for field, values in (
                ("defined_class", ["A", "B", None, "Ü"]),
                ("method_id", ["m", "n", None]),
            ):
                if rng.random() < 0.85:
                    call[field] = rng.choice(values)
            if "defined_class" not in call and "method_id" not in call:
                call["method_id"] = "m"
            if rng.random() < 0.7:
                call["static"] = rng.choice([True, False, 0, 1, None, "yes", ""])
            if rng.random() < 0.8:
                call["path"] = rng.choice(["a.py", "b/c.py", "", None])
            if rng.random() < 0.8:
                call["lineno"] = rng.choice([1, 2, 2.0, True, None, 10**30])
        elif shape < 0.8:
            call["sql_query"] = {"sql": rng.choice(["SELECT 1", "select  1", "UPDATE t SET a=1"])}
            if rng.random() < 0.1:
                del call["id"]
        elif shape < 0.9:
            call["http_client_request"] = {"request_method": "GET", "url": "http://x/y"}
        elif shape < 0.95:
            call["http_server_request"] = {"request_method": "POST", "path_info": "/o/1"}
        else:
            call["message"] = [{"name": "p", "value": "1"}]
        events.append(call)
        open_ids.append(next_id)
        next_id += 1
    return events


def test_random_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20261128)
    for _ in range(60):
        events = _random_events(rng, rng.randint(1, 400))
        roots = build_call_tree(events).roots
        labels = _labels_of(events, every=rng.choice([1, 2, 3]))
        _same(monkeypatch, roots, labels)


def test_repeated_subtrees_fold_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten identical loops, then one that differs only deep down: the same runs both ways."""
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
                "path": "repo.py",
                "lineno": depth,
            }
        )
        if depth:
            call(depth - 1, sql)
        else:
            qid = next(ids)
            events.append({"id": qid, "event": "call", "thread_id": 1, "sql_query": {"sql": sql}})
            events.append({"id": next(ids), "event": "return", "thread_id": 1, "parent_id": qid})
        events.append(
            {"id": next(ids), "event": "return", "thread_id": 1, "parent_id": cid, "elapsed": 0.5}
        )

    for _ in range(10):
        call(4, "SELECT a FROM t")
    call(4, "SELECT a FROM u")
    roots = build_call_tree(events).roots
    _same(monkeypatch, roots, {})
    rows = T._rows(roots, None, True, 1000, {})
    assert [(r["depth"], r["count"]) for r in rows][:2] == [(0, 10), (1, 10)]
    assert rows[0]["elapsed_ms"] == 5000.0


def test_a_label_error_is_raised_as_in_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unhashable path fails the function's key in both loops, with the same error."""
    events = [
        {"id": 1, "event": "call", "thread_id": 1, "method_id": "m", "path": ["a.py"]},
        {"id": 2, "event": "return", "thread_id": 1, "parent_id": 1},
    ]
    roots = build_call_tree(events).roots
    with pytest.raises(TypeError, match="unhashable"):
        T._facts(roots, {})
    with pytest.raises(TypeError, match="unhashable"):
        _in_python(monkeypatch, lambda: T._facts(roots, {}))


def test_declines_a_node_class_it_does_not_know(monkeypatch: pytest.MonkeyPatch) -> None:
    class Node(CallNode):
        __slots__ = ("extra",)

    events = [
        {"id": 1, "event": "call", "thread_id": 1, "method_id": "m", "path": "a.py"},
        {"id": 2, "event": "return", "thread_id": 1, "parent_id": 1},
    ]
    roots = build_call_tree(events).roots
    odd = Node(roots[0].call, None)
    odd.ret = roots[0].ret
    assert T._TREE_FACTS([odd], {}, {}, T._ABSENT, lambda n: None, Node) is NotImplemented
    info, sig = T._facts([odd], {})  # (the Python loop, then)
    assert info[odd] == ("function", "#m", {"location": "a.py"}) and odd in sig


def test_a_tree_changed_while_read_is_an_error_not_a_crash() -> None:
    """A label that empties a node's children (no real one does) is refused, not read."""
    events = [
        {"id": 1, "event": "call", "thread_id": 1, "http_client_request": {"url": "http://x"}},
        {"id": 2, "event": "call", "thread_id": 1, "method_id": "m", "path": "a.py"},
        {"id": 3, "event": "return", "thread_id": 1, "parent_id": 2},
        {"id": 4, "event": "return", "thread_id": 1, "parent_id": 1},
    ]
    roots = build_call_tree(events).roots

    def label(node: CallNode) -> Any:
        node.children = []
        return ("http_client", "x", {})

    with pytest.raises(RuntimeError, match="changed while read"):
        T._TREE_FACTS(roots, {}, {}, T._ABSENT, label, CallNode)
