"""Diff of two sequence diagrams: a tree diff per child list, keyed by subtree digest.

Contract:

- `diff(base, head)` returns a diff `Diagram` (head's actions, plus base's removed ones) in which
  inserted actions have `diffMode` 1, deleted ones 2 (digest prefixed `delete:`, as AppMap) and
  changed ones 3 with `formerName` / `formerResult` taken from the base action — or `None` when
  the two diagrams are identical (same root subtree digests).
- Each child list is aligned on subtree digests (`difflib.SequenceMatcher`, no junk heuristic):
  equal runs are unchanged subtrees. Inside a differing run, actions are aligned again on their
  own digest; such pairs are the same call with different callees, so the diff recurses into
  their children. What is left pairs up position by position when node type and caller agree
  (a *change*: another function, SQL or route from the same place, or another result); the rest
  is deleted (the whole base subtree) or inserted (the whole head subtree).
- Cost is near-linear for similar diagrams; AppMap's Dijkstra over the grid of both pre-orders
  is O(N·M log) in time and memory. Because we align subtrees first, a call that exists on both
  sides is never reported as removed-and-added elsewhere (AppMap's alignment can do that).
- Actors are the union of both diagrams' actors used by the result, sorted by order.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from tracetool.diagram.digests import subtree_digest
from tracetool.diagram.model import CHANGE, DELETE, INSERT, Action, Actor, Diagram


def is_identical(base: Diagram, head: Diagram) -> bool:
    return [a.subtree_digest for a in base.root_actions] == [
        a.subtree_digest for a in head.root_actions
    ]


def diff(base: Diagram, head: Diagram) -> Diagram | None:
    """The diff diagram of base → head, or None when they are identical."""
    if is_identical(base, head):
        return None
    roots: list[Action] = []
    # work items: (base children, head children, output list)
    work: list[tuple[list[Action], list[Action], list[Action]]] = [
        (base.root_actions, head.root_actions, roots)
    ]
    while work:
        b_list, h_list, out = work.pop()
        _diff_list(b_list, h_list, out, work)
    _finish(roots)
    diagram = Diagram(_actors(base, head, roots), roots)
    return diagram


def _diff_list(
    b_list: list[Action],
    h_list: list[Action],
    out: list[Action],
    work: list[tuple[list[Action], list[Action], list[Action]]],
) -> None:
    matcher = SequenceMatcher(
        None, [a.subtree_digest for a in b_list], [a.subtree_digest for a in h_list], autojunk=False
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(_copy_tree(a) for a in h_list[j1:j2])
            continue
        _diff_run(b_list[i1:i2], h_list[j1:j2], out, work)


def _diff_run(
    b_run: list[Action],
    h_run: list[Action],
    out: list[Action],
    work: list[tuple[list[Action], list[Action], list[Action]]],
) -> None:
    matcher = SequenceMatcher(
        None, [a.digest for a in b_run], [a.digest for a in h_run], autojunk=False
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for same_b, same_h in zip(b_run[i1:i2], h_run[j1:j2]):
                node = _copy(same_h)
                out.append(node)
                work.append((same_b.children, same_h.children, node.children))
            continue
        bs, hs = b_run[i1:i2], h_run[j1:j2]
        for k in range(max(len(bs), len(hs))):
            b: Action | None = bs[k] if k < len(bs) else None
            h: Action | None = hs[k] if k < len(hs) else None
            if b is not None and h is not None and _comparable(b, h):
                node = _copy(h)
                node.diff_mode = CHANGE
                node.former_name = b.display_name
                node.former_result = b.result
                out.append(node)
                work.append((b.children, h.children, node.children))
                continue
            if b is not None:
                out.append(_marked_tree(b, DELETE))
            if h is not None:
                out.append(_marked_tree(h, INSERT))


def _comparable(b: Action, h: Action) -> bool:
    if b.node_type != h.node_type:
        return False
    b_caller, h_caller = b.actors()[0], h.actors()[0]
    return (b_caller.id if b_caller else None) == (h_caller.id if h_caller else None)


_FIELDS = (
    "node_type",
    "digest",
    "subtree_digest",
    "caller",
    "callee",
    "name",
    "static",
    "route",
    "status",
    "query",
    "stable_properties",
    "return_value",
    "elapsed",
    "event_ids",
    "labels",
    "count",
)


def _copy(a: Action) -> Action:
    node = Action(a.node_type)
    for name in _FIELDS:
        setattr(node, name, getattr(a, name))
    node.event_ids = list(a.event_ids)
    return node


def _copy_tree(a: Action, mode: int | None = None) -> Action:
    root = _copy(a)
    root.diff_mode = mode
    stack = [(a, root)]
    while stack:
        src, dst = stack.pop()
        for child in src.children:
            node = _copy(child)
            node.diff_mode = mode
            dst.children.append(node)
            stack.append((child, node))
    return root


def _marked_tree(a: Action, mode: int) -> Action:
    root = _copy_tree(a, mode)
    if mode == DELETE:
        for node, _ in root.walk():
            node.digest = f"delete:{node.digest}"
    return root


def _finish(roots: list[Action]) -> None:
    """Parents and subtree digests of the diff diagram itself."""
    order: list[Action] = []
    stack = list(roots)
    while stack:
        action = stack.pop()
        order.append(action)
        for child in action.children:
            child.parent = action
        stack.extend(action.children)
    for action in reversed(order):
        action.subtree_digest = subtree_digest(
            action.digest, [c.subtree_digest for c in action.children]
        )


def _actors(base: Diagram, head: Diagram, roots: list[Action]) -> list[Actor]:
    known = {a.id: a for a in base.actors}
    known.update({a.id: a for a in head.actors})
    used: dict[str, Actor] = {}
    for root in roots:
        for action, _ in root.walk():
            for actor in action.actors():
                if actor is not None and actor.id not in used:
                    used[actor.id] = known.get(actor.id, actor)
    return sorted(used.values(), key=lambda a: a.order)


def changes(diagram: Diagram) -> int:
    """How many actions of a diff diagram are marked."""
    return sum(1 for a, _ in diagram.walk() if a.diff_mode is not None)
