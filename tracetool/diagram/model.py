"""The sequence-diagram model: actors and nested actions, shaped as AppMap's sequence.json.

Contract:

- `Diagram(actors, root_actions)`; `Actor(id, name, order)` where `id` is the actor's code-object
  fqid (`package:app/models`, `http:HTTP server requests`, `database:Database`, …).
- `Action` node types are AppMap's numbers: 1 Loop, 2 Conditional (unused), 3 Function,
  4 ServerRPC, 5 ClientRPC, 6 Query. Diff modes: 1 insert, 2 delete, 3 change.
- `to_json(diagram)` writes AppMap's sequence.json shape and key order (caller/callee as actor
  ids, absent values omitted), so AppMap's viewers and `compare` read our files;
  `from_json(obj)` reads AppMap's files and ours back (`source` names the file in errors).
- Trees are walked iteratively: diagrams of 10^5 actions and deep call stacks are fine.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tracetool.errors import TraceFormatError

LOOP = 1
CONDITIONAL = 2
FUNCTION = 3
SERVER_RPC = 4
CLIENT_RPC = 5
QUERY = 6

_new = object.__new__

INSERT = 1
DELETE = 2
CHANGE = 3


@dataclass
class Actor:
    id: str
    name: str
    order: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "order": self.order}


class Action:
    """One message of the diagram (or a loop around several)."""

    __slots__ = (
        "callee",
        "caller",
        "children",
        "count",
        "diff_mode",
        "digest",
        "elapsed",
        "event_ids",
        "former_name",
        "former_result",
        "labels",
        "name",
        "node_type",
        "parent",
        "query",
        "return_value",
        "route",
        "stable_properties",
        "static",
        "status",
        "subtree_digest",
    )

    def __init__(self, node_type: int, digest: str = "") -> None:
        self.node_type = node_type
        self.digest = digest
        self.subtree_digest = ""
        self.caller: Actor | None = None
        self.callee: Actor | None = None
        self.name: str | None = None
        self.static = False
        self.route: str | None = None
        self.status: Any = None
        self.query: str | None = None
        self.stable_properties: dict[str, Any] | None = None
        self.return_value: dict[str, Any] | None = None
        self.children: list[Action] = []
        self.elapsed: float | None = None
        self.event_ids: list[int] = []
        self.labels: list[str] | None = None
        self.count = 0
        self.diff_mode: int | None = None
        self.former_name: str | None = None
        self.former_result: str | None = None
        self.parent: Action | None = None

    @classmethod
    def function(
        cls,
        digest: str,
        caller: Actor | None,
        callee: Actor | None,
        name: str | None,
        static: bool,
        stable_properties: dict[str, Any] | None,
        return_value: dict[str, Any] | None,
        labels: list[str] | None,
        elapsed: float | None,
        event_ids: list[int],
    ) -> Action:
        """A FUNCTION action with its fields set, in one step: the same as `Action(FUNCTION,
        digest)` and setting these fields (the builder makes one per recorded call)."""
        a = _new(cls)
        a.node_type = FUNCTION
        a.digest = digest
        a.subtree_digest = ""
        a.caller = caller
        a.callee = callee
        a.name = name
        a.static = static
        a.route = None
        a.status = None
        a.query = None
        a.stable_properties = stable_properties
        a.return_value = return_value
        a.children = []
        a.elapsed = elapsed
        a.event_ids = event_ids
        a.labels = labels
        a.count = 0
        a.diff_mode = None
        a.former_name = None
        a.former_result = None
        a.parent = None
        return a

    @classmethod
    def bare(cls, digest: str) -> Action:
        """An action with only its digest, children, subtree digest and (no) callee (the
        other fields are not set: reading one raises AttributeError), for what needs only
        subtree digests (`tracetool.diagram.builder.root_digests`, one per recorded call)."""
        a = _new(cls)
        a.digest = digest
        a.subtree_digest = ""
        a.children = []
        a.callee = None
        return a

    # -- what AppMap calls nodeName / nodeResult

    @property
    def display_name(self) -> str:
        if self.node_type == FUNCTION:
            return self.name or ""
        if self.node_type in (SERVER_RPC, CLIENT_RPC):
            return self.route or ""
        if self.node_type == QUERY:
            return self.query or ""
        return "loop"

    @property
    def result(self) -> str | None:
        if self.node_type == FUNCTION:
            rv = self.return_value
            if not rv:
                return None
            rtype = rv.get("returnValueType")
            if isinstance(rtype, dict) and rtype.get("name"):
                return str(rtype["name"])
            if rv.get("raisesException"):
                return "exception!"
            return None
        if self.node_type in (SERVER_RPC, CLIENT_RPC):
            return None if self.status is None else str(self.status)
        return None

    @property
    def raises_exception(self) -> bool:
        if self.node_type == FUNCTION:
            return bool(self.return_value and self.return_value.get("raisesException"))
        if self.node_type in (SERVER_RPC, CLIENT_RPC):
            return isinstance(self.status, int) and self.status >= 400
        return False

    def actors(self) -> tuple[Actor | None, Actor | None]:
        if self.node_type in (FUNCTION, CLIENT_RPC, QUERY):
            return self.caller, self.callee
        if self.node_type == SERVER_RPC:
            return None, self.callee
        return None, None

    def walk(self) -> Iterator[tuple[Action, int]]:
        """This action and its descendants, pre-order, with depth (0 for self)."""
        stack: list[tuple[Action, int]] = [(self, 0)]
        while stack:
            action, depth = stack.pop()
            yield action, depth
            for child in reversed(action.children):
                stack.append((child, depth + 1))

    def __repr__(self) -> str:
        return f"Action({self.node_type}, {self.display_name!r}, children={len(self.children)})"


def parents_first(roots: list[Action]) -> list[Action]:
    """Every action of `roots` and below, each after its parent (children in reverse order:
    not the diagram's reading order, cheaper for walks that need only parents first)."""
    order: list[Action] = []
    stack = list(roots)
    while stack:
        action = stack.pop()
        order.append(action)
        stack.extend(action.children)
    return order


@dataclass
class Diagram:
    actors: list[Actor] = field(default_factory=list)
    root_actions: list[Action] = field(default_factory=list)
    # how many actions the builder made (`len` as built; None once changed, e.g. `collapse`d):
    # the count without a walk over every action
    built_size: int | None = field(default=None, compare=False, repr=False)

    def walk(self) -> Iterator[tuple[Action, int]]:
        for root in self.root_actions:
            yield from root.walk()

    def __len__(self) -> int:
        return count_actions(self.root_actions)


_children = operator.attrgetter("children")


def count_actions(roots: list[Action]) -> int:
    """How many actions `roots` and their descendants are (the CLI reports every diagram's
    size): counted a level at a time, each level's children gathered without a Python-level
    step per action."""
    count = 0
    level = roots
    while level:
        count += len(level)
        level = list(itertools.chain.from_iterable(map(_children, level)))
    return count


def set_parents(diagram: Diagram) -> None:
    for root in diagram.root_actions:
        root.parent = None
        for action, _ in root.walk():
            for child in action.children:
                child.parent = action


# ---------------------------------------------------------------- JSON


def _action_json(a: Action) -> dict[str, Any]:
    out: dict[str, Any] = {"nodeType": a.node_type}
    t = a.node_type
    if t == LOOP:
        out["count"] = a.count
    else:
        if t != SERVER_RPC and a.caller is not None:
            out["caller"] = a.caller.id
        if a.callee is not None:
            out["callee"] = a.callee.id
        if t == FUNCTION:
            out["name"] = a.name
            out["static"] = a.static
        elif t in (SERVER_RPC, CLIENT_RPC):
            out["route"] = a.route
            if a.status is not None:
                out["status"] = a.status
        elif t == QUERY:
            out["query"] = a.query
    out["digest"] = a.digest
    out["subtreeDigest"] = a.subtree_digest
    if t == FUNCTION:
        if a.stable_properties is not None:
            out["stableProperties"] = a.stable_properties
        if a.return_value is not None:
            out["returnValue"] = a.return_value
    out["children"] = []
    if a.elapsed is not None:
        out["elapsed"] = a.elapsed
    out["eventIds"] = a.event_ids
    if a.labels:
        out["labels"] = a.labels
    if a.diff_mode is not None:
        out["diffMode"] = a.diff_mode
    if a.former_name is not None:
        out["formerName"] = a.former_name
    if a.former_result is not None:
        out["formerResult"] = a.former_result
    return out


def _function_json(a: Action, children: list[Any]) -> dict[str, Any]:
    """`_action_json` of a function action that has everything a recorded call has (the bulk
    of every diagram): one dict display, no per-key tests. Same keys, same order; `children`
    is the value of "children" (`_action_json` leaves an empty list there)."""
    caller, callee = a.caller, a.callee
    if (
        caller is None
        or callee is None
        or a.stable_properties is None
        or a.return_value is None
        or a.elapsed is None
        or a.diff_mode is not None
        or a.former_name is not None
        or a.former_result is not None
    ):
        made = _action_json(a)
        if children:
            made["children"] = children
        return made
    out: dict[str, Any] = {
        "nodeType": FUNCTION,
        "caller": caller.id,
        "callee": callee.id,
        "name": a.name,
        "static": a.static,
        "digest": a.digest,
        "subtreeDigest": a.subtree_digest,
        "stableProperties": a.stable_properties,
        "returnValue": a.return_value,
        "children": children,
        "elapsed": a.elapsed,
        "eventIds": a.event_ids,
    }
    if a.labels:
        out["labels"] = a.labels
    return out


def to_json(diagram: Diagram) -> dict[str, Any]:
    """AppMap's sequence.json object for `diagram` (built iteratively)."""
    return {
        "actors": [a.to_json() for a in diagram.actors],
        "rootActions": actions_json(diagram.root_actions),
    }


def json_default(action: Action) -> dict[str, Any]:
    """`orjson.dumps(…, default=json_default)` of actions: the sequence.json object of one
    action, its children left as actions for orjson to come back for. The same bytes as
    dumping `actions_json`'s dicts, without building a tree of dicts and lists first, and
    nested as deep (orjson's limit falls at the same depth either way)."""
    if action.node_type == FUNCTION:
        return _function_json(action, action.children)
    out = _action_json(action)
    if action.children:
        out["children"] = action.children
    return out


def actions_json(actions: list[Action]) -> list[dict[str, Any]]:
    """The sequence.json objects of `actions` and their subtrees (`to_json`'s `rootActions`)."""
    roots: list[dict[str, Any]] = []
    stack: list[tuple[Action, list[dict[str, Any]]]] = [(a, roots) for a in reversed(actions)]
    pop, push = stack.pop, stack.append
    while stack:
        action, into = pop()
        node = _function_json(action, []) if action.node_type == FUNCTION else _action_json(action)
        into.append(node)
        children = action.children
        if children:
            inner = node["children"]
            for child in reversed(children):
                push((child, inner))
    return roots


def from_json(obj: Any, source: str = "<diagram>") -> Diagram:
    """Read a sequence.json object (AppMap's or ours)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("actors"), list):
        raise TraceFormatError(f"{source}: not a sequence diagram (no actors list)")
    if not isinstance(obj.get("rootActions"), list):
        raise TraceFormatError(f"{source}: not a sequence diagram (no rootActions list)")
    actors: dict[str, Actor] = {}
    diagram = Diagram()
    for item in obj["actors"]:
        if not isinstance(item, dict) or "id" not in item:
            raise TraceFormatError(f"{source}: not a sequence diagram (an actor has no id)")
        known = Actor(str(item["id"]), str(item.get("name", item["id"])), int(item.get("order", 0)))
        actors[known.id] = known
        diagram.actors.append(known)

    def actor(value: Any) -> Actor | None:
        if value is None:
            return None
        key = value.get("id") if isinstance(value, dict) else str(value)
        found = actors.get(str(key))
        if found is None:
            found = Actor(str(key), str(key).split(":", 1)[-1], 0)
            actors[found.id] = found
        return found

    stack: list[tuple[Any, list[Action], Action | None]] = [
        (item, diagram.root_actions, None) for item in reversed(obj["rootActions"])
    ]
    while stack:
        item, into, parent = stack.pop()
        if not isinstance(item, dict) or not isinstance(item.get("nodeType"), int):
            raise TraceFormatError(f"{source}: not a sequence diagram (an action has no nodeType)")
        a = Action(item["nodeType"], str(item.get("digest", "")))
        a.subtree_digest = str(item.get("subtreeDigest", ""))
        a.caller = actor(item.get("caller"))
        a.callee = actor(item.get("callee"))
        a.name = item.get("name")
        a.static = bool(item.get("static", False))
        a.route = item.get("route")
        a.status = item.get("status")
        a.query = item.get("query")
        a.stable_properties = item.get("stableProperties")
        a.return_value = item.get("returnValue")
        a.elapsed = item.get("elapsed")
        a.event_ids = list(item.get("eventIds") or [])
        a.labels = item.get("labels") or None
        a.count = int(item.get("count") or 0)
        a.diff_mode = item.get("diffMode")
        a.former_name = item.get("formerName")
        a.former_result = item.get("formerResult")
        a.parent = parent
        into.append(a)  # pre-order pops keep sibling order
        for child in reversed(item.get("children") or []):
            stack.append((child, a.children, a))
    return diagram
