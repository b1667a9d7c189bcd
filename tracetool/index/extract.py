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
instead of building it again; `release_bound` frees it.

Pure: no I/O, so the indexer can run it in worker processes and tests can call it directly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tracetool import route_model, sql
from tracetool.filters import Bound
from tracetool.index.canonical import Canonical, bound_class_map
from tracetool.trace import ClassMap, TraceDocument, build_call_tree
from tracetool.trace import events as ev
from tracetool.trace.codeobjects import DATABASE_ROOT, CodeObject
from tracetool.trace.normalize import apply_event_updates
from tracetool.trace.tree import CallNode

LOG_LABELS = frozenset(("log", "logging"))
LOG_LEVELS = frozenset(
    ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log")
)
# Caps that keep one pathological recording from bloating the database.
MAX_TEXT = 2000
MAX_FTS_FIELD = 200_000


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


def _ms(node: CallNode) -> float | None:
    ret = node.ret
    if ret is None:
        return None
    value = ret.get("elapsed")
    return value * 1000.0 if isinstance(value, (int, float)) else None


def _text(value: Any, cap: int = MAX_TEXT) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= cap else text[:cap] + "…"


def route_template(call: ev.Event) -> str:
    """The `{param}` route template of an HTTP server request call (`tracetool.route_model`)."""
    return route_model.server_template(call)


def _log_message(call: ev.Event) -> str | None:
    for param in call.get("parameters") or ():
        if isinstance(param, dict) and param.get("name") not in ("self", "cls"):
            value = param.get("value")
            return None if value is None else _text(value)
    return None


def _is_log(call: ev.Event, co: CodeObject) -> bool:
    if LOG_LABELS.intersection(co.labels):
        return True
    cls = str(call.get("defined_class") or "")
    return cls in ("logging.Logger", "Logger") and call.get("method_id") in LOG_LEVELS


def _recorded_at(events: list[ev.Event]) -> float | None:
    for event in events:
        ts = event.get("timestamp")
        if isinstance(ts, (int, float)):
            return float(ts)
    return None


def _obj(md: dict[str, Any], key: str) -> dict[str, Any]:
    value = md.get(key)
    return value if isinstance(value, dict) else {}


def _metadata_row(md: dict[str, Any]) -> dict[str, Any]:
    git, recorder = _obj(md, "git"), _obj(md, "recorder")
    language, failure = _obj(md, "language"), _obj(md, "test_failure")
    labels = md.get("labels")
    return {
        "labels": [str(x) for x in labels] if isinstance(labels, list) else [],
        "test_status": md.get("test_status"),
        "recorder_type": recorder.get("type"),
        "recorder_name": recorder.get("name"),
        "language": language.get("name"),
        "app": md.get("app"),
        "branch": git.get("branch"),
        "git_commit": git.get("commit"),
        "source_location": md.get("source_location"),
        "failure": _text(failure.get("message")) if failure.get("message") else None,
    }


def _function_row(co: CodeObject, call: ev.Event) -> tuple[Any, ...]:
    cls = co.class_
    class_name = str(call.get("defined_class") or (cls.name if cls is not None else ""))
    return (
        "function",
        co.name,
        cls.id if cls is not None else "",
        class_name,
        co.name,
        1 if co.static else 0,
        co.location,
        ",".join(co.labels),
        None,
        None,
        None,
    )


def _plain_row(type_: str, name: str, method: str | None = None) -> tuple[Any, ...]:
    return (type_, name, None, None, method, None, None, None, None, None, None)


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
    for node in bound.nodes:
        node.parent = None
        node.children = []
    for co in list(bound.cmap):
        co.parent = None
        co.children = []
    bound.nodes.clear()
    bound.roots.clear()
    bound.code_objects.clear()


def extract_bound(doc: TraceDocument, source: str = "") -> tuple[Extract, Bound]:
    """`extract(doc)` and the bound call tree it walked (module doc); the caller frees the
    tree with `release_bound`."""
    apply_event_updates(doc)
    events = doc.events
    has_http = any("http_server_request" in e for e in events)
    tree = build_call_tree(events)
    cmap = ClassMap.from_json(doc.class_map)
    static = {id(o) for o in cmap}
    nodes: list[CallNode] = []  # pre-order, as `bind` lists them
    canonical = Canonical()
    out = Extract(recording={})
    items = out.items

    sql_cache: dict[tuple[str, str | None], tuple[Any, CodeObject]] = {}
    codes: dict[int, CodeObject] = {}  # id(node) -> code object, for exception stacks
    used: dict[int, CodeObject] = {}  # id(code object) -> code object with events
    funcs: dict[str, list[Any]] = {}  # fqid -> [count, total, self, max]
    fn_info: dict[tuple[Any, ...], tuple[CodeObject, str, bool]] = {}  # call key -> co, fqid, log
    active: dict[str, int] = {}  # fqid -> frames open (recursion)
    fts_routes: dict[str, None] = {}
    fts_sql: dict[str, None] = {}
    messages: dict[str, None] = {}
    elapsed_total = 0.0
    n_calls = 0
    for root in tree.roots:
        ms = _ms(root)
        if ms is not None:
            elapsed_total += ms

    # Entries: (node, parent code object, request row, caller fqid, in_http, parent function's
    # aggregate), or (None, fqid, ...) to close a function frame.
    stack: list[tuple[Any, ...]] = [
        (node, None, None, None, False, None) for node in reversed(tree.roots)
    ]
    while stack:
        node, parent_co, request, caller, in_http, parent_agg = stack.pop()
        if node is None:
            active[parent_co] -= 1
            continue
        nodes.append(node)
        call = node.call
        kind = ev.kind(call)
        ms = _ms(node)
        event_id = call.get("id")
        if kind == ev.SQL:
            sql_key = (ev.sql_text(call), ev.database_type(call))
            cached = sql_cache.get(sql_key)
            if cached is None:
                info = sql.analyze(*sql_key)
                database = cmap.child(None, "database", DATABASE_ROOT)
                cached = sql_cache[sql_key] = (info, cmap.child(database, "query", info.normalized))
            info, co = cached
            fqid = co.fqid
        elif kind == ev.FUNCTION:
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
                fco = cmap.code_object_for(call)
                resolved = fn_info[key] = (fco, fco.fqid, _is_log(call, fco))
            co, fqid, is_log = resolved
        else:
            co = cmap.code_object_for(call)
            fqid = co.fqid
        codes[id(node)] = co
        used[id(co)] = co
        in_http = in_http or kind == ev.HTTP_SERVER
        counted = in_http or not has_http
        if counted:
            canonical.dependency(co, parent_co)
        request_id = request[0] if request is not None else None
        next_caller = caller
        if ms is not None and parent_agg is not None:
            parent_agg[2] -= ms  # self time of the calling function excludes this call
        agg = None

        if kind == ev.FUNCTION:
            n_calls += 1
            next_caller = fqid
            agg = funcs.get(fqid)
            if agg is None:
                agg = funcs[fqid] = [0, 0.0, 0.0, 0.0]
                items[fqid] = _function_row(co, call)
                cls = co.class_
                if cls is not None:
                    items.setdefault(cls.fqid, _plain_row("class", cls.id))
            agg[0] += 1
            if ms is not None:
                if not active.get(fqid):
                    agg[1] += ms
                agg[2] += ms
                if ms > agg[3]:
                    agg[3] = ms
            active[fqid] = active.get(fqid, 0) + 1
            stack.append((None, fqid, None, None, False, None))
            if counted:
                canonical.function(node, co)
            if is_log:
                message = _log_message(call)
                if message is not None:
                    level = str(call.get("method_id") or "")
                    out.logs.append((event_id, request_id, level, fqid, caller, message))
                    messages.setdefault(message[:200], None)
        elif kind == ev.HTTP_SERVER:
            method = ev.request_method(call)
            template = route_template(call)
            status = ev.status_code(node.ret)
            request = [event_id, method, template, _text(ev.path_info(call)), status, ms, 0, 0.0]
            request.append(route_model.shape(template))
            out.requests.append(request)
            route_key = route_model.route_id(method, template)
            items.setdefault(f"route:{route_key}", _plain_row("route", route_key, method))
            fts_routes.setdefault(route_key, None)
            if counted:
                canonical.http_server(node, ev.route(call), status)
        elif kind == ev.SQL:
            tables = tuple(info.tables)
            out.queries.append((event_id, request_id, fqid, ms, caller))
            if fqid not in items:
                items[fqid] = (
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
                    ev.database_type(call),
                )
                for table in tables:
                    items.setdefault(f"table:{table}", _plain_row("table", table))
                fts_sql.setdefault(info.normalized, None)
            if request is not None:
                request[6] += 1
                if ms is not None:
                    request[7] += ms
            if counted:
                canonical.sql(info.normalized, tables)
        elif kind == ev.HTTP_CLIENT:
            items.setdefault(fqid, _plain_row("external-route", co.name, ev.request_method(call)))
            if counted:
                canonical.http_client(node, ev.route(call), ev.status_code(node.ret))

        ret = node.ret
        if ret is not None and ret.get("exceptions"):
            _exceptions(out, messages, ret["exceptions"], event_id, request_id, fqid)
            if counted:
                canonical.exceptions(node, codes)

        for child in reversed(node.children):
            stack.append((child, co, request, next_caller, in_http, agg))

    # Children timed longer than their caller (clock skew) must not make self time negative.
    out.functions = [(f, n, total, max(own, 0.0), top) for f, (n, total, own, top) in funcs.items()]
    out.canonical = canonical.result()
    out.class_map = bound_class_map(cmap, used)

    md = doc.metadata
    row = _metadata_row(md)
    name = doc.name or source
    code_words = {word for fqid in funcs for word in _code_words(fqid)}
    out.fts = (
        name,
        " ".join(row["labels"]),
        "\n".join(fts_routes)[:MAX_FTS_FIELD],
        " ".join(sorted(code_words))[:MAX_FTS_FIELD],
        "\n".join(fts_sql)[:MAX_FTS_FIELD],
        "\n".join(messages)[:MAX_FTS_FIELD],
    )
    row.update(
        name=name,
        recorded_at=_recorded_at(events),
        events=len(events),
        requests=len(out.requests),
        queries=len(out.queries),
        calls=n_calls,
        exceptions=len(out.exceptions),
        items=len(items),
        elapsed_ms=elapsed_total if tree.roots else None,
    )
    out.recording = row
    meta = dict(md)
    if isinstance(meta.get("git"), dict):
        meta["git"] = {k: v for k, v in meta["git"].items() if k != "status"}
    out.metadata = meta
    return out, Bound(doc, events, nodes, tree.roots, cmap, static, codes)


def _exceptions(
    out: Extract,
    messages: dict[str, None],
    raised: Any,
    event_id: Any,
    request_id: Any,
    fqid: str,
) -> None:
    for exc in raised if isinstance(raised, list) else ():
        if not isinstance(exc, dict):
            continue
        path, lineno = exc.get("path"), exc.get("lineno")
        location = f"{path}:{lineno}" if path and lineno else (str(path) if path else None)
        cls_name = _text(exc.get("class") or "?", 500)
        message = _text(exc.get("message")) if exc.get("message") is not None else None
        out.exceptions.append((event_id, request_id, cls_name, message, location, fqid))
        words = " ".join(_CAMEL.split(cls_name))
        messages.setdefault(f"{cls_name} {words} {message or ''}"[:300], None)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _code_words(fqid: str) -> list[str]:
    """`function:app/models/UserStore#save` → search terms `app models UserStore User Store
    save` (the tokenizer splits on punctuation; camel-case parts are added for partial names)."""
    words = fqid.split(":", 1)[-1].replace("#", " ").replace(".", " ").replace("/", " ").split()
    out = []
    for word in words:
        out.append(word)
        parts = _CAMEL.split(word)
        if len(parts) > 1:
            out.extend(parts)
    return out
