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
        self.taken_nodes: list[CallNode] = []  # what `take_finished` took last, in pre-order
        self.created: list[CallNode] | None = None  # when a list: every node made, in order

    def add(self, events: Iterable[Event]) -> None:
        roots, nodes, stacks = self.roots, self.nodes, self.stacks
        it = iter(events)
        first = next(it, None)
        if first is None:
            return
        # `get(event, key)` without a Python-level call per field (dicts and event structs)
        get = field_getter(first)
        created = self.created
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
                if created is not None:
                    created.append(node)
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

    def take_finished(self, unreturned: set[Any] | None = None) -> list[CallNode]:
        """The leading roots whose calls all returned or were closed, removed from the builder.

        A return naming a call of a tree taken out is ignored from then on (in a whole tree it
        would still become that call's return if it had none: only a malformed recording
        returns a call after its caller returned). `unreturned` collects the ids of the calls
        taken out without a return, so a reader can tell (`TreeBatches`)."""
        done = 0
        for root in self.roots:
            if root._open:  # a closed root closed every call opened inside it
                break
            done += 1
        taken, self.roots[:done] = self.roots[:done], []
        nodes = self.nodes
        self.taken_nodes = preorder(taken)
        for node in self.taken_nodes:
            key = node.call.get("id")
            if nodes.get(key) is node:
                del nodes[key]
                if unreturned is not None and node.ret is None:
                    unreturned.add(key)
        return taken


# Calls `TreeBatches` holds before it hands out the finished trees
HELD_CALLS = 10_000


class TreeBatches:
    """The call trees of events read in blocks, handed out a batch of finished roots at a time
    once more than `held` calls are held, so memory follows `held`, not the recording.

    The batches are exactly the roots of the whole tree, in order, unless a return names a call
    of a batch already handed out that had no return (a malformed recording): `late` is then
    set, and only the whole tree pairs them as a whole read would."""

    def __init__(self, held: int | None = None) -> None:
        self.builder = CallTreeBuilder()
        self.held = HELD_CALLS if held is None else held
        self.late = False
        self._unreturned: set[Any] = set()
        self.nodes: list[CallNode] = []  # the last batch's nodes, in pre-order

    def add(self, block: list[Event]) -> None:
        unreturned = self._unreturned
        if unreturned and block and not self.late:
            get = field_getter(block[0])
            for event in block:
                if get(event, "event") == "return" and get(event, "parent_id") in unreturned:
                    self.late = True
                    break
        self.builder.add(block)

    def take(self, final: bool = False) -> list[CallNode]:
        """The finished roots to hand out now (every root when `final`), or []."""
        builder = self.builder
        if final:
            roots, builder.roots = builder.roots, []
            builder.nodes = {}
            builder.stacks = {}
            self.nodes = preorder(roots)
            return roots
        if len(builder.nodes) <= self.held:
            return []
        roots = builder.take_finished(self._unreturned)
        self.nodes = builder.taken_nodes
        builder.taken_nodes = []
        return roots

    def batches(self, blocks: Iterable[list[Event]]) -> Iterator[list[CallNode]]:
        """Every root, in batches (none empty); `nodes` holds each batch's nodes in pre-order
        while it is handed out."""
        for block in blocks:
            self.add(block)
            taken = self.take()
            if taken:
                yield taken
        taken = self.take(final=True)
        if taken:
            yield taken


class CallPairing:
    """How `CallTreeBuilder` nests and pairs events, without building the trees (one pass over
    events read in blocks, for readers that need no `CallNode`s): `add(block)` gives, for each
    event, the position (counted over every event added) of the root call of a call's tree, of
    the call a return becomes the return of, or -1. Pre-order over the roots in document order
    is, per root, its calls in document order, so (root position, call position) sorts calls in
    pre-order. Memory follows the calls of unfinished trees.

    `late` is set where `TreeBatches` could set it: a return names a call of a finished tree
    (one whose calls are all closed) that had no return."""

    def __init__(self) -> None:
        self.position = 0  # events added so far
        self.late = False
        # thread -> [its open calls (innermost last), its open tree's root position, the calls
        # of that tree]
        self._threads: dict[Any, list[Any]] = {}
        # call id -> [position, id, returned, open, its thread's state] of the last call of
        # that id, while its tree is unfinished
        self._calls: dict[Any, list[Any]] = {}
        self._unreturned: set[Any] = set()

    def add(self, block: list[Any]) -> tuple[list[int], list[int]]:
        """(the offsets in `block` of its calls, one link per event of `block`), for events
        with attributes (`EventHead`, `MinimalEvent`)."""
        threads, calls = self._threads, self._calls
        links: list[int] = []
        at: list[int] = []
        append, call_at = links.append, at.append
        base = pos = self.position
        for event in block:
            kind = event.event
            if kind == "call":
                state = threads.get(event.thread_id)
                if state is None:
                    state = threads[event.thread_id] = [[], 0, None]
                if state[0]:
                    members = state[2]
                else:
                    state[1] = pos
                    state[2] = members = []
                record = [pos, event.id, False, True, state]
                state[0].append(record)
                members.append(record)
                calls[record[1]] = record
                append(state[1])
                call_at(pos - base)
            elif kind == "return":
                parent_id = event.parent_id
                if parent_id is None:
                    state = threads.get(event.thread_id)
                    if state is None or not state[0]:
                        append(-1)
                        pos += 1
                        continue
                    target = state[0][-1]
                else:
                    target = calls.get(parent_id)
                    if target is None:
                        if parent_id in self._unreturned:
                            self.late = True
                        append(-1)
                        pos += 1
                        continue
                    state = target[4]
                if target[2]:
                    append(-1)
                else:
                    target[2] = True
                    append(target[0])
                if target[3]:
                    stack = state[0]
                    while stack:
                        popped = stack.pop()
                        popped[3] = False
                        if popped is target:
                            break
                    if not stack:
                        self._finish(state)
            else:
                append(-1)
            pos += 1
        self.position = pos
        return at, links

    def add_values(self, block: list[Any], values: list[Any], none: Any) -> list[Any]:
        """`add` for a reader that needs a value per event rather than positions (prune's marks:
        one loop instead of `add` and a pass over its links): each call of `block` takes the
        next of `values` (one per call, in order), a return the value of the call it pairs
        with, any other event `none`. Pairs, nests, finishes trees and sets `late` as `add`
        does; one `CallPairing` is fed by `add` or by `add_values`, not both."""
        threads, calls = self._threads, self._calls
        out: list[Any] = []
        append = out.append
        given = iter(values).__next__
        for event in block:
            kind = event.event
            if kind == "call":
                state = threads.get(event.thread_id)
                if state is None:
                    state = threads[event.thread_id] = [[], 0, None]
                if state[0]:
                    members = state[2]
                else:
                    state[2] = members = []
                value = given()
                record = [value, event.id, False, True, state]
                state[0].append(record)
                members.append(record)
                calls[record[1]] = record
                append(value)
            elif kind == "return":
                parent_id = event.parent_id
                if parent_id is None:
                    state = threads.get(event.thread_id)
                    if state is None or not state[0]:
                        append(none)
                        continue
                    target = state[0][-1]
                else:
                    target = calls.get(parent_id)
                    if target is None:
                        if parent_id in self._unreturned:
                            self.late = True
                        append(none)
                        continue
                    state = target[4]
                if target[2]:
                    append(none)
                else:
                    target[2] = True
                    append(target[0])
                if target[3]:
                    stack = state[0]
                    while stack:
                        popped = stack.pop()
                        popped[3] = False
                        if popped is target:
                            break
                    if not stack:
                        self._finish(state)
            else:
                append(none)
        self.position += len(block)
        return out

    def _finish(self, state: list[Any]) -> None:
        calls, unreturned = self._calls, self._unreturned
        members: list[list[Any]] = state[2]
        for record in members:
            key = record[1]
            if calls.get(key) is record:
                del calls[key]
                if not record[2]:
                    unreturned.add(key)
        state[2] = None


def tree_links(events: list[dict[str, Any]]) -> list[int]:
    """How `CallTreeBuilder` nests and pairs one whole list of dict events (`CallPairing` for
    events with attributes, in blocks): per event, the position of its tree's root (a call), of
    the call it names (a return that finds its call: `parent_id`, else its thread's innermost
    open call), or -1. A call's tree is the one of its root `links[links[pos]]`: a builder fed
    only the events of some trees (in order) builds them as the whole build does, since a
    return only pairs or closes calls of its call's tree (`tracetool.inspect.scan`)."""
    links: list[int] = []
    append = links.append
    get = dict.get
    calls: dict[Any, list[Any]] = {}  # call id -> [position, root position, thread, open]
    stacks: dict[Any, list[list[Any]]] = {}
    pos = -1
    for event in events:
        pos += 1
        kind = get(event, "event")
        if kind == "call":
            stack = stacks.get(thread := get(event, "thread_id"))
            if stack is None:
                stack = stacks[thread] = []
            root: int = stack[-1][1] if stack else pos
            record = [pos, root, thread, True]
            stack.append(record)
            calls[get(event, "id")] = record
            append(root)
        elif kind == "return":
            parent_id = get(event, "parent_id")
            if parent_id is None:
                stack = stacks.get(get(event, "thread_id")) or []
                if not stack:
                    append(-1)
                    continue
                target = stack[-1]
            else:
                found = calls.get(parent_id)
                if found is None:
                    append(-1)
                    continue
                target = found
                stack = stacks.get(target[2]) or []
            append(target[0])
            if target[3]:
                while stack:
                    popped = stack.pop()
                    popped[3] = False
                    if popped is target:
                        break
        else:
            append(-1)
    return links


def blocks_of(events: Iterable[Any], size: int = 4096) -> Iterator[list[Any]]:
    """`events` in lists of `size`."""
    it = iter(events)
    while True:
        block = list(itertools.islice(it, size))
        if not block:
            return
        yield block


def release(roots: list[CallNode], nodes: list[CallNode] | None = None) -> None:
    """`CallTree.release` for some trees (their nodes unlinked, freed by reference counting);
    `nodes`: all of them, when the caller has them already."""
    for node in preorder(roots) if nodes is None else nodes:
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
