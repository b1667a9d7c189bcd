"""What the index keeps of one recording: database rows, canonical forms and the sidecar.

`extract(doc, source)` applies the document's `eventUpdates`, builds its call tree (which pairs
calls with returns, tolerating missing and extra returns) and walks it once, iteratively,
collecting:

- one row per HTTP server request (route template in `{param}` form: the agent's
  `normalized_path_info` when present, else the path turned into a template by
  `tracetool.routes`), with the number and time of the SQL calls inside it;
- one row per SQL call (normalized by `tracetool.sql`, with its tables and calling function);
- per function: call count, total time (a recursive call is counted once, at its outermost
  frame), self time (elapsed minus the elapsed of its children) and the slowest call;
- one row per exception raised and per log message (a call to a function labelled `log`,
  or a `logging.Logger` method; the message is its first argument);
- the code objects touched (functions, classes, routes, queries, tables, external routes);
- the AppMap canonical forms (`tracetool.index.canonical`) and the bound classMap (only code
  objects with events, dynamic ones included), which go to the sidecar.

`extract_bound` returns the same and the call tree it walked with every call's code object
(`tracetool.filters.Bound`, as `bind(doc)` makes it), so the indexer's digests reuse the tree
instead of building it again; `release_bound` frees it. Both are one batch of an `Extractor`,
which the indexer feeds finished call trees a batch at a time when it reads a big recording
event by event (one implementation, the same rows either way).

Pure: no I/O, so the indexer can run it in worker processes and tests can call it directly. What
depends only on values is kept per process, bounded, for the next recording: an HTTP request's
route and row texts by its fields (`_server_facts`, `_client_facts`), a SQL text's analysis and
items (`_sql_facts`), a function's `path:line` (`_LOCATIONS`, kept by the C walk).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

from tracetool import accel, route_model, sql
from tracetool.filters import Bound
from tracetool.filters.apply import call_tree
from tracetool.index.canonical import Canonical, bound_class_map
from tracetool.index.canonical import _names as canonical_names
from tracetool.index.rows import (
    LOG_LABELS,
    LOG_LEVELS,
    MAX_FTS_FIELD,
    add_exceptions,
    capped,
    code_words,
    elapsed_ms,
    first_timestamp,
    function_row,
    is_log_call,
    log_message,
    metadata_row,
    plain_row,
    route_template,
)
from tracetool.trace import TraceDocument
from tracetool.trace import events as ev
from tracetool.trace.codeobjects import HTTP_ROOT, CodeObject, service_host
from tracetool.trace.normalize import apply_event_updates
from tracetool.trace.tree import CallNode


@dataclass
class Extract:
    """Everything the database stores about one recording (rows as plain tuples)."""

    recording: dict[str, Any]
    # Rows name code objects by fqid; `items` describes each of them (see CodeObjectRow).
    # (event_id, method, route, path, status, duration_ms, sql_count, sql_ms)
    requests: list[list[Any]] = field(default_factory=list)
    # (event_id, request_event_id, query fqid, duration_ms, caller fqid)
    queries: list[tuple[Any, ...]] = field(default_factory=list)
    # (fqid, count, total_ms, self_ms, max_ms)
    functions: list[tuple[Any, ...]] = field(default_factory=list)
    # (event_id, request_event_id, class, message, location, function fqid)
    exceptions: list[tuple[Any, ...]] = field(default_factory=list)
    # (event_id, request_event_id, level, logger fqid, caller fqid, message)
    logs: list[tuple[Any, ...]] = field(default_factory=list)
    # fqid -> CodeObjectRow of every code object the recording touches
    items: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    # (name, labels, routes, code, sql, messages) for full-text search
    fts: tuple[str, ...] = ()
    canonical: dict[str, list[Any]] = field(default_factory=dict)
    class_map: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


def extract(doc: TraceDocument, source: str = "") -> Extract:
    """Extract the index rows of `doc` (see module doc); applies its eventUpdates in place.

    Event ids stay those of the file (reference/appmap.md §6 lesson 3): `event_id` columns point
    at the recording's own events, as `tracetool query tree` shows them.
    """
    out, bound = extract_bound(doc, source)
    release_bound(bound)
    return out


def release_bound(bound: Bound) -> None:
    """Break the call tree's and the classMap's cycles, so reference counting frees the
    document at once (not a cyclic-GC pass over every event later)."""
    for node in bound.nodes:  # (children keep no link up: the tree is freed top down)
        node.parent = None
    for co in bound.cmap.objects():
        co.parent = None
        co.children = []
    bound.nodes.clear()
    bound.roots.clear()
    bound.code_objects.clear()
    bound.node_code_objects = None


def extract_bound(doc: TraceDocument, source: str = "") -> tuple[Extract, Bound]:
    """`extract(doc)` and the bound call tree it walked (module doc); the caller frees the
    tree with `release_bound`. The whole document is one batch of an `Extractor`."""
    out, bound, _ = extract_resolved(doc, source)
    return out, bound


def extract_resolved(
    doc: TraceDocument, source: str = ""
) -> tuple[Extract, Bound, dict[tuple[Any, ...], tuple[Any, ...]]]:
    """`extract_bound`, and how it resolved the function calls: `Extractor.fn_info`, by the
    call's `function_call_key`, (code object, fqid, ...) -- which the index names stats' sums
    of function calls by (`tracetool.index.overhead.extract_named`)."""
    apply_event_updates(doc)
    events = doc.events
    # (the roots only: the tree's index of calls by id is not needed once it is built)
    roots = call_tree(events).roots  # built in C when the accelerator is there
    extractor = Extractor(doc.class_map)
    batch = extractor.add(roots, any(map(_IS_REQUEST, events)))
    out = extractor.finish(doc, source, len(events), first_timestamp(events))
    bound = Bound(
        doc,
        events,
        batch.nodes,
        roots,
        batch.cmap,
        batch.static,
        batch.code_objects,
        batch.node_code_objects,
    )
    return out, bound, extractor.fn_info


_IS_REQUEST = operator.methodcaller("__contains__", "http_server_request")
_STR_OR_NONE = frozenset((str, type(None)))

# What an HTTP request's fields make (its route, the texts of its rows), kept by the fields'
# values per worker process: a recording and the next repeat the same requests. Bounded: a
# full cache is emptied.
_FACTS_MAX = 4096
_SERVER_FACTS: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_CLIENT_FACTS: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def _server_facts(call: dict[str, Any]) -> tuple[Any, ...] | None:
    """An HTTP server request's method (`ev.request_method`), route template, route id, shape,
    route (`ev.route`), capped path, route fqid and route item; None when the request is not a
    non-empty object whose fields are strings (then they are read as ever)."""
    request = call.get("http_server_request")
    if type(request) is not dict or not request:
        return None
    key = (
        request.get("request_method"),
        request.get("normalized_path_info"),
        request.get("path_info"),
    )
    if not _STR_OR_NONE.issuperset(map(type, key)):
        return None
    facts = _SERVER_FACTS.get(key)
    if facts is None:
        method = ev.request_method(call)
        template = route_template(call)
        route_key = route_model.route_id(method, template)
        facts = (
            method,
            template,
            route_key,
            route_model.shape(template),
            ev.route(call),
            capped(ev.path_info(call)),
            f"route:{route_key}",
            plain_row("route", route_key, method),
        )
        if len(_SERVER_FACTS) >= _FACTS_MAX:
            _SERVER_FACTS.clear()
        _SERVER_FACTS[key] = facts
    return facts


def _client_facts(call: dict[str, Any]) -> tuple[Any, ...] | None:
    """An HTTP client request's service host (`codeobjects.service_host`), route (`ev.route`)
    and external-route item; None when the request is not an object whose fields are strings
    or when the call is an HTTP server request too."""
    request = call.get("http_client_request")
    if type(request) is not dict or "http_server_request" in call:
        return None
    key = (request.get("url"), request.get("request_method"))
    if not _STR_OR_NONE.issuperset(map(type, key)):
        return None
    facts = _CLIENT_FACTS.get(key)
    if facts is None:
        route = ev.route(call)
        facts = (
            service_host(str(key[0] or "")),
            route,
            plain_row("external-route", route, ev.request_method(call)),
        )
        if len(_CLIENT_FACTS) >= _FACTS_MAX:
            _CLIENT_FACTS.clear()
        _CLIENT_FACTS[key] = facts
    return facts


# SQL key (`_sql_key`) -> its analysis, the arguments of `Canonical.sql`, its query's item and
# its tables' (fqid, item): per worker process, bounded as `_SERVER_FACTS`.
_SQL_FACTS: dict[tuple[Any, Any], tuple[Any, ...]] = {}


def _sql_facts(key: tuple[str, str | None], info: sql.SqlInfo) -> tuple[Any, ...]:
    """`_SQL_FACTS[key]` made of `info`, the key's analysis. The item's database type is the
    key's: `_sql_key` reads it as `ev.database_type` does."""
    tables = tuple(info.tables)
    item = (
        "query",
        info.normalized,
        None,
        None,
        None,
        None,
        None,
        None,
        info.operation or None,
        ",".join(tables),
        key[1],
    )
    table_items = tuple((f"table:{table}", plain_row("table", table)) for table in tables)
    facts = (info, (info.normalized, tables), item, table_items)
    if len(_SQL_FACTS) >= _FACTS_MAX:
        _SQL_FACTS.clear()
    _SQL_FACTS[key] = facts
    return facts


# (str path, int line) -> "path:line", per worker process, kept by the C walk (bounded)
_LOCATIONS: dict[tuple[str, int], str] = {}
_WALK = accel.function("extract_walk")  # `Extractor._walk` in C (tracetool/_speedups_extract.c)


def _sql_key(call: dict[str, Any]) -> tuple[str, str | None]:
    """`(ev.sql_text(call), ev.database_type(call))`, the usual shapes read inline."""
    query = call.get("sql_query")
    if type(query) is dict:
        text, database = query.get("sql"), query.get("database_type")
        if type(text) is str and (database is None or type(database) is str):
            return text, database or None
    return ev.sql_text(call), ev.database_type(call)


class Extractor:
    """`extract` fed finished call trees in batches (document order), so that a recording read
    event by event (`tracetool.index.worker`) is never held whole: `add` walks a batch of roots
    and returns it bound (`Bound` without events, for the digests); `finish` makes the Extract.

    What depends on the whole recording is kept across batches: per-function aggregates, rows,
    code objects, the bound classMap and the canonical forms. The one whole-recording input,
    whether any event is an HTTP server request (then only calls inside requests count for the
    canonical forms), is passed with each batch as known so far: once it turns true the forms
    collected without it are dropped — no call before the first request event was inside one.
    """

    def __init__(self, class_map: Any) -> None:
        self.cmap = accel.class_map(class_map)
        self.static = set(map(id, self.cmap.objects()))
        self.doc = TraceDocument({})
        self.out = Extract(recording={})
        self.canonical = Canonical()
        self.has_http = False
        # SQL text -> query code object, fqid, `Canonical.sql` arguments
        self.sql_cache: dict[tuple[str, str | None], tuple[CodeObject, str, Any]] = {}
        self.used: dict[int, CodeObject] = {}  # id(code object) -> code object with events
        self.funcs: dict[str, list[Any]] = {}  # fqid -> [count, total, self, max, open]
        # call key -> co, fqid, is log, aggregate (`_function`)
        self.fn_info: dict[tuple[Any, ...], tuple[CodeObject, str, bool, list[Any]]] = {}
        # route id, or (service host, route) -> the code object of HTTP server/client requests
        self.routes: dict[Any, CodeObject] = {}
        # (call, its facts) of the last HTTP call whose code object was resolved: its row
        # (`_http_server`, `_http_client`) comes next
        self.facts: tuple[Any, tuple[Any, ...] | None] = (None, None)
        self.fts_routes: dict[str, None] = {}
        self.fts_sql: dict[str, None] = {}
        self.messages: dict[str, None] = {}
        self.elapsed_total = 0.0
        self.n_calls = 0
        self.n_roots = 0

    def add(self, roots: list[CallNode], has_http: bool) -> Bound:
        """Walk finished trees; `has_http`: whether any event read so far (these trees' events
        included) is an HTTP server request."""
        if has_http and not self.has_http:
            self.has_http = True
            self.canonical = Canonical()
        nodes: list[CallNode] = []  # pre-order, as `bind` lists them
        codes: dict[int, CodeObject] = {}  # id(node) -> code object, for exception stacks
        in_order: list[CodeObject] = []  # the same, parallel to `nodes` (the digests read it)
        self.n_roots += len(roots)
        for root in roots:
            ms = elapsed_ms(root)
            if ms is not None:
                self.elapsed_total += ms
        if _WALK is not None:
            canonical = self.canonical
            context = (
                self.has_http,
                self.fn_info,
                self.sql_cache,
                self.out.items,
                self.out.queries,
                canonical.pairs,
                canonical.functions,
                canonical._params,  # (C checks the sets `function` and `sql` check first)
                canonical._sql,
                canonical.function,
                canonical.sql,
                self.cmap.code_object_for,  # (C does the rest of `_function`)
                self._sql,
                _sql_key,
                self._code_object,
                self._http_server,
                self._http_client,
                self._log,
                self._exceptions,
                # (C makes `dependency`'s and `function`'s values, and sides, into these)
                canonical._sides,
                canonical.values["classDependencies"],
                canonical.values["packageDependencies"],
                canonical_names,
                canonical.values["parameters"],
                canonical.values["classes"],
                canonical.values["packages"],
                canonical.values["labels"],
                self.used,
                self.funcs,
                LOG_LABELS,
                LOG_LEVELS,
                self.cmap.by_location,  # (C looks a function up by its location first)
                CodeObject,  # (whose slots C reads in place)
                canonical._class_deps,  # (C appends a dependency once, as `_depend`)
                canonical._package_deps,
                _LOCATIONS,
                self.out.logs,  # (C makes a log call's row, as `_log`, when it can)
                self.messages,
                canonical._last_params,
                canonical.values["sqlNormalized"],  # (C does `sql` for its usual arguments)
                canonical.values["sqlTables"],
                # (C does `_sql` for a new SQL text, and `_code_object` for an HTTP request
                # whose facts are kept, their dynamic objects made as `ClassMap.child` makes them)
                (
                    sql.analyze,
                    _SQL_FACTS,
                    _sql_facts,
                    self.cmap._children,
                    self.cmap.roots,
                    self.fts_sql,
                    self.cmap,
                    _SERVER_FACTS,
                    _CLIENT_FACTS,
                    self.routes,
                    HTTP_ROOT,
                    self.out.requests,  # (and `_http_server` for them)
                    self.fts_routes,
                    canonical.values["httpServerRequests"],
                ),
            )
            self.n_calls += _WALK(roots, CallNode, nodes, codes, in_order, context)
        else:
            self.n_calls += self._walk(roots, nodes, codes, in_order)
        return Bound(self.doc, [], nodes, roots, self.cmap, self.static, codes, in_order)

    def _walk(
        self,
        roots: list[CallNode],
        nodes: list[CallNode],
        codes: dict[int, CodeObject],
        in_order: list[CodeObject],
    ) -> int:
        """`add`'s walk, in pre-order: fills `nodes`, `codes`, `in_order`, returns the number
        of function calls. `tracetool/_speedups_extract.c` is its twin (the common cases in C,
        the rest through the same helpers)."""
        has_http, canonical, out = self.has_http, self.canonical, self.out
        sql_cache, fn_info = self.sql_cache, self.fn_info
        n_calls = 0
        # Entries: (node, parent code object, request row, caller fqid, in_http, parent
        # function's aggregate), or (None, aggregate, ...) to close a function frame.
        stack: list[tuple[Any, ...]] = [
            (node, None, None, None, False, None) for node in reversed(roots)
        ]
        # Once per call: module attributes and bound methods looked up once.
        SQL, FUNCTION = ev.SQL, ev.FUNCTION
        HTTP_SERVER, HTTP_CLIENT = ev.HTTP_SERVER, ev.HTTP_CLIENT
        pairs, dependency = canonical.pairs, canonical.dependency
        function_values, functions_seen = canonical.function, canonical.functions
        pop, push, visit, visited = stack.pop, stack.append, nodes.append, in_order.append
        agg: Any = None  # the call's function aggregate (`_function`), None for other calls
        while stack:
            node, parent_co, request, caller, in_http, parent_agg = pop()
            if node is None:
                parent_co[4] -= 1
                continue
            visit(node)
            call = node.call
            ret = node.ret
            ms = None
            if ret is not None:
                elapsed = ret.get("elapsed")
                if isinstance(elapsed, (int, float)):
                    ms = elapsed * 1000.0  # as `elapsed_ms`
            event_id = call.get("id")
            # `ev.kind(call)`, inline; code objects met once per recording are marked used
            # when first resolved (`fn_info`, `sql_cache` live as long as `used`).
            if "http_server_request" in call:
                kind = HTTP_SERVER
            elif "http_client_request" in call:
                kind = HTTP_CLIENT
            elif "sql_query" in call:
                kind = SQL
            elif "method_id" in call or "defined_class" in call:
                kind = FUNCTION
            else:
                kind = ""  # a message or other call: its own code object, no row
            if kind == SQL:
                sql_key = _sql_key(call)
                cached = sql_cache.get(sql_key)
                if cached is None:
                    cached = self._sql(sql_key)
                co, fqid, sql_values = cached
                agg = None
            elif kind == FUNCTION:
                # Resolving a function is a few dict lookups, but recordings repeat the same
                # functions thousands of times.
                key = (
                    call.get("defined_class"),
                    call.get("method_id"),
                    call.get("path"),
                    call.get("lineno"),
                    call.get("static"),
                )
                resolved = fn_info.get(key)
                if resolved is None:
                    resolved = fn_info[key] = self._function(call)
                co, fqid, is_log, agg = resolved
            else:
                co = self._code_object(call)
                fqid = co.fqid
                agg = None
            codes[id(node)] = co
            visited(co)
            in_http = in_http or kind == HTTP_SERVER
            counted = in_http or not has_http
            if counted and parent_co is not None and (id(co), id(parent_co)) not in pairs:
                dependency(co, parent_co)
            request_id = request[0] if request is not None else None
            next_caller = caller
            if ms is not None and parent_agg is not None:
                parent_agg[2] -= ms  # self time of the calling function excludes this call

            if kind == FUNCTION:
                n_calls += 1
                next_caller = fqid
                agg[0] += 1
                if ms is not None:
                    if not agg[4]:  # the outermost frame of a recursion counts
                        agg[1] += ms
                    agg[2] += ms
                    if ms > agg[3]:
                        agg[3] = ms
                if node.children:  # a frame only its callees can see (recursion)
                    agg[4] += 1
                    push((None, agg, None, None, False, None))
                # (a call without parameters of a function seen adds nothing: `function`)
                if counted and (id(co) not in functions_seen or call.get("parameters")):
                    function_values(node, co)
                if is_log:
                    self._log(call, event_id, request_id, fqid, caller)
            elif kind == HTTP_SERVER:
                request = self._http_server(node, call, event_id, ms, counted)
            elif kind == SQL:
                out.queries.append((event_id, request_id, fqid, ms, caller))
                if request is not None:
                    request[6] += 1
                    if ms is not None:
                        request[7] += ms
                if counted:
                    canonical.sql(*sql_values)
            elif kind == HTTP_CLIENT:
                self._http_client(node, call, co, fqid, counted)

            if ret is not None and ret.get("exceptions"):
                self._exceptions(node, event_id, request_id, fqid, counted, codes)

            for child in reversed(node.children):
                push((child, co, request, next_caller, in_http, agg))
        return n_calls

    # The walk's cold paths, called by `_walk` and by its C twin alike.

    def _sql(self, key: tuple[str, str | None]) -> tuple[CodeObject, str, tuple[Any, ...]]:
        """A SQL text's entry of `sql_cache`, when first met: its query code object (marked
        used), fqid and the arguments of `Canonical.sql`; the query's
        item (and its tables'), and its search text, when its fqid is new."""
        # (asked each time: `sql.returned` records it for the stats of the recording)
        info = sql.analyze(*key)
        facts = _SQL_FACTS.get(key)
        if facts is None or facts[0] is not info:
            facts = _sql_facts(key, info)
        _, values, item, tables = facts
        co = self.cmap.query(info.normalized)
        self.used[id(co)] = co
        fqid = co.fqid
        items = self.out.items
        if fqid not in items:
            items[fqid] = item
            for table_fqid, row in tables:
                items.setdefault(table_fqid, row)
            self.fts_sql.setdefault(info.normalized, None)
        cached = self.sql_cache[key] = (co, fqid, values)
        return cached

    def _code_object(self, call: dict[str, Any]) -> CodeObject:
        """The code object of a call that is neither a function's nor a SQL query's (marked
        used); an HTTP request's by its route, met once per recording."""
        co = None
        if "http_server_request" in call:
            facts = _server_facts(call)
            self.facts = (call, facts)
            if facts is not None:
                co = self.routes.get(facts[2])
                if co is None:
                    co = self.routes[facts[2]] = self.cmap.route(facts[2])
        elif "http_client_request" in call:
            facts = _client_facts(call)
            self.facts = (call, facts)
            if facts is not None:
                key = (facts[0], facts[1])
                co = self.routes.get(key)
                if co is None:
                    co = self.routes[key] = self.cmap.external_route(*key)
        if co is None:
            co = self.cmap.code_object_for(call)
        self.used[id(co)] = co
        return co

    def _log(
        self, call: dict[str, Any], event_id: Any, request_id: Any, fqid: str, caller: Any
    ) -> None:
        message = log_message(call)
        if message is not None:
            level = str(call.get("method_id") or "")
            self.out.logs.append((event_id, request_id, level, fqid, caller, message))
            self.messages.setdefault(message[:200], None)

    def _http_server(
        self, node: CallNode, call: dict[str, Any], event_id: Any, ms: Any, counted: bool
    ) -> list[Any]:
        """An HTTP server request's row (the calls inside it count their SQL into it)."""
        facts = self.facts[1] if self.facts[0] is call else _server_facts(call)
        if facts is not None:
            method, template, route_key, shape, route, path, fqid, row = facts
            status = ev.status_code(node.ret)
            request = [event_id, method, template, path, status, ms, 0, 0.0, shape]
            self.out.requests.append(request)
            self.out.items.setdefault(fqid, row)
            self.fts_routes.setdefault(route_key, None)
            if counted:
                self.canonical.http_server(node, route, status)
            return request
        method = ev.request_method(call)
        template = route_template(call)
        status = ev.status_code(node.ret)
        request = [
            event_id,
            method,
            template,
            capped(ev.path_info(call)),
            status,
            ms,
            0,
            0.0,
        ]
        request.append(route_model.shape(template))
        self.out.requests.append(request)
        route_key = route_model.route_id(method, template)
        self.out.items.setdefault(f"route:{route_key}", plain_row("route", route_key, method))
        self.fts_routes.setdefault(route_key, None)
        if counted:
            self.canonical.http_server(node, ev.route(call), status)
        return request

    def _http_client(
        self, node: CallNode, call: dict[str, Any], co: CodeObject, fqid: str, counted: bool
    ) -> None:
        facts = self.facts[1] if self.facts[0] is call else _client_facts(call)
        if facts is not None:
            _, route, row = facts
            self.out.items.setdefault(fqid, row)
        else:
            route = ev.route(call)
            self.out.items.setdefault(
                fqid, plain_row("external-route", co.name, ev.request_method(call))
            )
        if counted:
            self.canonical.http_client(node, route, ev.status_code(node.ret))

    def _exceptions(
        self,
        node: CallNode,
        event_id: Any,
        request_id: Any,
        fqid: str,
        counted: bool,
        codes: dict[int, CodeObject],
    ) -> None:
        """The rows and canonical forms of the exceptions a call's return lists."""
        ret = node.ret
        assert ret is not None
        add_exceptions(
            self.out.exceptions, self.messages, ret["exceptions"], event_id, request_id, fqid
        )
        if counted:
            self.canonical.exceptions(node, codes)

    def _function(self, call: dict[str, Any]) -> tuple[CodeObject, str, bool, list[Any]]:
        """A function call's code object, fqid, whether it logs and its aggregate, when first
        met with these fields (`add` keeps them by `function_call_key`); the function's row is
        made then, from its first call."""
        co = self.cmap.code_object_for(call)
        self.used[id(co)] = co
        fqid = co.fqid
        agg = self.funcs.get(fqid)
        if agg is None:
            # [count, total, self, max, frames open (recursion)]
            agg = self.funcs[fqid] = [0, 0.0, 0.0, 0.0, 0]
            items = self.out.items
            items[fqid] = function_row(co, call)
            cls = co.class_
            if cls is not None:
                items.setdefault(cls.fqid, plain_row("class", cls.id))
        return co, fqid, is_log_call(call, co), agg

    def release(self) -> None:
        """Break the classMap's cycles (as `release_bound` does for a whole recording)."""
        for co in self.cmap.objects():
            co.parent = None
            co.children = []

    def finish(self, doc: TraceDocument, source: str, n_events: int, recorded_at: Any) -> Extract:
        """The Extract of every batch added; `doc` gives the metadata and name (its events are
        not read)."""
        out, funcs, items = self.out, self.funcs, self.out.items
        # Children timed longer than their caller (clock skew) must not make self time negative.
        # (`max(own, 0.0)`, without a builtin call per function)
        out.functions = [
            (f, n, total, 0.0 if 0.0 > own else own, top)
            for f, (n, total, own, top, _) in funcs.items()
        ]
        out.canonical = self.canonical.result()
        out.class_map = bound_class_map(self.cmap, self.used)

        md = doc.metadata
        row = metadata_row(md)
        name = doc.name or source
        words = set().union(*map(code_words, funcs))
        out.fts = (
            name,
            " ".join(row["labels"]),
            "\n".join(self.fts_routes)[:MAX_FTS_FIELD],
            " ".join(sorted(words))[:MAX_FTS_FIELD],
            "\n".join(self.fts_sql)[:MAX_FTS_FIELD],
            "\n".join(self.messages)[:MAX_FTS_FIELD],
        )
        row.update(
            name=name,
            recorded_at=recorded_at,
            events=n_events,
            requests=len(out.requests),
            queries=len(out.queries),
            calls=self.n_calls,
            exceptions=len(out.exceptions),
            items=len(items),
            elapsed_ms=self.elapsed_total if self.n_roots else None,
        )
        out.recording = row
        meta = dict(md)
        if isinstance(meta.get("git"), dict):
            meta["git"] = {k: v for k, v in meta["git"].items() if k != "status"}
        out.metadata = meta
        return out
