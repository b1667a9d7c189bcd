"""Normalization (balancing, renumbering) and the call tree."""

from __future__ import annotations

from tracetool.trace import build_call_tree, from_data, iter_postorder, iter_preorder, normalize


def test_unreturned_calls_get_synthetic_returns_innermost_first(builder) -> None:
    outer = builder.function("A", "outer", "a.py", 1)
    builder.function("A", "inner", "a.py", 5)  # never returns
    builder.ret(outer)
    builder.function("A", "dangling", "a.py", 9)  # never returns, open at the end
    doc = from_data(builder.doc())
    normalize(doc)
    shape = [(e["event"], e["id"], e.get("parent_id")) for e in doc.events]
    assert shape == [
        ("call", 1, None),
        ("call", 2, None),
        ("return", 3, 2),  # synthetic, closes inner before outer's return
        ("return", 4, 1),
        ("call", 5, None),
        ("return", 6, 5),
    ]
    assert "elapsed" not in doc.events[2]


def test_return_without_parent_id_matches_top_call_of_its_thread(builder) -> None:
    builder.function("A", "f", "a.py", 1)
    builder.events.append(
        {"id": 99, "event": "return", "thread_id": 1, "method_id": "f", "defined_class": "A"}
    )
    doc = from_data(builder.doc())
    normalize(doc)
    assert doc.events[1]["parent_id"] == 1
    assert not doc.warnings


def test_return_with_mismatched_signature_is_dropped(builder) -> None:
    builder.function("A", "f", "a.py", 1)
    builder.events.append({"id": 99, "event": "return", "thread_id": 1, "method_id": "other"})
    doc = from_data(builder.doc())
    normalize(doc)
    assert [e["event"] for e in doc.events] == ["call", "return"]
    assert doc.events[1]["parent_id"] == 1
    assert doc.warnings


def test_threads_nest_independently(builder) -> None:
    a = builder.function(
        "A",
        "a",
        "a.py",
        1,
    )
    b = builder.call(
        thread=2, defined_class="B", method_id="b", path="b.py", lineno=1, static=False
    )
    a2 = builder.function("A", "a2", "a.py", 2)
    builder.ret(b, thread=2)
    builder.ret(a2)
    builder.ret(a)
    tree = build_call_tree(builder.events)
    assert [n.call["method_id"] for n in tree.roots] == ["a", "b"]
    assert [c.call["method_id"] for c in tree.roots[0].children] == ["a2"]
    assert tree.roots[1].children == []


def test_legacy_shapes_are_coerced(builder) -> None:
    c = builder.call(
        http_server_request={
            "request_method": "GET",
            "path_info": ["/a", "b"],
            "normalized_path_info": [],
        }
    )
    builder.ret(c, http_server_response={"status": 200})
    doc = from_data(builder.doc())
    normalize(doc)
    assert doc.events[0]["http_server_request"] == {"request_method": "GET", "path_info": "/a,b"}
    assert doc.events[1]["http_server_response"] == {"status_code": 200}


def test_very_deep_tree_needs_no_recursion(builder) -> None:
    depth = 50_000
    ids = [builder.function("R", "rec", "r.py", 1) for _ in range(depth)]
    for call_id in reversed(ids):
        builder.ret(call_id)
    tree = build_call_tree(builder.events)
    assert len(tree.roots) == 1
    depths = [d for _, d in iter_preorder(tree.roots)]
    assert depths[-1] == depth - 1
    post = list(iter_postorder(tree.roots))
    assert post[0].id == ids[-1] and post[-1].id == ids[0]
    deepest = tree.nodes[ids[-1]]
    assert deepest.depth == depth - 1
    assert sum(1 for _ in deepest.ancestors()) == depth - 1
