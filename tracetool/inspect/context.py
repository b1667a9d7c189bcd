"""The context of a match: the values of the spec's 11 fields (`tracetool.inspect.refs.FIELDS`).

Per match: event, return value, HTTP server requests (self and ancestors), SQL queries and
tables (self and descendants), caller, ancestors (HTTP requests and labeled functions),
descendants (labeled functions), package/class/function trigrams. `CodeObjects` names the nodes
of one recording on demand; `Notable` indexes, once per call tree holding a match, the nodes a
context lists; `context(node, …)` gives one match's values.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tracetool import accel
from tracetool.inspect.sql_names import ANALYZE, SqlNames
from tracetool.trace import events as ev
from tracetool.trace.codeobjects import ClassMap, CodeObject, function_call_key
from tracetool.trace.tree import CallNode, preorder, release

# `preorder` and `release` of call trees in C (`tracetool._speedups`), or None
_TREE_WALK = accel.function("tree_walk")
_PREORDER_CALLS = accel.function("preorder_calls")


def walk(roots: Any) -> list[CallNode]:
    """`tree.preorder(roots)`, by the accelerator where it is built."""
    if _PREORDER_CALLS is not None:
        listed = roots if roots.__class__ is list else list(roots)
        return _PREORDER_CALLS(listed, CallNode)[0]  # type: ignore[no-any-return]
    return preorder(roots)


def unlink(roots: Any) -> None:
    """`tree.release(roots)`, by the accelerator where it is built."""
    if _TREE_WALK is not None:
        _TREE_WALK(CallNode, roots, True)
    else:
        release(roots)


class CodeObjects(dict):  # type: ignore[type-arg]
    """node -> its code object, resolved when first asked for: naming a SQL call normalizes its
    query, which only the matches' contexts need. A call that is not SQL or HTTP is named by its
    defined_class, method_id, path, lineno and static alone, so equal ones are resolved once."""

    def __init__(self, cmap: ClassMap, sql: SqlNames = ANALYZE) -> None:
        super().__init__()
        self.cmap = cmap
        self.sql = sql  # the normalized SQL and tables of the recording's SQL calls
        self.by_key: dict[tuple[Any, ...], CodeObject] = {}
        self.matched: dict[int, bool] = {}  # id of a function code object -> whether it matches
        self.matched_keys: dict[tuple[Any, ...], bool] = {}  # the same by the key of a call

    def __missing__(self, node: CallNode) -> CodeObject:
        co = self[node] = self.of_call(node.call)
        return co

    def of_call(self, call: dict[str, Any]) -> CodeObject:
        """The code object of a call event (what `self[node]` holds for its node)."""
        if "http_server_request" in call or "http_client_request" in call or "sql_query" in call:
            if ev.kind(call) == ev.SQL:  # named as `ClassMap.code_object_for` names it
                return self.cmap.query(self.sql.normalized(call))
            return self.cmap.code_object_for(call)
        key = function_call_key(call)
        try:
            found = self.by_key.get(key)
        except TypeError:  # a field of an unhashable type (a malformed recording)
            found = None
            key = ()
        if found is None:
            found = self.cmap.code_object_for(call)
            if key:
                self.by_key[key] = found
        return found


def _fqid(co: CodeObject, node: CallNode, sql: SqlNames) -> str:
    if co.type == "query":
        return "query:" + sql.normalized(node.call)
    return co.fqid


def _package(co: CodeObject) -> str:
    obj: CodeObject | None = co
    while obj is not None:
        if obj.type == "package" or obj.parent is None:
            return obj.fqid
        obj = obj.parent
    return co.fqid


def _class(co: CodeObject) -> str:
    return co.parent.fqid if co.parent is not None else co.fqid


def _labeled(co: CodeObject, node: CallNode) -> bool:
    return co.type == "function" and bool(co.labels or node.call.get("labels"))


def _return_value(node: CallNode) -> str:
    ret = node.ret or {}
    exceptions = ret.get("exceptions")
    if isinstance(exceptions, list) and exceptions and isinstance(exceptions[0], dict):
        return f"raised {exceptions[0].get('class', 'exception')}"
    value = ret.get("return_value")
    if isinstance(value, msgspec.Raw):  # as inspect decodes it (`scan.InspectEvent`)
        value = msgspec.json.decode(value)
    if not isinstance(value, dict) or not value:
        status = ev.status_code(node.ret)
        return str(status) if status is not None else "void"
    if value.get("value") is not None:
        return str(value["value"])
    return f"<{value.get('class', 'object')}>"


def _http_request(node: CallNode) -> str:
    from tracetool import route_model

    status = ev.status_code(node.ret)
    text = route_model.route_id(*route_model.server_route(node.call))
    return f"{text} ({status})" if status is not None else text


class Notable:
    """The nodes a match's context lists (HTTP requests, SQL, labeled functions) around the
    matches of one call tree. The first match walks its own ancestors and subtree; a second one
    indexes the whole tree once, so that each further match visits only the notable nodes of its
    ancestors and subtree: a call chain 100,000 deep costs one pass, not one pass per match."""

    def __init__(
        self, root: CallNode, cos: CodeObjects, nodes: list[CallNode] | None = None
    ) -> None:
        """`root`: the root of a whole tree; `nodes`: its nodes in pre-order (`tree.preorder`),
        when the caller has them."""
        self.root = root
        self.nodes = nodes
        self.cos = cos
        self.seen = 0  # matches asked about so far
        self.up: dict[int, CallNode | None] = {}  # nearest notable proper ancestor
        self.below: set[int] = set()  # nodes with a notable proper descendant
        self.notable: set[int] | None = None  # once indexed
        self.requests: dict[int, str] = {}  # `_http_request` of the requests met so far

    def is_notable(self, node: CallNode) -> bool:
        call = node.call
        return (
            "sql_query" in call or "http_server_request" in call or _labeled(self.cos[node], node)
        )

    def next_match(self) -> None:
        """Called before each match's context: the second one indexes the tree."""
        self.seen += 1
        if self.seen == 2:
            self._index()

    def _index(self) -> None:
        up, below, notable = self.up, self.below, set()
        is_notable = self.is_notable
        nodes = self.nodes
        if nodes is None:
            nodes = self.nodes = walk((self.root,))
        for node in nodes:
            if is_notable(node):
                notable.add(id(node))
            parent = node.parent
            if parent is None:
                up[id(node)] = None
            else:
                up[id(node)] = parent if id(parent) in notable else up[id(parent)]
        # in reverse pre-order a node's descendants all come before it
        for node in reversed(nodes):
            key = id(node)
            if (key in notable or key in below) and node.parent is not None:
                below.add(id(node.parent))
        self.notable = notable

    def ancestors(self, node: CallNode) -> list[CallNode]:
        out = []
        if self.notable is None:
            parent = node.parent
            while parent is not None:
                if self.is_notable(parent):
                    out.append(parent)
                parent = parent.parent
            return out
        found = self.up.get(id(node))
        while found is not None:
            out.append(found)
            found = self.up.get(id(found))
        return out

    def request(self, node: CallNode) -> str:
        """`_http_request(node)`, once per node: many matches share their request."""
        text = self.requests.get(id(node))
        if text is None:
            text = self.requests[id(node)] = _http_request(node)
        return text

    def descendants(self, node: CallNode) -> list[CallNode]:
        """The notable proper descendants, in pre-order."""
        out: list[CallNode] = []
        stack = list(reversed(node.children))
        notable = self.notable
        if notable is None:
            is_notable = self.is_notable
            while stack:
                child = stack.pop()
                if is_notable(child):
                    out.append(child)
                stack.extend(reversed(child.children))
            return out
        below = self.below
        while stack:
            child = stack.pop()
            if id(child) in notable:
                out.append(child)
            if id(child) in below:
                stack.extend(reversed(child.children))
        return out


def context(
    node: CallNode, cos: CodeObjects, recording: str, notable: Notable
) -> dict[str, list[str]]:
    co = cos[node]
    parent = node.parent
    ancestors = notable.ancestors(node)
    http = [a for a in [node, *ancestors] if "http_server_request" in a.call]
    queries: list[str] = []
    tables: set[str] = set()
    descendants: list[str] = []
    for d in [node, *notable.descendants(node)]:
        if "sql_query" in d.call:
            normalized, names = cos.sql.info(d.call)
            queries.append(normalized)
            tables.update(names)
        elif d is not node and _labeled(cos[d], d):
            descendants.append(cos[d].fqid)
    caller_co = cos[parent] if parent is not None else None
    callees: list[CallNode | None] = list(node.children) or [None]
    trigrams: dict[str, list[str]] = {
        "packageTrigrams": [],
        "classTrigrams": [],
        "functionTrigrams": [],
    }
    for callee in callees:
        callee_co = cos[callee] if callee is not None else None
        for key, name in (
            ("packageTrigrams", _package),
            ("classTrigrams", _class),
            ("functionTrigrams", None),
        ):
            parts = []
            for obj, n in ((caller_co, parent), (co, node), (callee_co, callee)):
                if obj is None or n is None:
                    parts.append("")
                elif name is None:
                    parts.append(_fqid(obj, n, cos.sql))
                else:
                    parts.append(name(obj))
            trigrams[key].append(" -> ".join(parts))
    return {
        "events": [f"{recording}#{node.id}"],
        "returnValues": [_return_value(node)],
        "httpServerRequests": sorted({notable.request(h) for h in http}),
        "sqlQueries": sorted(set(queries)),
        "sqlTables": sorted(tables),
        "callers": [caller_co.fqid] if caller_co is not None else [],
        "ancestors": sorted(
            {
                cos[a].fqid
                for a in ancestors
                if "http_server_request" in a.call or _labeled(cos[a], a)
            }
        ),
        "descendants": sorted(set(descendants)),
        **{k: sorted(set(v)) for k, v in trigrams.items()},
    }
