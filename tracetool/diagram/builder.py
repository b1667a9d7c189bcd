"""Building a sequence diagram from a recording, as AppMap's `sequence-diagram` does.

Contract (reference/appmap.md §3.3):

- Actors are code objects of types package, database, http and external-service that appear in
  the recording: a package is an actor when it has a non-package child (so the innermost
  code-bearing package, `package:app/models`); `expand` (e.g. `package:app/models`) puts the
  children of that code object on their own lifelines instead (`class:app/models/User`);
  `exclude` drops a code object and everything under it. An event belongs to its nearest
  included code object; events with none are left out and their children move up.
- Actor names: a package lifeline is named by the shortest suffix of its path no other lifeline
  shares (`app/users` and `admin/users`, never `users` twice; AppMap repeats the last
  component — a deliberate difference, only where names would collide). A Python module is one
  lifeline: the class holding a module's functions (`class:app/users`) joins the package of the
  same id (`package:app/users`) holding its classes, when that package is a lifeline.
- Actor order: `http:HTTP server requests` 0; other actors 1000, 2000, … in order of first
  appearance (an actor inside an already ordered code object shares its order); external services
  (sorted) and then `database:Database` come last, at (number of included objects + i + 1) × 1000.
- Actions nest by call stack: ServerRPC (HTTP server request with a response), ClientRPC (client
  request with a response), Query (SQL) and Function for everything else, each with its digest
  (`tracetool.diagram.digests`), `eventIds` (the call's id), `elapsed` (the return's seconds),
  function return type, and the callee's labels. Subtree digests are computed before loops are
  folded (`tracetool.diagram.loops`), so they do not depend on `loops`.
- Events are walked in document order (AppMap regroups them by thread first; we keep the
  recording's order so event ids read in sequence). Nothing recurses: any depth works.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracetool import accel
from tracetool.diagram import digests as dg
from tracetool.diagram.loops import fold
from tracetool.diagram.model import (
    CLIENT_RPC,
    FUNCTION,
    QUERY,
    SERVER_RPC,
    Action,
    Actor,
    Diagram,
    parents_first,
)
from tracetool.filters import Bound, bind, filter_nodes, has_patterns, without_sql_names
from tracetool.filters.apply import unnamed_query
from tracetool.trace.codeobjects import CodeObject
from tracetool.trace.document import TraceDocument, dispose, gc_paused
from tracetool.trace.tree import CallNode, field_getter

if TYPE_CHECKING:  # (imported where a filter is given: not by the indexer's digest hook)
    from tracetool.filters.state import FilterState

ACTOR_TYPES = frozenset({"package", "database", "http", "external-service"})
HTTP_ACTOR = "http:HTTP server requests"
DATABASE_ACTOR = "database:Database"
_SPECIAL_TYPES = frozenset({"query", "route", "external-route"})
_LEFT_OUT: tuple[Actor | None, bool, str, bool] = (None, False, "", False)  # `kept` leaves out
ANONYMOUS = Actor("", "", 0)  # a call's lifeline in `Actors(named=False)`


# `actions_of`'s loop in C (tracetool/_speedups_diagram.c), or None
_WALK: Callable[..., Any] | None = accel.function("diagram_actions")
_SUBTREES: Callable[..., Any] | None = accel.function("subtree_digests")  # `_subtree_digests`
# `_root_digests`' walk, making no action
_DIGESTS: Callable[..., Any] | None = accel.function("diagram_digests")


@dataclass(frozen=True)
class DiagramOptions:
    expand: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    loops: bool = True
    # Client requests by their normalized route (`tracetool.route_model.client_route`: values
    # as placeholders, loopback ports dropped) instead of AppMap's raw URL: what `archive` and
    # `compare` use, so runs that differ only in ephemeral ports have equal digests.
    client_routes: bool = False


def build_diagram(
    doc: TraceDocument, options: DiagramOptions | None = None, filter: FilterState | None = None
) -> Diagram:
    """The sequence diagram of one recording, after `filter` when given (module doc)."""
    options = options or DiagramOptions()
    needs_names = bool(options.expand or options.exclude) or (
        filter is not None and has_patterns(filter)
    )
    bound = bind(doc, sql_names=needs_names)
    kept = filter_nodes(bound, filter) if filter is not None else None
    diagram = build_from_bound(bound, options, kept)
    dispose(bound, release)
    return diagram


def root_digests(bound: Bound, sql_names: bool = True) -> list[str]:
    """Subtree digests of the root actions of `bound`'s default diagram (no filter, expand or
    exclude): what a recording's digest is made of. Cheaper than `build_from_bound`: actions
    carry only their digests, and loops are not folded (root actions are never folded, and
    subtree digests are computed before folding).

    Without `sql_names`, those of `without_sql_names(bound)`: every SQL call counts as bound
    to the unnamed query, for a bound whose SQL calls are bound to a query, route or
    external-route (as `bind` and the indexer bind every call with `sql_query`: `callee`).
    The walk swaps a SQL call's code object as it meets the call (`_SqlUnnamed`), reading the
    events of only those calls, without a second pass over every call and a copy of the
    bound's maps; when a SQL call's object is not a query of the classMap's database, it is
    `without_sql_names`'s bound that is walked."""
    options = DiagramOptions(loops=False)
    with gc_paused():
        if sql_names:
            return _root_digests(bound, options, None)
        try:
            return _root_digests(bound, options, _SqlUnnamed(bound.cmap))
        except _NotUnderDatabase:
            return _root_digests(without_sql_names(bound), options, None)


def _root_digests(
    bound: Bound, options: DiagramOptions, unname_sql: Callable[[CodeObject], CodeObject] | None
) -> list[str]:
    """`root_digests` of `bound` (the GC paused), with the SQL calls' `unname_sql`: in C
    without making the actions (`diagram_digests`: each made call's subtree digest as its
    children's are known), else from the actions `_build` makes."""
    if _DIGESTS is not None and bound.roots:
        live = _live_code_objects(bound, None)
        actors = Actors(included_code_objects(bound.cmap.roots, live, options), named=False)
        factory = ActionFactory(options.client_routes)
        in_order = (
            None if bound.node_code_objects is None else (bound.nodes, bound.node_code_objects)
        )
        get = field_getter(bound.roots[0].call)
        context = _walk_context(factory, actors, get, in_order, unname_sql, {})
        leaves, inner = _SHARED
        _bound_caches(_SHARED)
        try:
            digests = _DIGESTS(
                bound.roots, bound.code_objects, None, context, leaves, inner,
                _leaf_digest, _inner_digest,
            )  # fmt: skip
        finally:
            _bound_caches(_SHARED)
        if digests is not NotImplemented:
            return digests  # type: ignore[no-any-return]
    diagram = _build(bound, options, None, True, unname_sql)
    digests = [a.subtree_digest for a in diagram.root_actions]
    # freed while the GC is paused (its actions hold no cycle): alive when it resumes, they
    # would count towards a collection that then walks them all
    del diagram
    return digests


def release(bound: Bound) -> None:
    """Break the call tree's parent links so it is freed at once, without the cyclic GC."""
    for node in bound.nodes:
        node.parent = None
        node.children = []
    bound.nodes.clear()
    bound.roots.clear()
    bound.code_objects.clear()
    bound.node_code_objects = None


def build_from_bound(
    bound: Bound, options: DiagramOptions, kept: set[int] | None = None
) -> Diagram:
    """The diagram of a bound recording; with `kept`, only those call nodes (ids) take part."""
    with gc_paused():
        return _build(bound, options, kept)


class _NotUnderDatabase(Exception):
    """A SQL call bound to something else than a query of the classMap's database."""


class _SqlUnnamed:
    """`unname_sql(co)`: the code object `without_sql_names` binds a SQL call bound to `co`
    to, the unnamed query (made on the first SQL call, as `without_sql_names` makes it).

    Only for a `co` that is a query of the classMap's database (`_NotUnderDatabase` else):
    then the swap leaves the diagram's lifelines as `without_sql_names` leaves them, though
    they are found from the code objects before the walk. Both queries are under the same
    database object, which stays live either way and is a lifeline, and a query is never a
    lifeline nor makes one of its ancestors one (`included_code_objects`)."""

    def __init__(self, cmap: Any) -> None:
        self.cmap = cmap
        self.unnamed: CodeObject | None = None

    def __call__(self, co: CodeObject) -> CodeObject:
        if co.type != "query" or co.parent is None or co.parent.parent is not None:
            raise _NotUnderDatabase(co.fqid)
        if self.unnamed is None:
            self.unnamed = unnamed_query(self.cmap)
        if co.parent is not self.unnamed.parent:
            raise _NotUnderDatabase(co.fqid)
        return self.unnamed


def _build(
    bound: Bound,
    options: DiagramOptions,
    kept: set[int] | None,
    digests_only: bool = False,
    unname_sql: Callable[[CodeObject], CodeObject] | None = None,
) -> Diagram:
    live = _live_code_objects(bound, kept)
    actors = Actors(included_code_objects(bound.cmap.roots, live, options), not digests_only)
    factory = ActionFactory(options.client_routes)
    order: list[Action] = []
    in_order = None if bound.node_code_objects is None else (bound.nodes, bound.node_code_objects)
    roots = actions_of(
        bound.roots,
        bound.code_objects,
        actors,
        factory,
        kept,
        digests_only,
        order,
        in_order,
        unname_sql,
    )
    size = finish(roots, options, order, shared=digests_only)
    return Diagram(actors.sorted(), roots, built_size=size)


def finish(
    roots: list[Action],
    options: DiagramOptions,
    order: list[Action] | None = None,
    *,
    shared: bool = False,
) -> int:
    """Subtree digests, then loops folded (below each root action: nothing spans two roots);
    returns how many actions the trees hold then (`count_actions`, counted as loops fold
    instead of by walking them again). `order`: every action of the trees, parents before
    children, when the caller has it. `shared`: the subtree digests made are remembered for
    the next call too (`_SHARED`: the index's digests, recording after recording)."""
    if order is None:
        order = parents_first(roots)
    tally = [len(order)]
    _subtree_digests(roots, order, options.loops, tally, _SHARED if shared else None)
    return tally[0]


def actions_of(
    call_roots: list[CallNode],
    cos: dict[int, CodeObject],
    actors: Actors,
    factory: ActionFactory,
    kept: set[int] | None = None,
    digests_only: bool = False,
    order: list[Action] | None = None,
    in_order: tuple[list[CallNode], list[CodeObject]] | None = None,
    unname_sql: Callable[[CodeObject], CodeObject] | None = None,
) -> list[Action]:
    """The root actions of some call trees (their digests and loops not done yet: `finish`);
    every action made is also appended to `order` when given (parents before children).
    `in_order`: the nodes of the trees in pre-order and their code objects (`cos` as two
    parallel lists, `Bound.node_code_objects`), when the caller has them. `unname_sql`: what
    a SQL call's code object is taken to be instead (`root_digests`), asked once per object."""
    unnamed: dict[int, CodeObject] = {}  # `unname_sql`'s answers by id(co)
    get = field_getter(call_roots[0].call) if call_roots else dict.get
    special = factory.special_call
    if _WALK is not None and call_roots:  # the same walk in C (`tracetool/_speedups_diagram.c`)
        context = _walk_context(factory, actors, get, in_order, unname_sql, unnamed)
        walked = _WALK(call_roots, cos, kept, order, digests_only, context)
        if walked is not NotImplemented:
            return walked
    made = order.append if order is not None else None
    roots: list[Action] = []
    stack: list[tuple[CallNode, Action | None]] = [(n, None) for n in reversed(call_roots)]
    # This loop runs once per call: bound methods and caches are looked up once, and the bulk
    # of every diagram — plain function calls — is made inline (`ActionFactory._plain_function`
    # does the same for one action; both share its templates). Calls whose code object may be
    # a SQL or HTTP one are made by `ActionFactory.special_call`.
    pop, push = stack.pop, stack.append
    plain, template_of = factory.plain, factory._template
    digests = factory.digests
    # per code object (by id), once: its actor, whether its calls may be SQL or HTTP ones, name
    callees, callee_of = factory.callees, factory.callee
    new_function, bare = Action.function, Action.bare
    # `get(event, key)` without a Python-level call: dicts, or slim structs (`field_getter`)
    while stack:
        node, parent = pop()
        co = cos[id(node)]
        action = parent
        if kept is None or id(node) in kept:
            callee = callees.get(id(co))
            if callee is None:
                callee = callees[id(co)] = callee_of(co, actors)
        else:
            callee = _LEFT_OUT
        # (asked only of calls whose code object may be a SQL one: see `root_digests`)
        if unname_sql is not None and callee[1] and "sql_query" in node.call:
            swapped = unnamed.get(id(co))
            if swapped is None:
                swapped = unnamed[id(co)] = unname_sql(co)
            co = swapped
            callee = callees.get(id(co))
            if callee is None:
                callee = callees[id(co)] = callee_of(co, actors)
        actor = callee[0]
        if actor is not None:
            call = node.call
            # (`callee[1]` is false for a code object no SQL or HTTP call binds to: `callee`)
            if callee[1]:
                action = special(
                    node, co, actor, None if parent is None else parent.callee, get, digests_only
                )
            elif digests_only:  # `_Factory.digest_action` of a plain function, inline
                ret = node.ret
                fkey = (id(co), bool(get(ret, "exceptions")) if ret else False)
                digest = digests.get(fkey)
                if digest is None:
                    digest = digests[fkey] = dg.function_digest(co.id, fkey[1])
                action = bare(digest)
            else:
                ret = node.ret
                key: tuple[Any, ...]
                if ret is None:
                    key = (id(co), None)
                else:  # `_return_key(ret)`, flattened for the usual return values
                    value = get(ret, "return_value")
                    if value is None:
                        key = (id(co), bool(get(ret, "exceptions")))
                    elif value.__class__ is dict and "properties" not in value:
                        key = (
                            id(co),
                            value.get("class"),
                            bool(get(ret, "exceptions")),
                            bool(value),
                        )
                    else:
                        key = (id(co), _return_key(ret), None)
                template = plain.get(key)
                if template is None:
                    template = plain[key] = template_of(call, ret, co)
                labels = template[3]
                event_labels = get(call, "labels")
                if event_labels and isinstance(event_labels, list):
                    labels = _merge_labels(labels, event_labels)
                elapsed = None if ret is None else get(ret, "elapsed")
                event_id = get(call, "id")
                action = new_function(
                    template[0],
                    None if parent is None else parent.callee,
                    actor,
                    callee[2],
                    callee[3],
                    template[1],
                    template[2],
                    labels,
                    elapsed if isinstance(elapsed, (int, float)) else None,
                    [] if event_id is None else [event_id],
                )
            if parent is not None:
                parent.children.append(action)
            else:
                roots.append(action)
            if made is not None:
                made(action)
        children = node.children
        if children:
            for child in reversed(children):
                push((child, action))
    return roots


def _walk_context(
    factory: ActionFactory,
    actors: Actors,
    get: Callable[[Any, str], Any],
    in_order: tuple[list[CallNode], list[CodeObject]] | None,
    unname_sql: Callable[[CodeObject], CodeObject] | None,
    unnamed: dict[int, CodeObject],
) -> tuple[Any, ...]:
    """The C walks' `context` (`tracetool/_speedups_diagram.c`: `diagram_actions`)."""
    mode = 0 if get is dict.get else 1 if get is getattr else 2
    return (
        factory.callees,
        factory.callee,
        actors,
        factory.special_call,
        factory.plain,
        factory._template,
        _return_key,
        factory.digests,
        dg.function_digest,
        _merge_labels,
        get,
        mode,
        Action,
        _LEFT_OUT,
        factory.sql,
        dg.sql_digest,
        CallNode,
        in_order,
        unname_sql,
        unnamed,
        ANONYMOUS,
        (factory.rpcs, SERVER_RPC, CLIENT_RPC, factory.client_routes, _NO_OBJECT),
    )


def _live_code_objects(bound: Bound, kept: set[int] | None) -> set[int]:
    if kept is None:  # each code object once: far fewer than calls (hashed by identity)
        return live_code_objects(set(bound.code_objects.values()))
    items = bound.code_objects.items()
    return live_code_objects(co for key, co in items if key in kept)


def live_code_objects(bound: Iterable[CodeObject]) -> set[int]:
    """ids of the code objects with events (`bound`) and their ancestors: AppMap drops the
    others."""
    live: set[int] = set()
    for co in bound:
        obj: CodeObject | None = co
        while obj is not None and id(obj) not in live:
            live.add(id(obj))
            obj = obj.parent
    return live


def included_code_objects(
    cmap_roots: list[CodeObject], live: set[int], options: DiagramOptions
) -> dict[int, CodeObject]:
    # any spelling of a code object (`package:app.models` is `package:app/models`)
    expand, exclude = _fqid_keys(options.expand), _fqid_keys(options.exclude)
    included: dict[int, CodeObject] = {}
    stack = [r for r in reversed(cmap_roots) if id(r) in live]
    while stack:
        co = stack.pop()
        if exclude and _fqid_key(co.fqid) in exclude:
            continue
        expanded = bool(expand) and _fqid_key(co.fqid) in expand
        if (
            co.parent is not None
            and expand
            and _fqid_key(co.parent.fqid) in expand
            and not expanded
        ):
            included[id(co)] = co
        elif co.type in ACTOR_TYPES and not expanded:
            if co.type != "package" or any(
                c.type != "package" for c in co.children if id(c) in live
            ):
                included[id(co)] = co
        if co.type in ACTOR_TYPES or expanded:
            stack.extend(c for c in reversed(co.children) if id(c) in live)
    return included


def _fqid_key(fqid: str) -> str:
    from tracetool.identifiers import loose

    kind, _, ident = fqid.partition(":")
    return f"{kind}:{loose(ident)}" if kind in ("package", "class", "function") else fqid


def _fqid_keys(fqids: tuple[str, ...]) -> set[str]:
    return {_fqid_key(f) for f in fqids}


class Actors:
    """The lifelines of a diagram, made as calls meet them (`actor_for`). Without `named`
    (what only subtree digests need, in which actors do not enter), every call that has a
    lifeline gets `ANONYMOUS` instead: none is made."""

    def __init__(self, included: dict[int, CodeObject], named: bool = True) -> None:
        self.included = included
        self.named = named
        # One module = one lifeline: Python's classMap puts a module's functions in a class
        # named after the module (`class app/users`) and its classes in a package of the same
        # id (`package app/users`); the functions join that package's lifeline.
        self.modules = {co.id: co for co in included.values() if co.type == "package"}
        self.by_fqid: dict[str, Actor] = {}
        self.created: list[Actor] = []
        self.nearest: dict[int, Actor | None] = {}
        self.group: dict[str, int] = {HTTP_ACTOR: 0}
        services = sorted(co.fqid for co in included.values() if co.type == "external-service")
        for i, fqid in enumerate([*services, DATABASE_ACTOR]):
            self.group.setdefault(fqid, (len(included) + i + 1) * 1000)
        self.base = 1

    def actor_for(self, co: CodeObject) -> Actor | None:
        key = id(co)
        if key in self.nearest:
            return self.nearest[key]
        obj: CodeObject | None = co
        modules = self.modules
        while obj is not None and id(obj) not in self.included:
            if obj.type == "class" and modules and obj.id in modules:
                obj = modules[obj.id]
                break
            obj = obj.parent
        if obj is None:
            actor = None
        else:
            actor = self._actor(obj) if self.named else ANONYMOUS
        self.nearest[key] = actor
        return actor

    def _actor(self, co: CodeObject) -> Actor:
        found = self.by_fqid.get(co.fqid)
        if found is not None:
            return found
        actor = Actor(co.fqid, co.name, self._order(co))
        self.by_fqid[co.fqid] = actor
        self.created.append(actor)
        return actor

    def _order(self, co: CodeObject) -> int:
        obj: CodeObject | None = co
        while obj is not None:
            if obj.fqid in self.group:
                return self.group[obj.fqid]
            obj = obj.parent
        order = self.base * 1000
        self.base += 1
        self.group[co.fqid] = order
        return order

    def sorted(self) -> list[Actor]:
        unique_names(self.created)
        return sorted(self.created, key=lambda a: a.order)


def unique_names(actors: list[Actor]) -> None:
    """Name package lifelines by the shortest suffix of their path that no other one shares.

    `package:app/users` and `package:app/admin/users` become `app/users` and `admin/users`
    (not `users` twice); a name that is already unique stays the last component, as AppMap
    names it. Deterministic: it depends only on the set of package actors in the diagram.
    """
    packages = [a for a in actors if a.id.startswith("package:")]
    if len(packages) < 2:
        return
    parts = {a.id: a.id[len("package:") :].split("/") for a in packages}
    if len({p[-1] for p in parts.values()}) == len(packages):
        return  # the usual case: every last component differs
    for actor in packages:
        mine = parts[actor.id]
        for k in range(1, len(mine) + 1):
            suffix = mine[-k:]
            if not any(o != actor.id and other[-k:] == suffix for o, other in parts.items()):
                break
        actor.name = "/".join(suffix)


class ActionFactory:
    """Makes actions; caches what repeats across calls (digests, return types, labels).

    Most actions are plain function calls whose digest, stable properties, return value and
    labels depend only on the code object and the shape of the return event: those four are
    made once per (code object, return shape) and shared by every such action.
    """

    def __init__(self, client_routes: bool = False) -> None:
        self.client_routes = client_routes
        self.functions: dict[tuple[int, bool], tuple[dict[str, Any], str]] = {}
        self.digests: dict[tuple[int, bool], str] = {}  # the digests alone (`digest_action`)
        self.returns: dict[Any, dict[str, Any] | None] = {}
        self.templates: dict[tuple[int, Any], tuple[str, Any, Any, list[str] | None]] = {}
        self.labels: dict[int, list[str] | None] = {}
        self.sql: dict[tuple[str, Any], str] = {}
        # `actions_of`'s caches: per code object (`callee`), and the templates of plain
        # function calls by flat keys (`_return_key` spelled out for the usual return values)
        self.callees: dict[int, tuple[Actor | None, bool, str, bool]] = {}
        self.plain: dict[tuple[Any, ...], tuple[str, Any, Any, list[str] | None]] = {}
        self.rpcs = _RPCS  # `_rpc`'s, shared by every factory (`_RPCS`)

    @staticmethod
    def callee(co: CodeObject, actors: Actors) -> tuple[Actor | None, bool, str, bool]:
        """What `actions_of` needs of a call's code object: its actor (`Actors.actor_for`),
        whether a call bound to it may be a SQL or HTTP one, its name and static flag.

        `bind` binds every SQL call to a `query` object and every HTTP one to a `route` or
        `external-route` (`ClassMap.code_object_for`, the unnamed query, the function cache
        keyed by SQL-or-client), and so does the indexer (`tracetool.index.extract`: a call
        with `sql_query` to the `query` of its normalized SQL, an HTTP one by
        `code_object_for`), so other code objects' calls are plain functions. (A plain call
        bound to one of these types is still made right, only by the slower special path.)"""
        special = co.type in _SPECIAL_TYPES
        return actors.actor_for(co), special, co.name, co.static

    def special_call(
        self,
        node: CallNode,
        co: CodeObject,
        callee: Actor,
        caller: Actor | None,
        get: Callable[[Any, str], Any],
        digests_only: bool,
    ) -> Action:
        """`actions_of`'s action of a call whose code object a SQL or HTTP call may bind to
        (`callee`): `action` (or `digest_action`), with the usual SQL call made inline.
        `get` reads an event's field (`field_getter`)."""
        call = node.call
        if (query := get(call, "sql_query")).__class__ is dict:
            sql = query.get("normalized_sql") or query.get("sql")
            if sql.__class__ is str and sql:  # (else `dg.sql_text` decides, in `action`)
                skey = (sql, query.get("database_type"))
                digest = self.sql.get(skey)
                if digest is None:
                    digest = self.sql[skey] = dg.sql_digest(sql, skey[1])
                if digests_only:
                    return Action.bare(digest)
                action = Action(QUERY, digest)
                action.caller = caller
                action.callee = callee
                action.query = sql
                ret = node.ret
                if ret is not None:
                    elapsed = get(ret, "elapsed")
                    if isinstance(elapsed, (int, float)):
                        action.elapsed = elapsed
                event_id = get(call, "id")
                if event_id is not None:
                    action.event_ids = [event_id]
                return action
        if digests_only:
            return self.digest_action(node, co, callee, caller)
        return self.action(node, co, callee, caller)

    def action(self, node: CallNode, co: CodeObject, callee: Actor, caller: Actor | None) -> Action:
        call, ret = node.call, node.ret
        if (
            "sql_query" not in call
            and "http_server_request" not in call
            and "http_client_request" not in call
        ):
            a = self._plain_function(call, ret, co)
            a.caller = caller
        else:
            a = self._special(call, ret, co, caller)
        a.callee = callee
        if ret is not None:
            elapsed = ret.get("elapsed")
            if isinstance(elapsed, (int, float)):
                a.elapsed = elapsed
        event_id = call.get("id")
        if event_id is not None:
            a.event_ids = [event_id]
        return a

    def digest_action(
        self, node: CallNode, co: CodeObject, callee: Actor, caller: Actor | None
    ) -> Action:
        """An action with only what its subtree digest needs: its digest (as `action` makes
        it) and, through the caller, its children."""
        call, ret = node.call, node.ret
        if "sql_query" in call:
            if sql := dg.sql_text(call):
                return Action.bare(self._sql_digest(call, sql))
        elif "http_server_request" not in call and "http_client_request" not in call:
            key = (id(co), bool((ret or {}).get("exceptions")))
            digest = self.digests.get(key)
            if digest is None:
                digest = self.digests[key] = dg.function_digest(co.id, key[1])
            return Action.bare(digest)
        else:  # an HTTP request with its response: the digest of `_special`'s action alone
            ret_dict: dict[str, Any] = ret if ret is not None else {}
            if "http_server_request" in call and ret_dict.get("http_server_response"):
                return Action.bare(self._rpc(SERVER_RPC, call, ret_dict, co)[0])
            if "http_client_request" in call and ret_dict.get("http_client_response"):
                return Action.bare(self._rpc(CLIENT_RPC, call, ret_dict, co)[0])
        return self._special(call, ret, co, caller)

    def _special(
        self, call: dict[str, Any], ret: dict[str, Any] | None, co: CodeObject, caller: Actor | None
    ) -> Action:
        ret_dict: dict[str, Any] = ret if ret is not None else {}
        if "sql_query" in call and (sql := dg.sql_text(call)):
            a = Action(QUERY, self._sql_digest(call, sql))
            a.caller = caller
            a.query = sql
        elif "http_server_request" in call and ret_dict.get("http_server_response"):
            digest, a_route, status = self._rpc(SERVER_RPC, call, ret_dict, co)
            a = Action(SERVER_RPC, digest)
            a.route = a_route
            a.status = status
        elif "http_client_request" in call and ret_dict.get("http_client_response"):
            digest, a_route, status = self._rpc(CLIENT_RPC, call, ret_dict, co)
            a = Action(CLIENT_RPC, digest)
            a.caller = caller
            a.route = a_route
            a.status = status
        else:
            a = self._function(call, ret, co)
            a.caller = caller
        return a

    def _rpc(
        self, kind: int, call: dict[str, Any], ret: dict[str, Any], co: CodeObject
    ) -> tuple[str, str, Any]:
        """(digest, route, status) of an HTTP server request (`kind` SERVER_RPC) or client
        request (CLIENT_RPC) whose return has its response; cached by the fields they are made
        of when those are plain values (strings, integers, null: equal keys, equal results)."""
        key = _rpc_key(kind, call, ret, self.client_routes)
        found = None if key is None else self.rpcs.get(key)
        if found is None:
            if kind == SERVER_RPC:
                found = (
                    dg.digest(dg.stable_properties(call, ret, co.id)),
                    dg.appmap_route(call) or "",
                    dg.response_status(ret, "http_server_response"),
                )
            else:
                props = self._http_props(call, ret, co)
                found = (
                    dg.digest(props),
                    props["route"],
                    dg.response_status(ret, "http_client_response"),
                )
            if key is not None:
                if len(self.rpcs) >= _RPCS_MAX:
                    self.rpcs.clear()
                self.rpcs[key] = found
        return found

    def _sql_digest(self, call: dict[str, Any], sql: str) -> str:
        q = call.get("sql_query")
        db = q.get("database_type") if isinstance(q, dict) else None
        key = (sql, db)
        digest = self.sql.get(key)
        if digest is None:
            digest = self.sql[key] = dg.sql_digest(sql, db)
        return digest

    def _plain_function(
        self, call: dict[str, Any], ret: dict[str, Any] | None, co: CodeObject
    ) -> Action:
        key = (id(co), None if ret is None else _return_key(ret))
        template = self.templates.get(key)
        if template is None:
            template = self.templates[key] = self._template(call, ret, co)
        a = Action(FUNCTION, template[0])
        a.name = co.name
        a.static = co.static
        a.stable_properties = template[1]
        a.return_value = template[2]
        labels = template[3]
        event_labels = call.get("labels")
        if isinstance(event_labels, list) and event_labels:
            labels = _merge_labels(labels, event_labels)
        a.labels = labels
        return a

    def _template(
        self, call: dict[str, Any], ret: dict[str, Any] | None, co: CodeObject
    ) -> tuple[str, Any, Any, list[str] | None]:
        fkey = (id(co), bool((ret or {}).get("exceptions")))
        cached = self.functions.get(fkey)
        if cached is None:
            props = dg.stable_properties(call, ret, co.id)
            cached = self.functions[fkey] = (props, dg.digest(props))
        return cached[1], cached[0], self._return_value(ret), self._labels(co)

    def _labels(self, co: CodeObject) -> list[str] | None:
        labels = self.labels.get(id(co), ())
        if labels == ():
            labels = self.labels[id(co)] = sorted(co.labels) or None
        return labels  # type: ignore[return-value]

    def _function(self, call: dict[str, Any], ret: dict[str, Any] | None, co: CodeObject) -> Action:
        if "http_server_request" in call or "http_client_request" in call:
            props = self._http_props(call, ret, co)
            digest = dg.digest(props)
        else:
            key = (id(co), bool((ret or {}).get("exceptions")))
            cached = self.functions.get(key)
            if cached is None:
                props = dg.stable_properties(call, ret, co.id)
                cached = self.functions[key] = (props, dg.digest(props))
            props, digest = cached
        a = Action(FUNCTION, digest)
        a.name = co.name
        a.static = co.static
        a.stable_properties = props
        a.return_value = self._return_value(ret)
        labels = self._labels(co)
        event_labels = call.get("labels")
        if isinstance(event_labels, list) and event_labels:
            labels = _merge_labels(labels, event_labels)
        a.labels = labels
        return a

    def _http_props(
        self, call: dict[str, Any], ret: dict[str, Any] | None, co: CodeObject
    ) -> dict[str, Any]:
        props = dg.stable_properties(call, ret, co.id)
        request = call.get("http_client_request")
        if self.client_routes and isinstance(request, dict) and props["route"]:
            from tracetool.route_model import client_route

            method = str(request.get("request_method") or "")
            props["route"] = client_route(method, str(request.get("url") or ""))
        return props

    def _return_value(self, ret: dict[str, Any] | None) -> dict[str, Any] | None:
        if ret is None:
            return None
        key = _return_key(ret)
        found = self.returns.get(key, False)
        if found is False:
            found = self.returns[key] = dg.return_value(ret)
        return found  # type: ignore[return-value]


# what `ActionFactory._rpc`'s results are made of: (event key, its fields read)
_RPC_FIELDS = (
    (True, "http_server_request", ("request_method", "normalized_path_info", "path_info")),
    (True, "http_client_request", ("request_method", "url")),
    (False, "http_server_response", ("status", "status_code")),
    (False, "http_client_response", ("status", "status_code")),
)


def _rpc_key(
    kind: int, call: dict[str, Any], ret: dict[str, Any], client_routes: bool
) -> tuple[Any, ...] | None:
    """The key of `ActionFactory._rpc`'s cache: every field `digests.stable_properties`,
    `appmap_route`, `response_status` and `_http_props` read of these events, and whether each
    request is there (`in`) (path_info as None where it is not read); None when one is not a string, an integer or null (a list path,
    `true` as a status...: not cached, since `1 == True` would share an entry)."""
    key: list[Any] = [kind, client_routes]
    for on_call, name, fields in _RPC_FIELDS:
        if on_call:
            key.append(name in call)
            value = call.get(name)
        else:
            value = ret.get(name)
        if value.__class__ is dict:
            for field in fields:
                item = value.get(field)
                if item is not None and item.__class__ is not str and item.__class__ is not int:
                    return None
                key.append(item)
            if on_call and len(fields) == 3 and key[-2].__class__ is str and key[-2]:
                # a server request's path_info is not read when its normalized_path_info is
                # a non-empty string (`appmap_route`): its requests of one route share an entry
                key[-1] = None
        elif isinstance(value, dict):
            return None
        else:  # (read as no object)
            key.append(_NO_OBJECT)
    return tuple(key)


_NO_OBJECT = ("\0",)  # `_rpc_key`'s mark of a field that is not an object
# `ActionFactory._rpc`'s results by `_rpc_key`, kept from one diagram (or recording digested by
# the index) to the next: its keys hold every field they are made of, whatever the recording,
# and a worker's recordings mostly repeat their requests' routes and statuses. Bounded: emptied
# when full (~1 MB at most). The C walk reads it too (`rpc_action`).
_RPCS: dict[tuple[Any, ...], tuple[str, str, Any]] = {}
_RPCS_MAX = 2048


def _merge_labels(labels: list[str] | None, event_labels: list[Any]) -> list[str]:
    """A call's labels: its code object's (`labels`) and its event's, sorted, once each."""
    return sorted(set(labels or ()) | {str(x) for x in event_labels})


def _return_key(ret: dict[str, Any]) -> Any:
    """What `digests.return_value(ret)` depends on (equal keys, equal return values).
    `actions_of` makes the key of a null or property-less dict `return_value` inline: change
    both together."""
    value = ret.get("return_value")
    raises = bool(ret.get("exceptions"))
    if isinstance(value, dict):
        props = value.get("properties")
        pkey = (
            tuple([(p.get("name"), p.get("class")) for p in props if isinstance(p, dict)])
            if isinstance(props, list)
            else None
        )
        return (value.get("class"), pkey, raises, bool(value))
    return (None, None, raises, bool(value))


def _subtree_digests(
    roots: list[Action],
    order: list[Action] | None = None,
    loops: bool = False,
    tally: list[int] | None = None,
    caches: tuple[dict[str, str], dict[tuple[str, ...], str]] | None = None,
) -> None:
    """Every action's subtree digest; with `loops`, each action's children are folded
    (`loops.fold`) once its subtree digest is known, children before parents, in the same walk.
    Folding an action's children does not change its subtree digest, made before from the
    unfolded ones (subtree digests do not depend on `loops`). `tally`: as `loops.fold`'s.
    `caches`: the (leaves, inner) maps below, kept by the caller across calls (`_SHARED`);
    emptied when they hold more than `_SHARED_MAX` subtrees, before and after."""
    # dg.subtree_digest, inlined: this runs once per action. A leaf's subtree digest depends
    # only on its own digest, and most actions are leaves with a repeated digest.
    if order is None:
        order = parents_first(roots)
    # Inner subtrees repeat too (most of a big recording's): they are hashed once per
    # (digest, child subtree digests), a tuple of strings whose hashes Python has cached.
    leaves: dict[str, str]
    inner: dict[tuple[str, ...], str]
    if caches is None:
        leaves, inner = {}, {}
    else:
        leaves, inner = caches
        _bound_caches(caches)
    folder = (fold if tally is None else functools.partial(fold, tally=tally)) if loops else None
    if _SUBTREES is not None:  # the same loop in C (`tracetool/_speedups_diagram.c`)
        try:
            # (hashlib.sha256: the C loop hashes ASCII digests itself, as the two helpers do)
            _SUBTREES(order, leaves, inner, _leaf_digest, _inner_digest, folder, Action, _SHA256)
        finally:
            if caches is not None:
                _bound_caches(caches)
        return
    for action in reversed(order):
        children = action.children
        if not children:
            own = action.digest
            found = leaves.get(own)
            if found is None:
                found = leaves[own] = _leaf_digest(own)
            action.subtree_digest = found
        else:
            key = (action.digest, *[c.subtree_digest for c in children])
            found = inner.get(key)
            if found is None:
                found = inner[key] = _inner_digest(key)
            action.subtree_digest = found
            if loops and len(children) >= 2:
                action.children = folder(children)  # type: ignore[misc]
    if caches is not None:
        _bound_caches(caches)


# The subtree digests of the index's digest walk (`root_digests`), kept from one recording to
# the next: an indexer's worker digests many recordings of the same application, whose
# subtrees mostly repeat (200 seed-1 recordings: 46,000 subtree hashes, 8,500 distinct).
# Pure functions of their keys, so what they hold never changes a digest; bounded
# (`_bound_caches`): ~2 MB at most.
_SHARED: tuple[dict[str, str], dict[tuple[str, ...], str]] = ({}, {})
_SHARED_MAX = 8_000


def _bound_caches(caches: tuple[dict[str, str], dict[tuple[str, ...], str]]) -> None:
    if len(caches[0]) + len(caches[1]) > _SHARED_MAX:
        caches[0].clear()
        caches[1].clear()


_SHA256 = hashlib.sha256


def _leaf_digest(own: str) -> str:
    """The subtree digest of an action without children (`digests.subtree_digest`)."""
    return hashlib.sha256(own.encode()).hexdigest()


def _inner_digest(key: tuple[str, ...]) -> str:
    """The subtree digest of (an action's digest, its children's subtree digests...)."""
    return hashlib.sha256("\n".join(key).encode()).hexdigest()


class BoundDigests:
    """`bound_digest` of a recording bound in batches of whole call trees, added in document
    order (the indexer reads a big recording tree by tree and frees each batch).

    The same digest as for the whole tree: a root action's subtree digest depends on its own
    call tree only. The code objects "live" in the rest of the recording decide which packages
    are lifelines, but not whether a call has one: a call's innermost package (the first one
    above a class or function) is a lifeline whenever the call is in the recording, so
    `actor_for` finds an actor in a batch exactly when it finds one in the whole recording, and
    which actor it is does not enter a digest."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()  # `roots_digest`, fed a root at a time

    def add(self, bound: Bound) -> None:
        update = self._hash.update
        for digest in root_digests(bound, sql_names=False):
            update(digest.encode())

    def result(self) -> str:
        return self._hash.hexdigest()
