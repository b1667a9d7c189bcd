"""Loop folding in C (`_speedups.fold_loops`, tracetool/_speedups_diagram.c) folds exactly as
`tracetool.diagram.loops.fold` does in Python: the same list back when nothing folds, the same
loops (count, digest, children, elapsed, event ids), the same members changed (event ids
merged, elapsed summed, recursively by position), the same tally, and on hostile values
(elapsed of odd types, NaN, huge ints, unsortable or non-list event ids, unhashable or
non-string digests, children of other lengths) the same exception after the same changes."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from tracetool.diagram import loops
from tracetool.diagram.model import LOOP, Action

needs_c = pytest.mark.skipif(loops._FOLD is None, reason="tracetool._speedups is not built")

_ELAPSED: list[Any] = [None, None, 0, 1, 2.5, 0.1, 0.0, -0.0, True, 10**30, math.nan, math.inf]
_ODD_ELAPSED: list[Any] = ["x", [1], object()]


def _tree(rng: random.Random, depth: int, odd: bool) -> Action:
    a = Action(3, rng.choice(["f", "g"]))
    a.subtree_digest = rng.choice(["a", "b", "c"]) if depth else rng.choice(["a", "b"])
    a.elapsed = rng.choice(_ELAPSED + (_ODD_ELAPSED if odd and rng.random() < 0.05 else []))
    a.event_ids = [rng.randrange(100) for _ in range(rng.randrange(3))]
    if odd and rng.random() < 0.05:
        a.event_ids = rng.choice([("t", 1), (5, 2), ["s", 3], iter([4, 1])])
    if odd and rng.random() < 0.02:
        a.subtree_digest = rng.choice([1, 1.0, None, ("a",)])
    if depth < 2 and rng.random() < 0.5:
        a.children = [_tree(rng, depth + 1, odd) for _ in range(rng.randrange(4))]
    return a


def _items(seed: int, odd: bool) -> list[Action]:
    rng = random.Random(seed)
    n = rng.randrange(0, 24)
    pool = [_tree(rng, 1, odd) for _ in range(rng.randrange(1, 4))]
    items = []
    for _ in range(n):
        # mostly repeats of a few shapes (windows of 1..5 form), a fresh one now and then
        items.append(_copy(rng.choice(pool)) if rng.random() < 0.8 else _tree(rng, 1, odd))
    if odd and rng.random() < 0.05:
        items.append(_copy(items[-1]) if items else _tree(rng, 1, odd))
        items[-1].children = "not a list"  # type: ignore[assignment]
    return items


def _copy(a: Action) -> Action:
    b = Action(a.node_type, a.digest)
    b.subtree_digest = a.subtree_digest
    b.elapsed = a.elapsed
    b.event_ids = list(a.event_ids) if isinstance(a.event_ids, list) else a.event_ids
    b.children = [_copy(c) for c in a.children] if isinstance(a.children, list) else a.children
    return b


def _dump(a: Any, seen: dict[int, int]) -> Any:
    """An action as plain values (NaN by its text; each action by its first-seen number, so
    shared or repeated objects show)."""
    if not isinstance(a, Action):
        return ("value", repr(a))
    if id(a) in seen:
        return ("again", seen[id(a)])
    seen[id(a)] = len(seen)
    children = a.children
    kids = [_dump(c, seen) for c in children] if isinstance(children, list) else repr(children)
    ids = a.event_ids
    return (
        a.node_type,
        a.digest,
        repr(a.subtree_digest),
        a.count,
        type(a.elapsed).__name__,
        repr(a.elapsed),
        type(ids).__name__,
        repr(ids) if isinstance(ids, list | tuple) else "?",
        kids,
    )


def _fold(items: list[Action], with_tally: bool, c: bool, monkeypatch: Any) -> Any:
    tally = [100] if with_tally else None
    seen: dict[int, int] = {}
    before = [_dump(a, seen) for a in items]  # (numbers the inputs first)
    with monkeypatch.context() as m:
        if not c:
            m.setattr(loops, "_FOLD", None)
        try:
            out = loops.fold(items, tally)
        except Exception as exc:
            outcome: Any = ("raised", type(exc))
        else:
            outcome = ("same list" if out is items else "new list", [_dump(a, seen) for a in out])
    after = [_dump(a, {}) for a in items]
    return before, outcome, after, tally


@needs_c
@pytest.mark.parametrize("odd", [False, True])
def test_fold_as_python(odd: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    folded = raised = 0
    for seed in range(400 if odd else 300):
        for with_tally in (True, False):
            fast = _fold(_items(seed, odd), with_tally, True, monkeypatch)
            slow = _fold(_items(seed, odd), with_tally, False, monkeypatch)
            assert fast == slow, seed
            folded += fast[1][0] == "new list"
            raised += fast[1][0] == "raised"
    assert folded > 100
    assert raised > 5 if odd else raised == 0


def _runs(w: int, k: int, tail: int) -> list[Action]:
    """`k` repeats of a window of `w` actions (children of two lengths), then `tail` more."""
    out = []
    for rep in range(k):
        for t in range(w):
            a = Action(3, "f")
            a.subtree_digest = f"d{t}"
            a.elapsed = rep + t * 0.5
            a.event_ids = [rep * 10 + t]
            child = Action(3, "g")
            child.subtree_digest = "c"
            child.event_ids = [1000 + rep]
            child.elapsed = 1.5
            a.children = [child, _copy(child)] if rep % 2 else [child]
            out.append(a)
    for t in range(tail):
        a = Action(3, "f")
        a.subtree_digest = f"d{t}"
        out.append(a)
    return out


@needs_c
def test_windows_and_nesting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of 1 to 6 repeated 2 to 4 times, with a trailing part-window."""
    for w in range(1, 7):
        for k in (2, 3, 4):
            for tail in range(w + 1):
                for with_tally in (True, False):
                    fast = _fold(_runs(w, k, tail), with_tally, True, monkeypatch)
                    slow = _fold(_runs(w, k, tail), with_tally, False, monkeypatch)
                    assert fast == slow, (w, k, tail)
                    if w <= 5:
                        assert any(d[0] == LOOP for d in fast[1][1]), (w, k, tail)


@needs_c
def test_declines_what_it_does_not_fill() -> None:
    """Another action class, or items that are not a list: NotImplemented (Python folds)."""
    assert loops._FOLD is not None

    class Other:
        subtree_digest = "a"

    assert loops._FOLD([Other(), Other()], None, Other, LOOP, str) is NotImplemented
    a = Action(3, "f")
    a.subtree_digest = "a"
    assert loops._FOLD((a, a), None, Action, LOOP, str) is NotImplemented
    assert loops.fold([a]) == [a]
