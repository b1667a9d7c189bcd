"""`find`: row-level search over the query database, and full-text `search` of recordings.

`find(db, type, filters)` returns plain dicts (JSON-ready), at most `filters.limit` (default
`DEFAULT_LIMIT`) rows, in a fixed order:

| type | one row per | order | filters |
|---|---|---|---|
| `appmaps` (`recordings`) | recording | newest first (best text match first with `text`) | all |
| `requests` | HTTP server request | slowest first | route, method, status, duration, table, recording |
| `queries` | SQL call | slowest first | route, status, duration, class, method, table, recording |
| `calls` | function per recording | most total time first | class, method, duration, recording |
| `exceptions` | exception raised | recording, event | route, status, class, method, recording |
| `logs` | log message | recording, event | route, status, class, method, recording |

"recording" filters are branch, commit, since and until. For `appmaps` the other filters select
recordings that contain a matching request (route, status), function (class, method) or query
(table); `duration` is the recording's total time. `queries`, `logs` and `exceptions` match
route and status through the HTTP request they happened in, class and method through the
calling function (for `exceptions`, `class` is the exception's class; for `requests`, `method`
is the HTTP method). `calls` match duration on the slowest single call. `text` is a full-text
match for `appmaps` and a case-insensitive substring of the SQL / path / function / message
otherwise. A filter that does not apply to the type raises `UsageError`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from tracetool.errors import UsageError
from tracetool.query.db import iso
from tracetool.query.filters import (
    Clause,
    Filters,
    NameFilter,
    recording_clauses,
    route_clauses,
    where,
)
from tracetool.trace import gc_paused_call

DEFAULT_LIMIT = 100
TYPES = ("appmaps", "requests", "queries", "calls", "exceptions", "logs")
ALIASES = {"recordings": "appmaps"}
_RECORDING = {"branch", "commit", "since", "until"}
SUPPORTED: dict[str, set[str]] = {
    "appmaps": {"route", "status", "duration", "class", "method", "table"} | _RECORDING,
    "requests": {"route", "method", "status", "duration", "table"} | _RECORDING,
    "queries": {"route", "status", "duration", "class", "method", "table"} | _RECORDING,
    "calls": {"class", "method", "duration"} | _RECORDING,
    "exceptions": {"route", "status", "class", "method"} | _RECORDING,
    "logs": {"route", "status", "class", "method"} | _RECORDING,
}


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def fts_query(text: str, *, any_term: bool = False) -> str:
    """User words as an FTS5 query of quoted prefix terms (user input cannot be FTS syntax)."""
    terms = [t for t in text.replace('"', " ").split() if t]
    if not terms:
        raise UsageError("empty search text")
    return (" OR " if any_term else " ").join(f'"{t}"*' for t in terms)


def function_ids(f: Filters) -> Clause | None:
    """`IN (…)` subquery of function code objects matching the class/method filters."""
    parts: list[Clause] = [("type = 'function'", ())]
    if f.class_ is not None:
        parts.append(f.class_.sql("class_name", "class_id"))
    if f.method is not None:
        parts.append(f.method.sql("method"))
    if len(parts) == 1:
        return None
    sql, params = where(parts)
    return f"SELECT id FROM code_objects{sql}", params


def _check(type_: str, f: Filters) -> None:
    extra = [name for name in f.given() if name not in SUPPORTED[type_]]
    if extra:
        allowed = ", ".join(f"--{n}" for n in sorted(SUPPORTED[type_]))
        bad = ", ".join(f"--{n}" for n in extra)
        raise UsageError(f"{bad} does not apply to `find {type_}` (it takes {allowed})")


def normalize_type(type_: str) -> str:
    t = ALIASES.get(type_.lower(), type_.lower())
    if t not in TYPES:
        raise UsageError(f"unknown type {type_!r}: use one of {', '.join(TYPES)} (or recordings)")
    return t


def _request_clauses(f: Filters, alias: str = "h") -> list[Clause]:
    out = route_clauses(f.route, alias) if f.route is not None else []
    if f.status is not None:
        out.append(f.status.sql(f"{alias}.status"))
    return out


def _rjoin(f: Filters) -> str:
    """Without recording filters the child table drives the query (its indexes give the order);
    with them the planner may start from the few matching recordings."""
    return "JOIN" if recording_clauses(f) else "CROSS JOIN"


def _run(db: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    cur = db.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


@gc_paused_call
def find(db: sqlite3.Connection, type_: str, filters: Filters = Filters()) -> list[dict[str, Any]]:
    """Rows of `type_` matching `filters` (see module doc)."""
    t = normalize_type(type_)
    _check(t, filters)
    limit = filters.limit or DEFAULT_LIMIT
    return {
        "appmaps": _appmaps,
        "requests": _requests,
        "queries": _queries,
        "calls": _calls,
        "exceptions": _exceptions,
        "logs": _logs,
    }[t](db, filters, limit)


def _appmaps(db: sqlite3.Connection, f: Filters, limit: int) -> list[dict[str, Any]]:
    clauses = recording_clauses(f)
    req = _request_clauses(f)
    if req:
        sql, params = where([("h.recording_id = r.id", ()), *req])
        clauses.append((f"EXISTS (SELECT 1 FROM http_requests h{sql})", params))
    if f.duration is not None:
        clauses.append(f.duration.sql("r.elapsed_ms"))
    funcs = function_ids(f)
    if funcs is not None:
        clauses.append(
            (
                "r.id IN (SELECT recording_id FROM recording_code_objects "
                f"WHERE code_object_id IN ({funcs[0]}))",
                funcs[1],
            )
        )
    if f.table is not None:
        clauses.append(
            (
                "r.id IN (SELECT rc.recording_id FROM recording_code_objects rc "
                "JOIN code_objects co ON co.id = rc.code_object_id WHERE co.fqid = ?)",
                (f"table:{f.table}",),
            )
        )
    order = "r.recorded_at DESC, r.path"
    source = "recordings r"
    match: tuple[Any, ...] = ()
    if f.text:
        source = "recordings r JOIN recordings_fts s ON s.rowid = r.id AND recordings_fts MATCH ?"
        match = (fts_query(f.text),)
        order = "s.rank, r.path"
    sql, where_params = where(clauses)
    rows = _run(
        db,
        "SELECT r.path AS recording, r.name, r.test_status, r.recorder_type AS recorder, "
        "r.branch, r.git_commit AS 'commit', r.recorded_at, r.requests, r.queries, "
        "r.exceptions, round(r.elapsed_ms, 3) AS elapsed_ms, r.labels "
        f"FROM {source}{sql} ORDER BY {order} LIMIT ?",
        (*match, *where_params, limit),
    )
    for row in rows:
        row["recorded_at"] = iso(row["recorded_at"])
        row["labels"] = orjson.loads(row["labels"] or "[]")
    return rows


def _requests(db: sqlite3.Connection, f: Filters, limit: int) -> list[dict[str, Any]]:
    clauses = [*recording_clauses(f), *_request_clauses(f)]
    if f.method is not None:
        clauses.append(NameFilter(f.method.value.upper(), f.method.glob).sql("h.method"))
    if f.duration is not None:
        clauses.append(f.duration.sql("h.duration_ms"))
    if f.table is not None:
        clauses.append(
            (
                "EXISTS (SELECT 1 FROM sql_queries q JOIN query_tables qt "
                "ON qt.code_object_id = q.code_object_id AND qt.name = ? "
                "WHERE q.recording_id = h.recording_id AND q.request_event_id = h.event_id)",
                (f.table,),
            )
        )
    if f.text:
        clauses.append(
            ("(h.path LIKE ? ESCAPE '\\' OR h.route LIKE ? ESCAPE '\\')", (_like(f.text),) * 2)
        )
    sql, params = where(clauses)
    return _run(
        db,
        "SELECT r.path AS recording, h.event_id, h.method, h.route, h.path, h.status, "
        "round(h.duration_ms, 3) AS duration_ms, h.sql_count, round(h.sql_ms, 3) AS sql_ms "
        f"FROM http_requests h {_rjoin(f)} recordings r ON r.id = h.recording_id"
        f"{sql} ORDER BY h.duration_ms DESC, h.id LIMIT ?",
        (*params, limit),
    )


def _in_request(f: Filters, alias: str) -> tuple[str, list[Clause]]:
    """Join to the enclosing request; inner when a request filter is given."""
    req = _request_clauses(f)
    kind = "JOIN" if req else "LEFT JOIN"
    join = (
        f" {kind} http_requests h ON h.recording_id = {alias}.recording_id "
        f"AND h.event_id = {alias}.request_event_id"
    )
    return join, req


def _caller_clause(f: Filters, column: str) -> list[Clause]:
    funcs = function_ids(f)
    return [] if funcs is None else [(f"{column} IN ({funcs[0]})", funcs[1])]


def _queries(db: sqlite3.Connection, f: Filters, limit: int) -> list[dict[str, Any]]:
    # Two steps: pick the ids with only the joins the filters need (the planner can then use
    # the narrow covering indexes), then fetch the display columns of those few rows.
    clauses = recording_clauses(f)
    joins = " JOIN recordings r ON r.id = q.recording_id" if clauses else ""
    request = _request_clauses(f)
    if request:
        joins += (
            " JOIN http_requests h ON h.recording_id = q.recording_id "
            "AND h.event_id = q.request_event_id"
        )
        clauses += request
    clauses += _caller_clause(f, "q.caller_id")
    if f.duration is not None:
        clauses.append(f.duration.sql("q.duration_ms"))
    if f.table is not None:
        clauses.append(
            (
                "q.code_object_id IN (SELECT code_object_id FROM query_tables WHERE name = ?)",
                (f.table,),
            )
        )
    if f.text:
        joins += " JOIN code_objects co ON co.id = q.code_object_id"
        clauses.append(("co.name LIKE ? ESCAPE '\\'", (_like(f.text),)))
    sql, params = where(clauses)
    ids = [
        row[0]
        for row in db.execute(
            f"SELECT q.id FROM sql_queries q{joins}{sql} ORDER BY q.duration_ms DESC, q.id LIMIT ?",
            (*params, limit),
        )
    ]
    if not ids:
        return []
    rows = _run(
        db,
        "SELECT q.id AS _id, r.path AS recording, q.event_id, co.name AS sql, co.tables, "
        "round(q.duration_ms, 3) AS duration_ms, substr(caller.fqid, 10) AS caller, "
        "h.method AS request_method, h.route "
        "FROM sql_queries q JOIN recordings r ON r.id = q.recording_id "
        "JOIN code_objects co ON co.id = q.code_object_id "
        "LEFT JOIN code_objects caller ON caller.id = q.caller_id "
        "LEFT JOIN http_requests h ON h.recording_id = q.recording_id "
        "AND h.event_id = q.request_event_id "
        f"WHERE q.id IN ({', '.join('?' for _ in ids)})",
        tuple(ids),
    )
    order = {qid: i for i, qid in enumerate(ids)}
    rows.sort(key=lambda row: order[row["_id"]])
    for row in rows:
        del row["_id"]
    return rows


def _calls(db: sqlite3.Connection, f: Filters, limit: int) -> list[dict[str, Any]]:
    clauses = [*recording_clauses(f), *_caller_clause(f, "fc.code_object_id")]
    if f.duration is not None:
        clauses.append(f.duration.sql("fc.max_ms"))
    if f.text:
        clauses.append(("co.fqid LIKE ? ESCAPE '\\'", (_like(f.text),)))
    sql, params = where(clauses)
    return _run(
        db,
        "SELECT r.path AS recording, substr(co.fqid, 10) AS function, co.class_name AS class, "
        "co.method, co.location, fc.count, round(fc.total_ms, 3) AS total_ms, "
        "round(fc.self_ms, 3) AS self_ms, round(fc.max_ms, 3) AS max_ms "
        f"FROM function_calls fc {_rjoin(f)} recordings r ON r.id = fc.recording_id "
        f"JOIN code_objects co ON co.id = fc.code_object_id{sql} "
        "ORDER BY fc.total_ms DESC, fc.rowid LIMIT ?",
        (*params, limit),
    )


def _exceptions(db: sqlite3.Connection, f: Filters, limit: int) -> list[dict[str, Any]]:
    join, clauses = _in_request(f, "e")
    clauses += recording_clauses(f)
    if f.class_ is not None:
        clauses.append(f.class_.sql("e.class"))
    if f.method is not None:
        method_only = Filters(method=f.method)
        clauses += _caller_clause(method_only, "e.function_id")
    if f.text:
        clauses.append(("e.message LIKE ? ESCAPE '\\'", (_like(f.text),)))
    sql, params = where(clauses)
    return _run(
        db,
        "SELECT r.path AS recording, e.event_id, e.class, e.message, e.location, "
        "substr(fn.fqid, 10) AS function, h.method AS request_method, h.route "
        f"FROM exceptions e {_rjoin(f)} recordings r ON r.id = e.recording_id "
        f"LEFT JOIN code_objects fn ON fn.id = e.function_id{join}"
        f"{sql} ORDER BY r.path, e.event_id, e.id LIMIT ?",
        (*params, limit),
    )


def _logs(db: sqlite3.Connection, f: Filters, limit: int) -> list[dict[str, Any]]:
    join, clauses = _in_request(f, "l")
    clauses += recording_clauses(f)
    clauses += _caller_clause(f, "l.caller_id")
    if f.text:
        clauses.append(("l.message LIKE ? ESCAPE '\\'", (_like(f.text),)))
    sql, params = where(clauses)
    return _run(
        db,
        "SELECT r.path AS recording, l.event_id, l.level, l.message, "
        "substr(caller.fqid, 10) AS caller, h.method AS request_method, h.route "
        f"FROM log_messages l {_rjoin(f)} recordings r ON r.id = l.recording_id "
        f"LEFT JOIN code_objects caller ON caller.id = l.caller_id{join}"
        f"{sql} ORDER BY r.path, l.event_id LIMIT ?",
        (*params, limit),
    )


def hints(db: sqlite3.Connection, f: Filters) -> list[str]:
    """When a search found nothing: "did you mean" lines for its --route and --class values,
    from the routes and classes the index holds (`tracetool.identifiers.closest`)."""
    from tracetool import identifiers

    out: list[str] = []
    route = f.route
    if route is not None and route.pattern is not None and not route.glob:
        known = [
            f"{m} {r}" for m, r in db.execute("SELECT DISTINCT method, route FROM http_requests")
        ]
        typed = f"{route.method} {route.pattern}" if route.method else route.pattern
        near = identifiers.closest(typed, known) or identifiers.closest(route.pattern, known)
        if near:
            out.append(f"--route {route.text!r}: did you mean: {', '.join(near)}?")
    if f.class_ is not None and not f.class_.glob:
        known = [
            str(r[0])
            for r in db.execute(
                "SELECT DISTINCT class_id FROM code_objects WHERE class_id IS NOT NULL"
            )
        ]
        near = identifiers.closest(f.class_.value, known)
        if near:
            out.append(f"--class {f.class_.value!r}: did you mean: {', '.join(near)}?")
    return out


@gc_paused_call
def search(db: sqlite3.Connection, text: str, limit: int = 10) -> list[dict[str, Any]]:
    """Recordings ranked by full-text relevance to any of the words in `text` (bm25)."""
    rows = _run(
        db,
        "SELECT r.path AS recording, r.name, -s.rank AS score FROM recordings_fts s "
        "JOIN recordings r ON r.id = s.rowid WHERE recordings_fts MATCH ? "
        "ORDER BY s.rank, r.path LIMIT ?",
        (fts_query(text, any_term=True), limit),
    )
    return rows
