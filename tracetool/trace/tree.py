"""The call tree: calls nested by thread, built and walked without recursion.

`build_call_tree(events)` works on raw or normalized events. Each thread keeps a stack; a call
becomes a child of the innermost open call of its thread (or a root); a return closes its call
(by `parent_id`, or the innermost open call when it has none) and any calls opened inside it that
never returned. Roots are in document order. Deep trees (10^5 levels) are fine: nothing recurses.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tracetool.trace import events as ev
from tracetool.trace.events import Event


class CallNode:
    """A call with its return (None if it never returned) and its children."""

    __slots__ = ("_open", "call", "children", "parent", "ret")

    def __init__(self, call: Event, parent: CallNode | None) -> None:
        self.call = call
        self.ret: Event | None = None
        self.parent = parent
        self.children: list[CallNode] = []
        self._open = True

    @property
    def id(self) -> Any:
        return self.call.get("id")

    @property
    def kind(self) -> str:
        return ev.kind(self.call)

    @property
    def elapsed(self) -> float | None:
        return ev.elapsed(self.ret)

    @property
    def depth(self) -> int:
        d, node = 0, self.parent
        while node is not None:
            d += 1
            node = node.parent
        return d

    def ancestors(self) -> Iterator[CallNode]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def descendants(self) -> Iterator[CallNode]:
        for node, _ in iter_preorder(self.children):
            yield node

    def __repr__(self) -> str:
        return f"CallNode(id={self.id!r}, kind={self.kind}, children={len(self.children)})"


class CallTree:
    """All call trees of a document: `roots` in order, `nodes` by call id."""

    def __init__(self, roots: list[CallNode], nodes: dict[Any, CallNode]) -> None:
        self.roots = roots
        self.nodes = nodes

    def __iter__(self) -> Iterator[CallNode]:
        for node, _ in iter_preorder(self.roots):
            yield node

    def __len__(self) -> int:
        return len(self.nodes)

    def release(self) -> None:
        """Unlink every node from its parent and children. The tree is unusable afterwards, but
        it and the events it holds are freed by reference counting at once, without waiting for
        (and paying for) a cyclic-GC pass over the whole document."""
        for node in self.nodes.values():
            node.parent = None
            node.children = []
        self.roots = []


def build_call_tree(events: Iterable[Event]) -> CallTree:
    builder = CallTreeBuilder()
    builder.add(events)
    return builder.tree()


class CallTreeBuilder:
    """`build_call_tree` fed in pieces, so that a reader can take the finished trees out on the
    way (`take_finished`) and hold only the calls of unfinished ones."""

    def __init__(self) -> None:
        self.roots: list[CallNode] = []
        self.nodes: dict[Any, CallNode] = {}
        self.stacks: dict[Any, list[CallNode]] = {}

    def add(self, events: Iterable[Event]) -> None:
        roots, nodes, stacks = self.roots, self.nodes, self.stacks
        it = iter(events)
        first = next(it, None)
        if first is None:
            return
        # `get(event, key)` without a Python-level call per field (dicts and event structs)
        get = field_getter(first)
        for event in itertools.chain((first,), it):
            kind = get(event, "event")
            if kind == "call":
                stack = stacks.get(thread := get(event, "thread_id"))
                if stack is None:
                    stack = stacks[thread] = []
                parent = stack[-1] if stack else None
                node = CallNode(event, parent)
                (parent.children if parent is not None else roots).append(node)
                stack.append(node)
                nodes[get(event, "id")] = node
            elif kind == "return":
                parent_id = get(event, "parent_id")
                if parent_id is None:
                    stack = stacks.get(get(event, "thread_id")) or []
                    if not stack:
                        continue
                    target = stack[-1]
                else:
                    found = nodes.get(parent_id)
                    if found is None:
                        continue
                    target = found
                    stack = stacks.get(get(target.call, "thread_id")) or []
                if target.ret is None:
                    target.ret = event
                if target._open:
                    while stack:
                        popped = stack.pop()
                        popped._open = False
                        if popped is target:
                            break

    def tree(self) -> CallTree:
        return CallTree(self.roots, self.nodes)

    def take_finished(self) -> list[CallNode]:
        """The leading roots whose calls all returned or were closed, removed from the builder.

        A return naming a call of a tree taken out is ignored from then on (in a whole tree it
        would still become that call's return if it had none: only a malformed recording
        returns a call after its caller returned)."""
        done = 0
        for root in self.roots:
            if root._open:  # a closed root closed every call opened inside it
                break
            done += 1
        taken, self.roots[:done] = self.roots[:done], []
        nodes = self.nodes
        for node in preorder(taken):
            key = node.call.get("id")
            if nodes.get(key) is node:
                del nodes[key]
        return taken


def release(roots: list[CallNode]) -> None:
    """`CallTree.release` for some trees (their nodes unlinked, freed by reference counting)."""
    for node in preorder(roots):
        node.parent = None
        node.children = []


def field_getter(event: Any) -> Callable[[Any, str], Any]:
    """`get(event, key)` for this kind of event, without a Python-level call per field: `dict.get`
    for dicts; event structs name theirs in `field_getter` (`getattr`, for `MinimalEvent`)."""
    if isinstance(event, dict):
        return dict.get
    found = getattr(type(event), "field_getter", None)
    if found is not None:
        return found  # type: ignore[no-any-return]
    return lambda e, key: e.get(key)


def preorder(roots: Iterable[CallNode]) -> list[CallNode]:
    """Every node below `roots` (included), in pre-order (`iter_preorder` without depths)."""
    out: list[CallNode] = []
    append = out.append
    stack = list(roots)
    stack.reverse()
    pop, extend = stack.pop, stack.extend
    while stack:
        node = pop()
        append(node)
        children = node.children
        if children:
            extend(reversed(children))
    return out


def iter_preorder(nodes: Iterable[CallNode]) -> Iterator[tuple[CallNode, int]]:
    """(node, depth) in pre-order, depth 0 for the given nodes."""
    stack: list[tuple[CallNode, int]] = [(n, 0) for n in reversed(list(nodes))]
    while stack:
        node, depth = stack.pop()
        yield node, depth
        children = node.children
        for i in range(len(children) - 1, -1, -1):
            stack.append((children[i], depth + 1))


def iter_postorder(nodes: Iterable[CallNode]) -> Iterator[CallNode]:
    """Children before parents (for bottom-up computations such as subtree digests)."""
    stack: list[tuple[CallNode, bool]] = [(n, False) for n in reversed(list(nodes))]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        stack.append((node, True))
        for i in range(len(node.children) - 1, -1, -1):
            stack.append((node.children[i], False))
