"""`CallPairing` and `tree_links` nest and pair events as `CallTreeBuilder` does (roots,
returns), without the trees, on well-formed and malformed event sequences of interleaved
threads."""

from __future__ import annotations

import random
from typing import Any

from tracetool.trace.stream import EventHead
from tracetool.trace.tree import CallNode, CallPairing, CallTreeBuilder, preorder, tree_links


def _events(rng: random.Random) -> list[EventHead]:
    events: list[EventHead] = []
    open_calls: dict[int, list[int]] = {1: [], 2: [], 3: []}
    next_id = 1
    for _ in range(rng.randrange(1, 60)):
        thread = rng.choice((1, 2, 3))
        stack = open_calls[thread]
        roll = rng.random()
        if roll < 0.5 or not stack:
            call_id = next_id if rng.random() > 0.05 else max(1, next_id - 3)  # duplicate ids
            next_id += 1
            events.append(EventHead(id=call_id, event="call", thread_id=thread))
            stack.append(call_id)
        elif roll < 0.8:
            events.append(EventHead(event="return", thread_id=thread, parent_id=stack.pop()))
        elif roll < 0.88:
            stack.pop()
            events.append(EventHead(event="return", thread_id=thread))  # by the stack
        elif roll < 0.94:
            # a return naming any earlier call (closed, finished, another thread's) or none
            events.append(
                EventHead(event="return", thread_id=thread, parent_id=rng.randrange(next_id + 2))
            )
        else:
            stack.pop()  # a call that never returns
    return events


def _expected(events: list[EventHead]) -> list[int]:
    builder = CallTreeBuilder()
    builder.add(events)
    position = {id(e): i for i, e in enumerate(events)}
    links = [-1] * len(events)
    for root in builder.roots:
        for node in preorder([root]):
            links[position[id(node.call)]] = position[id(root.call)]
            if node.ret is not None:
                links[position[id(node.ret)]] = position[id(node.call)]
    return links


def test_pairs_as_the_call_tree() -> None:
    rng = random.Random(7)
    late = 0
    for _ in range(3000):
        events = _events(rng)
        pairing = CallPairing()
        split = rng.randrange(len(events) + 1)  # in two blocks
        at, links = pairing.add(events[:split])
        more_at, more = pairing.add(events[split:])
        links += more
        assert at + [split + i for i in more_at] == [
            i for i, e in enumerate(events) if e.event == "call"
        ]
        assert pairing.position == len(events)
        if pairing.late:
            late += 1
            continue
        assert links == _expected(events)
    assert 100 < late < 2000  # both kinds were generated


def test_values_follow_the_pairing() -> None:
    """`add_values` gives each call its value, each return its call's (`add`'s links), else
    `none`, and sets `late` where `add` does."""
    rng = random.Random(5)
    for _ in range(3000):
        events = _events(rng)
        split = rng.randrange(len(events) + 1)
        by_links = CallPairing()
        _, links = by_links.add(events[:split])
        links += by_links.add(events[split:])[1]
        calls = [i for i, e in enumerate(events) if e.event == "call"]
        values = [f"v{i}" for i in calls]
        first = sum(1 for i in calls if i < split)  # calls in the first block
        by_values = CallPairing()
        got = by_values.add_values(events[:split], values[:first], "-")
        got += by_values.add_values(events[split:], values[first:], "-")
        assert by_values.late == by_links.late
        assert by_values.position == len(events)
        expected = [
            f"v{i}" if e.event == "call" else (f"v{links[i]}" if links[i] >= 0 else "-")
            for i, e in enumerate(events)
        ]
        assert got == expected


def test_preorder_is_root_then_position() -> None:
    rng = random.Random(3)
    for _ in range(500):
        events = _events(rng)
        _, links = CallPairing().add(events)
        builder = CallTreeBuilder()
        builder.add(events)
        position = {id(e): i for i, e in enumerate(events)}
        calls = [i for i, e in enumerate(events) if e.event == "call"]
        by_key = sorted(calls, key=lambda i: (links[i], i))
        assert by_key == [position[id(n.call)] for n in preorder(builder.roots)]


def _shape(node: CallNode) -> list[Any]:
    """A tree as nested (call, return, children) identities."""
    return [id(node.call), id(node.ret), [_shape(child) for child in node.children]]


def test_tree_links_give_each_tree_its_events() -> None:
    """A builder fed only the events of some trees (`tree_links`) builds them as the whole
    build does (what inspect relies on to build only the trees holding a match)."""
    rng = random.Random(11)
    for _ in range(3000):
        heads = _events(rng)
        events = [
            {
                k: getattr(e, k)
                for k in ("id", "event", "thread_id", "parent_id")
                if getattr(e, k) is not None
            }
            for e in heads
        ]
        whole = CallTreeBuilder()
        whole.add(events)
        links = tree_links(events)
        position = {id(e): i for i, e in enumerate(events)}
        roots = [position[id(root.call)] for root in whole.roots]
        assert all(links[r] == r for r in roots)
        wanted = {r for r in roots if rng.random() < 0.5}
        part = CallTreeBuilder()
        part.add([e for e, link in zip(events, links) if link >= 0 and links[link] in wanted])
        expected = [_shape(root) for root in whole.roots if position[id(root.call)] in wanted]
        assert [_shape(root) for root in part.roots] == expected
