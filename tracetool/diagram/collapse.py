"""Collapsing a diagram for reading: deep calls inside one lifeline are hidden.

Contract:

- `collapse(diagram, depth=1, max_depth=4)` removes, in place, every function call that a
  lifeline makes to itself when it is nested in more than `depth` such calls (the helper of a
  helper of a method), and every function call more than `max_depth` levels below its root
  action (framework internals, on a big request most of the picture). What a hidden call does
  that matters to a reader — SQL queries and HTTP requests — is kept and moves up to the nearest
  shown action, so no query or request disappears; loops left empty go too. Repeated calls are
  already folded into loops (`tracetool.diagram.loops`).
- Returns the number of actions hidden. Digests are not recomputed (collapsing is for display;
  the JSON written by `sequence-diagram -f json` is never collapsed).
"""

from __future__ import annotations

from tracetool.diagram.model import FUNCTION, LOOP, Action, Diagram

__all__ = ["collapse"]


def _internal(action: Action) -> bool:
    return action.node_type == FUNCTION and action.caller is action.callee


def collapse(diagram: Diagram, depth: int = 1, max_depth: int = 4) -> int:
    """Hide deep calls (module doc); returns how many actions were hidden."""
    diagram.built_size = None  # (changed below)
    hidden = 0
    # (action, its level below the root, how many self-calls of its lifeline enclose it)
    stack: list[tuple[Action, int, int]] = [
        (a, 0, 1 if _internal(a) else 0) for a in diagram.root_actions
    ]
    while stack:
        action, level, inner = stack.pop()
        kept: list[Action] = []
        queue = list(action.children)
        while queue:
            child = queue.pop(0)
            own = inner + 1 if _internal(child) and child.callee is action.callee else 0
            if child.node_type == FUNCTION and (level + 1 > max_depth or own > depth):
                hidden += 1
                queue[0:0] = child.children  # what it did moves up, in order
                continue
            if child.node_type == LOOP:
                before = len(child.children)
                _prune(child, level + 1, max_depth)
                if not child.children:
                    hidden += before
                    continue
            child.parent = action
            kept.append(child)
        action.children = kept
        for child in kept:
            if child.node_type != LOOP:
                own = inner + 1 if _internal(child) and child.callee is action.callee else 0
                stack.append((child, level + 1, own))
    return hidden


def _prune(loop: Action, level: int, max_depth: int) -> None:
    """A loop below `max_depth` keeps only its SQL and HTTP descendants."""
    if level < max_depth:
        return
    out: list[Action] = []
    queue = list(loop.children)
    while queue:
        child = queue.pop(0)
        if child.node_type in (FUNCTION, LOOP):
            queue[0:0] = child.children
        else:
            child.parent = loop
            out.append(child)
    loop.children = out
