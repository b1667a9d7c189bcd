"""Loop folding: repeated runs of sibling actions become one Loop action.

Contract (AppMap's detectLoops, reference/appmap.md §3.3, with its trailing-sibling bug fixed):

- Bottom-up, for each action with two or more children, for window sizes 1..5: a run of k ≥ 2
  consecutive, identical windows (same subtree digests) becomes `Loop(count=k)` whose children
  are the first window; the passes at one size repeat until nothing changes, then the next size.
  Root actions themselves are not folded (each root is a request or a test), as in AppMap.
- The members of the first window absorb the others: their `eventIds` are merged (sorted) and
  their `elapsed` summed, recursively by position. The loop's `elapsed` is the sum over its
  children, its digest `"loop"` and its subtree digest `"loop:" + sha256(member subtree digests)`.
- Every sibling is kept: AppMap's scan stops at `i + window <= len` and loses up to window-1
  trailing siblings whenever it forms a loop of two or more actions; ours does not.
- A pass compares windows by their digests left to right, so folding is O(n · 5) per pass and
  near-linear overall (AppMap hashes every window and re-scans once per candidate digest).
"""

from __future__ import annotations

from tracetool import accel
from tracetool.diagram.digests import loop_digest
from tracetool.diagram.model import LOOP, Action, count_actions

MAX_WINDOW = 5  # (also _speedups_diagram.c's)

# `fold` in C (tracetool/_speedups_diagram.c: the same passes, loops and absorbed members), or None
_FOLD = accel.function("fold_loops")


def fold(items: list[Action], tally: list[int] | None = None) -> list[Action]:
    """`items` (the children of one action, each subtree folded already and with its subtree
    digest) with their loops folded. The builder calls it for every action, children before
    parents, as it makes the subtree digests (`tracetool.diagram.builder.finish`). `tally`:
    `tally[0]` is moved by the change in the number of actions (a loop made, +1; the windows
    it absorbed after its first, minus every action of their subtrees)."""
    if _FOLD is not None:
        folded = _FOLD(items, tally, Action, LOOP, loop_digest)
        if folded is not NotImplemented:
            return folded  # type: ignore[no-any-return]
    # a loop needs two equal subtree digests among the siblings: most lists have none
    if len({a.subtree_digest for a in items}) == len(items):
        return items
    for window in range(1, MAX_WINDOW + 1):
        if len(items) < 2 * window:
            break
        while True:
            folded = _pass(items, window, tally)
            if folded is None:
                break
            items = folded
    return items


def _pass(items: list[Action], w: int, tally: list[int] | None) -> list[Action] | None:
    keys = [a.subtree_digest for a in items]
    n = len(items)
    out: list[Action] = []
    changed = False
    i = 0
    while i < n:
        # (the first test is a cheap necessary condition for the slice comparison)
        if i + 2 * w <= n and keys[i] == keys[i + w] and keys[i : i + w] == keys[i + w : i + 2 * w]:
            first = keys[i : i + w]
            windows = [items[i : i + w]]
            j = i + w
            while j + w <= n and keys[j : j + w] == first:
                windows.append(items[j : j + w])
                j += w
            out.append(_loop(windows))
            if tally is not None:
                tally[0] += 1 - count_actions([a for window in windows[1:] for a in window])
            changed = True
            i = j
        else:
            out.append(items[i])
            i += 1
    return out if changed else None


def _loop(windows: list[list[Action]]) -> Action:
    members = windows[0]
    for index, member in enumerate(members):
        _absorb(member, [w[index] for w in windows[1:]])
    loop = Action(LOOP, "loop")
    loop.count = len(windows)
    loop.subtree_digest = loop_digest([m.subtree_digest for m in members])
    loop.children = members
    loop.elapsed = sum((m.elapsed or 0) for m in members)
    loop.event_ids = []
    return loop


def _absorb(action: Action, duplicates: list[Action]) -> None:
    stack = [(action, duplicates)]
    while stack:
        target, dups = stack.pop()
        if dups:
            merged = list(target.event_ids)
            for d in dups:
                merged.extend(d.event_ids)
            merged.sort()
            target.event_ids = merged
        target.elapsed = (target.elapsed or 0) + sum((d.elapsed or 0) for d in dups)
        for index, child in enumerate(target.children):
            stack.append((child, [d.children[index] for d in dups if index < len(d.children)]))
