"""Subtree digests hashed in C (`joined_sha256` in tracetool/_speedups_diagram.c: the sha256
of an action's digest and its children's subtree digests joined by newlines, as
`builder._leaf_digest` and `_inner_digest` make it) are the Python helpers' digests; digests
the C code declines (not ASCII, not a str) go to the helpers, whose result or error stands."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.diagram.test_speedups_diagram import needs_c
from tracetool.diagram import builder
from tracetool.diagram.model import Action

_DIGESTS: list[Any] = ["a", "b", "", "f" * 64, "loop:" + "0" * 64, "truncatedQuery"]
_ODD: list[Any] = ["caf\u00e9", "\U0001f600", 1, None]


def _tree(rng: random.Random, depth: int, odd: bool) -> Action:
    pool = _DIGESTS + (_ODD if odd and rng.random() < 0.1 else [])
    a = Action(3, rng.choice(pool))
    if depth < 3 and rng.random() < 0.6:
        a.children = [_tree(rng, depth + 1, odd) for _ in range(rng.randrange(1, 5))]
    return a


def _digests(roots: list[Action], sha: Any) -> Any:
    def walk(a: Action) -> Any:
        return (a.subtree_digest, [walk(c) for c in a.children])

    try:
        builder._SUBTREES(
            builder.parents_first(roots), {}, {}, builder._leaf_digest,
            builder._inner_digest, None, Action, sha,
        )  # fmt: skip
    except Exception as exc:
        return type(exc), str(exc)
    return [walk(r) for r in roots]


@needs_c
@pytest.mark.parametrize("odd", [False, True])
def test_as_the_python_helpers(odd: bool) -> None:
    for seed in range(300):
        made = []
        for _ in range(2):  # (two copies of one forest)
            rng = random.Random(seed)
            made.append([_tree(rng, 0, odd) for _ in range(3)])
        assert _digests(made[0], builder._SHA256) == _digests(made[1], None), seed
