"""Applying a filter state to a recording, in AppMap's order (see `tracetool.filters`)."""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tracetool import accel
from tracetool.errors import UsageError
from tracetool.lazyre import lazy
from tracetool.records import Record
from tracetool.trace.codeobjects import DATABASE_ROOT, ClassMap, CodeObject
from tracetool.trace.document import TraceDocument, gc_paused
from tracetool.trace.stream import UNSET, EventHead
from tracetool.trace.tree import CallNode, CallTree, CallTreeBuilder, field_getter, preorder

if TYPE_CHECKING:  # (tracetool.filters.state is imported where a filter is applied: the indexer
    # binds recordings without one, and spares its frozen dataclass)
    from tracetool.filters.state import FilterState

_MEDIA_EXTENSIONS = frozenset(
    "aac avi bmp css flv gif htm html ico jpeg jpg js json jsonld mid midi mjs mov mp3 mp4 mpeg "
    "oga ogg ogv ogx opus otf png svg tif tiff ts ttf wav weba webm webp woff woff2 xhtml 3gp "
    "3g2".split()
)
_MEDIA_TYPE = lazy(
    r"application/javascript|application/ecmascript|audio/.+|font/.+|image/.+|text/javascript"
    r"|text/ecmascript|text/css|video/.+",
    re.IGNORECASE,
)


# ---------------------------------------------------------------- matching code objects


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(p) for p in pattern.split("*")) + "$", re.I)


def code_object_matches(obj: CodeObject, pattern: str) -> bool:
    """Whether one code object matches one pattern (fqid, label:glob, /regex/, prefix*).

    An fqid matches in any spelling of the same code object (`_same_code_object`).
    """
    if pattern == obj.fqid:
        return True
    if pattern.startswith("label:"):
        rx = _glob(pattern[len("label:") :])
        return any(rx.match(label) for label in obj.labels)
    if len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/"):
        try:
            return re.search(pattern[1:-1], obj.fqid, re.I) is not None
        except re.error:
            raise UsageError(f"filter pattern {pattern}: not a valid regular expression") from None
    if pattern.endswith("*"):
        return obj.fqid.lower().startswith(pattern[:-1].lower())
    kind, sep, ident = pattern.partition(":")
    if sep and kind == obj.type:
        return _same_code_object(kind, ident, obj.id)
    return False


def _same_code_object(kind: str, ident: str, recorded: str) -> bool:
    """Forgiving equality of a typed identifier and a recorded id (`tracetool.identifiers`,
    `tracetool.route_model`, `tracetool.sql`): `function:a.b.C.m` is `function:a/b/C#m`,
    `route:GET /b/:id` is `route:GET /b/<int:pk>`, `query:` keywords in any case."""
    if kind in ("function", "class", "package"):
        from tracetool.identifiers import loose

        return loose(ident) == loose(recorded)
    if kind == "route":
        from tracetool import route_model

        try:
            a, b = route_model.parse_route(ident), route_model.parse_route(recorded)
        except UsageError:
            return False
        return route_model.same_route(a, b)
    if kind == "query":
        from tracetool import sql

        return sql.same_query(ident, recorded)
    return False


def matching_code_objects(
    cmap: ClassMap, patterns: Iterable[str], *, include_self: bool = True
) -> set[int]:
    """ids (`id(obj)`) of code objects matched by a pattern, with their code-object subtrees."""
    patterns = list(patterns)
    matched: set[int] = set()
    if not patterns:
        return matched
    for obj in cmap:
        if id(obj) in matched:
            continue
        if any(code_object_matches(obj, p) for p in patterns):
            if include_self:
                matched.add(id(obj))
            matched.update(id(d) for d in obj.descendants())
    return matched


# ---------------------------------------------------------------- applying


class Bound(Record):
    """A recording's call tree with the code object of every call (shared by filters and prune).

    (A record, as the dataclass it was: the same fields, init, repr and equality.)"""

    _fields = (
        "doc",
        "events",
        "nodes",
        "roots",
        "cmap",
        "static",
        "code_objects",
        "node_code_objects",
    )

    def __init__(
        self,
        doc: TraceDocument,
        events: list[dict[str, Any]],
        nodes: list[CallNode],  # pre-order
        roots: list[CallNode],
        cmap: ClassMap,
        static: set[int],  # ids of code objects that came from the document's classMap
        code_objects: dict[int, CodeObject],  # id(node) -> code object
        # the same, as a list parallel to `nodes` (when `bind` made it): walks in pre-order
        # read it in order instead of looking each node up
        node_code_objects: list[CodeObject] | None = None,
    ) -> None:
        self.doc = doc
        self.events = events
        self.nodes = nodes
        self.roots = roots
        self.cmap = cmap
        self.static = static
        self.code_objects = code_objects
        self.node_code_objects = node_code_objects


# The event structs of tracetool.trace.slim, read from the module once it is loaded (until then
# no event can be one of them): this module does not import it (~5 M instructions of struct
# classes that the indexer, whose events are dicts or `EventHead`s, never makes).
_SLIM = "tracetool.trace.slim"
_SLIM_KINDS: list[tuple[tuple[type, ...], tuple[type, ...], type | None]] = []


def _slim_kinds() -> tuple[tuple[type, ...], tuple[type, ...], type | None]:
    """(what an eventUpdates entry that replaces its event is: an object, a dict or the struct
    of a slim document of structs, `load_slim(minimal=True)` or `load_slim(structs=True)`;
    the events `_bind_heads` binds; `MinimalEvent`, or None before slim is loaded)."""
    if _SLIM_KINDS:
        return _SLIM_KINDS[0]
    slim = sys.modules.get(_SLIM)
    if slim is None or not hasattr(slim, "load_slim"):  # (not loaded, or still loading)
        return (dict,), (EventHead,), None
    kinds = (
        (dict, slim.MinimalEvent, slim.SlimCall, slim.SlimReturn),
        (EventHead, slim.SlimCall),
        slim.MinimalEvent,
    )
    _SLIM_KINDS.append(kinds)
    return kinds


def bind(doc: TraceDocument, *, sql_names: bool = True) -> Bound:
    """Build the call tree (eventUpdates applied, the document untouched) and bind code objects.

    `sql_names=False` skips naming `query:` code objects by their parameterized SQL (the one
    costly part: it tokenizes every distinct statement): all SQL calls then share one unnamed
    query object under `database:Database`. Use it when no pattern can name a query.
    """
    updates = doc.event_updates
    events: list[Any] = doc.events  # (minimal documents: `MinimalEvent`s)
    with gc_paused():
        if updates:
            kinds = _slim_kinds()[0]
            events = [
                u if isinstance(u := updates.get(str(e.get("id"))), kinds) else e for e in events
            ]
        tree = call_tree(events)
        cmap = accel.class_map(doc.class_map)
        static = {id(o) for o in cmap}
        nodes, cos = bind_nodes(tree.roots, cmap, BindState(cmap, sql_names))
        code_objects = dict(zip(map(id, nodes), cos))
    return Bound(doc, events, nodes, tree.roots, cmap, static, code_objects, cos)


# `CallTreeBuilder.add` in C (tracetool/_speedups_diagram.c), or None
_CALL_TREE = accel.function("call_tree")
# `preorder(roots)` and each node's call, in C, or None
_PREORDER_CALLS = accel.function("preorder_calls")


def call_tree(events: list[Any]) -> CallTree:
    """`build_call_tree(events)`, built in C when the accelerator is there."""
    builder = CallTreeBuilder()
    if _CALL_TREE is not None and events:
        get = field_getter(events[0])
        mode = 0 if get is dict.get else 1 if get is getattr else 2
        done = _CALL_TREE(events, builder.roots, builder.nodes, builder.stacks, CallNode, get, mode)
        if done is not NotImplemented:
            return builder.tree()
    builder.add(events)
    return builder.tree()


class BindState:
    """What binding one recording's call trees batch by batch shares (`bind_roots`): the unnamed
    query object (`sql_names=False`) and each function call's code object by its identity, so
    every batch binds a call as one whole `bind` would."""

    def __init__(self, cmap: ClassMap, sql_names: bool = True) -> None:
        self.unnamed = None if sql_names else unnamed_query(cmap)
        self.functions: dict[tuple[Any, ...], CodeObject] = {}
        # where the C loop keeps its memo of `functions` (`_BIND_HEADS`: a capsule in place of
        # the None; what it finds is what `functions` holds, without hashing the fresh strings
        # of every call's key)
        self.memo: list[Any] = [None]


def bind_roots(
    roots: list[CallNode],
    cmap: ClassMap,
    state: BindState,
    nodes: list[CallNode] | None = None,
) -> tuple[list[CallNode], dict[int, CodeObject]]:
    """The nodes below `roots` in pre-order (`nodes`, when the caller has them) and the code
    object of each (`id(node)` -> it)."""
    nodes, cos = bind_nodes(roots, cmap, state, nodes)
    return nodes, dict(zip(map(id, nodes), cos))


def bind_nodes(
    roots: list[CallNode],
    cmap: ClassMap,
    state: BindState,
    nodes: list[CallNode] | None = None,
) -> tuple[list[CallNode], list[CodeObject]]:
    """`bind_roots` with the code objects as a list parallel to the nodes."""
    if nodes is None and _PREORDER_CALLS is not None and roots.__class__ is list:
        nodes, calls = _PREORDER_CALLS(roots, CallNode)  # (the same walk, in C)
        return nodes, bind_calls(calls, cmap, state)
    if nodes is None:
        nodes = preorder(roots)
    return nodes, bind_calls([n.call for n in nodes], cmap, state)


def bind_calls(calls: list[Any], cmap: ClassMap, state: BindState) -> list[CodeObject]:
    """The code object of each call event (as `bind` binds it)."""
    unnamed = state.unnamed
    out: list[CodeObject] = []
    append = out.append
    # Function calls repeat: resolve each (location, name) once.
    functions = state.functions
    if calls:
        _, heads, minimal = _slim_kinds()
        if isinstance(calls[0], heads):
            return _bind_heads(calls, cmap, state)
        if type(calls[0]) is minimal:
            return _bind_minimal(calls, cmap, state)
    # `get(call, key)` is `call.get(key)` without a Python-level call for event structs
    get = field_getter(calls[0]) if calls else dict.get
    # `key in call` of a struct is a Python-level call; its request fields are None when
    # absent, so `get(...) is not None` says the same (for dicts, `in` counts a null too)
    structs = get is not dict.get
    for call in calls:
        if structs:
            sql = get(call, "sql_query") is not None
            server = get(call, "http_server_request") is not None
            client = get(call, "http_client_request") is not None
        else:
            sql = "sql_query" in call
            server = "http_server_request" in call
            client = "http_client_request" in call
        if unnamed is not None and sql:
            append(unnamed)
            continue
        method = get(call, "method_id")
        if method is not None and not server:
            key = (
                method,
                get(call, "path"),
                get(call, "lineno"),
                get(call, "defined_class"),
                get(call, "static"),
                sql or client,
            )
            co = functions.get(key)
            if co is None:
                co = functions[key] = cmap.code_object_for(call)
            append(co)
            continue
        append(cmap.code_object_for(call))
    return out


_REQUESTS = operator.attrgetter("sql_query", "http_server_request", "http_client_request")
_IDENTITY = operator.attrgetter("method_id", "path", "lineno", "defined_class", "static")
_SQL_OR_CLIENT = ((False,), (True,))
_SERVER = ("\0http_server_request",)  # the `functions` key of a server request read empty
_CLIENT = ("\0http_client_request",)  # and of a client request read empty


def _bind_minimal(calls: list[Any], cmap: ClassMap, state: BindState) -> list[CodeObject]:
    """`bind_calls` of `MinimalEvent`s (a missing field reads None, as `get` reads it), each
    call's fields read by two C-level getters."""
    unnamed, functions = state.unnamed, state.functions
    out: list[CodeObject] = []
    append = out.append
    requests, identity, flags = _REQUESTS, _IDENTITY, _SQL_OR_CLIENT
    for call in calls:
        sql, server, client = requests(call)
        if sql is not None and unnamed is not None:
            append(unnamed)
            continue
        ident = identity(call)
        if ident[0] is not None and server is None:
            key = ident + flags[sql is not None or client is not None]
            co = functions.get(key)
            if co is None:
                co = functions[key] = cmap.code_object_for(call)
            append(co)
            continue
        if server is not None and not server:  # (its content skipped: all bind alike)
            co = functions.get(_SERVER)
            if co is None:
                co = functions[_SERVER] = cmap.code_object_for(call)
            append(co)
            continue
        if client is not None and not client and server is None:  # (the same)
            co = functions.get(_CLIENT)
            if co is None:
                co = functions[_CLIENT] = cmap.code_object_for(call)
            append(co)
            continue
        append(cmap.code_object_for(call))
    return out


# `_bind_heads`' loop in C (tracetool/_speedups_diagram.c), or None
_BIND_HEADS = accel.function("bind_heads")


def _bind_heads(calls: list[Any], cmap: ClassMap, state: BindState) -> list[CodeObject]:
    """`bind_calls` of `EventHead`s: a missing field reads UNSET, a null one None, so presence
    is a dict's; what the function cache does not resolve is bound as the dict of the fields
    (`_head_resolver`)."""
    unnamed, functions = state.unnamed, state.functions
    resolve = _head_resolver(cmap, functions)
    if _BIND_HEADS is not None and calls.__class__ is list and functions.__class__ is dict:
        # (this loop in C; `_request_key` too, for the requests `functions` holds)
        return _BIND_HEADS(calls, functions, unnamed, resolve, UNSET, state.memo, _TAGS)
    out: list[CodeObject] = []
    append = out.append
    for call in calls:
        sql = call.sql_query is not UNSET
        if unnamed is not None and sql:
            append(unnamed)
            continue
        method = call.method_id
        if method is not None and method is not UNSET and call.http_server_request is UNSET:
            key = (
                method,
                call.path,
                call.lineno,
                call.defined_class,
                call.static,
                sql or call.http_client_request is not UNSET,
            )
            co = functions.get(key)
            if co is None:
                co = functions[key] = resolve(call)
            append(co)
            continue
        append(resolve(call))
    return out


# `functions` keys of HTTP requests (`_request_key`): a server's by its method and paths, a
# client's by its method and URL
_SERVER_REQUEST = "\0server request"
_CLIENT_REQUEST = "\0client request"
_TAGS = (_SERVER_REQUEST, _CLIENT_REQUEST)


def _head_resolver(cmap: ClassMap, functions: dict[Any, CodeObject]) -> Any:
    """`resolve(head)`: `cmap.code_object_for(head.to_dict())`, an HTTP request's remembered in
    `functions` by the request fields that name its code object (`_request_key`): a recording's
    requests repeat a few routes."""

    def resolve(call: Any) -> CodeObject:
        key = _request_key(call)
        if key is None:
            return cmap.code_object_for(call.to_dict())
        co = functions.get(key)
        if co is None:
            co = functions[key] = cmap.code_object_for(call.to_dict())
        return co

    return resolve


def _request_key(call: Any) -> tuple[Any, ...] | None:
    """The fields `ClassMap.code_object_for` names an HTTP call's code object by (a server
    request's method, `path_info` unless read as None below, and `normalized_path_info`; a
    client request's method and `url`), as a key; None for another call, or fields other than
    strings and nulls (equal keys must name one code object: `1 == True` but their texts
    differ)."""
    server = call.http_server_request
    if server is not UNSET:
        if server.__class__ is not dict:
            return None
        key: tuple[Any, ...] = (
            _SERVER_REQUEST,
            server.get("request_method"),
            server.get("path_info"),
            server.get("normalized_path_info"),
        )
    else:
        client = call.http_client_request
        if client.__class__ is not dict:
            return None
        key = (_CLIENT_REQUEST, client.get("request_method"), client.get("url"))
    for value in key:
        if value is not None and value.__class__ is not str:
            return None
    if len(key) == 4 and key[3]:
        # a server request's path_info is not read when its normalized_path_info is a
        # non-empty string (`route_model.server_template`): the requests of one route share
        # an entry (a recording's paths hold ids: 2,400 distinct ones, 140 routes on 60 MB)
        key = (_SERVER_REQUEST, key[1], None, key[3])
    return key


def unnamed_query(cmap: ClassMap) -> CodeObject:
    """The one `query` object every SQL call shares when `bind(sql_names=False)`."""
    return cmap.child(cmap.child(None, "database", DATABASE_ROOT), "query", "")


def without_sql_names(bound: Bound) -> Bound:
    """`bound` as `bind(doc, sql_names=False)` binds it: every SQL call to `unnamed_query`
    (same tree and classMap; the code-object maps are copies)."""
    unnamed = None  # made on the first SQL call: a classMap without SQL stays as it is
    cos = dict(bound.code_objects)
    # (kept in pre-order too when `bound` has it: the diagram walk reads it in order)
    in_order = None if bound.node_code_objects is None else list(bound.node_code_objects)
    for index, node in enumerate(bound.nodes):
        if "sql_query" in node.call:
            if unnamed is None:
                unnamed = unnamed_query(bound.cmap)
            cos[id(node)] = unnamed
            if in_order is not None:
                in_order[index] = unnamed
    nodes, roots = bound.nodes, bound.roots
    return Bound(bound.doc, bound.events, nodes, roots, bound.cmap, bound.static, cos, in_order)


def has_patterns(state: FilterState) -> bool:
    """Whether `state` names code objects (so SQL query objects need their names)."""
    return bool(state.root_objects or state.context or state.hide_tree or state.hide_name)


def apply_filter(doc: TraceDocument, state: FilterState) -> TraceDocument:
    """A new document with only the events `state` keeps (module doc)."""
    bound = bind(doc, sql_names=has_patterns(state))
    kept = filter_nodes(bound, state)
    return rebuild(bound, kept)


def filter_nodes(bound: Bound, state: FilterState) -> set[int]:
    """ids (`id(node)`) of the call nodes that survive every step of `state`."""
    from tracetool.filters.state import ROOT_EVENT_LABELS

    nodes, cos = bound.nodes, bound.code_objects
    kept = {id(n) for n in nodes}

    if state.limit_root_events:

        def is_command(n: CallNode) -> bool:
            if "http_server_request" in n.call:
                return True
            return bool(ROOT_EVENT_LABELS.intersection(cos[id(n)].labels))

        marked = _subtrees(n for n in nodes if id(n) in kept and is_command(n))
        if marked:
            kept &= marked
    if state.root_objects:
        objs = matching_code_objects(bound.cmap, state.root_objects)
        kept &= _subtrees(n for n in nodes if id(n) in kept and id(cos[id(n)]) in objs)
    if state.context:
        objs = matching_code_objects(bound.cmap, state.context)
        matches = [n for n in nodes if id(n) in kept and id(cos[id(n)]) in objs]
        around = _subtrees(matches, state.context_depth)
        for n in matches:
            for distance, ancestor in enumerate(n.ancestors(), start=1):
                if distance <= state.context_depth or ancestor.parent is None:
                    around.add(id(ancestor))
        kept &= around
    if state.hide_tree:
        objs = matching_code_objects(bound.cmap, state.hide_tree)
        below: set[int] = set()
        for n in nodes:
            if id(n) in kept and id(cos[id(n)]) in objs:
                below.update(id(d) for d in n.descendants())
        kept -= below
    if state.hide_media_requests:
        kept -= {id(n) for n in nodes if id(n) in kept and _is_media_request(n)}
    if state.hide_unlabeled:
        kept -= {
            id(n)
            for n in nodes
            if cos[id(n)].type == "function" and not (cos[id(n)].labels or n.call.get("labels"))
        }
    if state.hide_external:
        folders = set(state.dependency_folders)
        kept -= {
            id(n)
            for n in nodes
            if cos[id(n)].type == "function" and not is_local_path(cos[id(n)].location, folders)
        }
    if state.hide_elapsed_time_under is not None and state.hide_elapsed_time_under > 0:
        limit = state.hide_elapsed_time_under / 1000
        kept -= {id(n) for n in nodes if not (n.elapsed and n.elapsed >= limit)}
    if state.hide_name:
        objs = matching_code_objects(bound.cmap, state.hide_name)
        kept -= {id(n) for n in nodes if id(cos[id(n)]) in objs}
    return kept


def _subtrees(starts: Iterable[CallNode], max_depth: int | None = None) -> set[int]:
    """ids of the given nodes and their descendants (to `max_depth` levels below, if given)."""
    out: set[int] = set()
    for start in starts:
        if id(start) in out and max_depth is None:
            continue
        out.add(id(start))
        stack = [(c, 1) for c in start.children]
        while stack:
            node, depth = stack.pop()
            if max_depth is not None and depth > max_depth:
                continue
            if max_depth is None and id(node) in out:
                continue
            out.add(id(node))
            stack.extend((c, depth + 1) for c in node.children)
    return out


def _is_media_request(n: CallNode) -> bool:
    req = n.call.get("http_server_request")
    if not isinstance(req, dict):
        return False
    method = str(req.get("request_method") or "").upper()
    path = str(req.get("normalized_path_info") or req.get("path_info") or "")
    if method == "GET" and path:
        m = re.match(r".*\.(\S*)$", path)
        if m and m.group(1) in _MEDIA_EXTENSIONS:
            return True
    resp = (n.ret or {}).get("http_server_response")
    if not isinstance(resp, dict):
        return False
    headers = resp.get("headers")
    mime = None
    if isinstance(headers, dict):
        for key, value in headers.items():
            if str(key).lower() == "content-type":
                mime = value
                break
    else:
        mime = resp.get("mime_type")
    return bool(mime) and _MEDIA_TYPE.search(str(mime)) is not None


def is_local_path(location: str | None, dependency_folders: Iterable[str]) -> bool:
    """Whether a function's `path:line` location is project source (not a dependency)."""
    if not location or ":" not in location:
        return False
    path = location.rpartition(":")[0] if location.rpartition(":")[2].isdigit() else location
    if not re.search(r"\.\w+$", path) or path.startswith("<"):
        return False
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:[\\/]", path):
        return False
    parts = set(re.split(r"[\\/]", path))
    return not parts.intersection(dependency_folders)


def rebuild(bound: Bound, kept: set[int]) -> TraceDocument:
    """A new document of the kept nodes' events, in their original order, ids unchanged."""
    keep_events: set[int] = set()
    for n in bound.nodes:
        if id(n) in kept:
            keep_events.add(id(n.call))
            if n.ret is not None:
                keep_events.add(id(n.ret))
    events = [e for e in bound.events if id(e) in keep_events]
    data = {k: v for k, v in bound.doc.data.items() if k not in ("events", "eventUpdates")}
    data["classMap"] = prune_class_map(bound, kept)
    data["events"] = events
    return TraceDocument(data, bound.doc.path, list(bound.doc.warnings))


def prune_class_map(bound: Bound, kept: set[int]) -> list[dict[str, Any]]:
    """The document's classMap reduced to code objects that still have events."""
    cos = bound.code_objects
    return class_map_of(
        bound.cmap, bound.static, (cos[id(n)] for n in bound.nodes if id(n) in kept)
    )


def class_map_of(
    cmap: ClassMap, static: set[int], bound: Iterable[CodeObject]
) -> list[dict[str, Any]]:
    """The classMap of `cmap`'s objects from the document (`static`) that are, or hold, code
    objects of `bound`."""
    used: set[int] = set()
    for co in bound:
        obj: CodeObject | None = co
        while obj is not None and id(obj) not in used:
            used.add(id(obj))
            obj = obj.parent
    roots = [r for r in cmap.roots if id(r) in used and id(r) in static]
    out: list[dict[str, Any]] = []
    stack: list[tuple[CodeObject, list[dict[str, Any]]]] = [(r, out) for r in reversed(roots)]
    while stack:
        obj, into = stack.pop()
        node = _shallow_json(obj)
        into.append(node)
        children = [c for c in obj.children if id(c) in used and id(c) in static]
        if children:
            node["children"] = []
            stack.extend((c, node["children"]) for c in reversed(children))
    return out


def _shallow_json(obj: CodeObject) -> dict[str, Any]:
    node: dict[str, Any] = {"name": obj.name, "type": obj.type}
    if obj.type == "function":
        if obj.location:
            node["location"] = obj.location
        node["static"] = obj.static
    if obj.labels:
        node["labels"] = list(obj.labels)
    node.update(obj.extra)
    return node
