"""`hotspots`: functions or SQL queries ranked by cumulative elapsed time over all recordings.

For functions, `total_ms` counts a recursive function once per outermost call and `self_ms`
excludes time spent in callees; for queries both are the query's own time. Each row says how
many recordings the hotspot appears in and names the (up to) three recordings where it cost
the most.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from tracetool.errors import UsageError
from tracetool.query.db import round_ms
from tracetool.query.filters import Clause, Filters, recording_clauses, route_clauses, where
from tracetool.query.find import function_ids
from tracetool.trace import gc_paused_call

KINDS = ("functions", "queries")
SORTS = ("total", "self")
DEFAULT_LIMIT = 20
_RECORDING = {"branch", "commit", "since", "until"}
_ALLOWED = {
    "functions": {"class", "method"} | _RECORDING,
    "queries": {"class", "method", "table", "route", "status"} | _RECORDING,
}
TOP_RECORDINGS = 3


@gc_paused_call
def hotspots(
    db: sqlite3.Connection,
    kind: str = "functions",
    filters: Filters = Filters(),
    *,
    sort: str = "total",
) -> list[dict[str, Any]]:
    """The top `filters.limit` (default 20) functions or queries by `sort` time."""
    if kind not in KINDS:
        raise UsageError(f"unknown hotspot kind {kind!r}: use {' or '.join(KINDS)}")
    if sort not in SORTS:
        raise UsageError(f"unknown sort {sort!r}: use {' or '.join(SORTS)}")
    extra = [n for n in filters.given() if n not in _ALLOWED[kind]]
    if extra:
        allowed = ", ".join("--" + n for n in sorted(_ALLOWED[kind]))
        raise UsageError(
            f"{', '.join('--' + n for n in extra)} does not apply to `hotspots --by {kind}` "
            f"(it takes {allowed})"
        )
    limit = filters.limit or DEFAULT_LIMIT
    if kind == "functions":
        return _functions(db, filters, sort, limit)
    return _queries(db, filters, limit)


def _functions(db: sqlite3.Connection, f: Filters, sort: str, limit: int) -> list[dict[str, Any]]:
    clauses = recording_clauses(f)
    join = " JOIN recordings r ON r.id = fc.recording_id" if clauses else ""
    funcs = function_ids(f)
    if funcs is not None:
        clauses.append((f"fc.code_object_id IN ({funcs[0]})", funcs[1]))
    sql, params = where(clauses)
    order = "total_ms" if sort == "total" else "self_ms"
    rows = db.execute(
        "SELECT fc.code_object_id, sum(fc.count), sum(fc.total_ms) AS total_ms, "
        "sum(fc.self_ms) AS self_ms, max(fc.max_ms), count(*) "
        f"FROM function_calls fc{join}{sql} GROUP BY fc.code_object_id "
        f"ORDER BY {order} DESC, fc.code_object_id LIMIT ?",
        (*params, limit),
    ).fetchall()
    top_where, top_params = where([*clauses, ("fc.code_object_id = ?", ())])
    top_sql = (
        "SELECT r.path FROM function_calls fc JOIN recordings r ON r.id = fc.recording_id"
        f"{top_where} ORDER BY fc.total_ms DESC, r.path LIMIT {TOP_RECORDINGS}"
    )
    out = []
    for cid, count, total, self_ms, max_ms, n_rec in rows:
        co = db.execute(
            "SELECT fqid, class_name, method, location FROM code_objects WHERE id = ?", (cid,)
        ).fetchone()
        top = [r[0] for r in db.execute(top_sql, (*top_params, cid))]
        out.append(
            {
                "kind": "function",
                "name": co[0].split(":", 1)[1],
                "class": co[1],
                "method": co[2],
                "location": co[3],
                "count": count,
                "total_ms": round_ms(total),
                "self_ms": round_ms(self_ms),
                "avg_ms": round_ms(total / count) if count else None,
                "max_ms": round_ms(max_ms),
                "recordings": n_rec,
                "top_recordings": top,
            }
        )
    return out


def _queries(db: sqlite3.Connection, f: Filters, limit: int) -> list[dict[str, Any]]:
    clauses = recording_clauses(f)
    join = " JOIN recordings r ON r.id = q.recording_id" if clauses else ""
    funcs = function_ids(f)
    if funcs is not None:
        clauses.append((f"q.caller_id IN ({funcs[0]})", funcs[1]))
    if f.table is not None:
        clauses.append(
            (
                "q.code_object_id IN (SELECT code_object_id FROM query_tables WHERE name = ?)",
                (f.table,),
            )
        )
    request: list[Clause] = route_clauses(f.route) if f.route is not None else []
    if f.status is not None:
        request.append(f.status.sql("h.status"))
    request_join = ""
    if request:
        request_join = (
            " JOIN http_requests h ON h.recording_id = q.recording_id "
            "AND h.event_id = q.request_event_id"
        )
        clauses += request
    sql, params = where(clauses)
    rows = db.execute(
        "SELECT q.code_object_id, count(*), sum(q.duration_ms) AS total_ms, max(q.duration_ms) "
        f"FROM sql_queries q{join}{request_join}{sql} "
        "GROUP BY q.code_object_id ORDER BY total_ms DESC, q.code_object_id LIMIT ?",
        (*params, limit),
    ).fetchall()
    top_where, top_params = where([*clauses, ("q.code_object_id = ?", ())])
    per_recording = (
        "SELECT r.path, sum(q.duration_ms) AS ms FROM sql_queries q "
        f"JOIN recordings r ON r.id = q.recording_id{request_join}{top_where} "
        "GROUP BY q.recording_id ORDER BY ms DESC, r.path"
    )
    out = []
    for cid, count, total, max_ms in rows:
        co = db.execute("SELECT name, tables FROM code_objects WHERE id = ?", (cid,)).fetchone()
        recordings = [r[0] for r in db.execute(per_recording, (*top_params, cid))]
        total = total or 0.0
        out.append(
            {
                "kind": "query",
                "name": co[0],
                "tables": co[1],
                "count": count,
                "total_ms": round_ms(total),
                "self_ms": round_ms(total),
                "avg_ms": round_ms(total / count) if count else None,
                "max_ms": None if max_ms is None else round_ms(max_ms),
                "recordings": len(recordings),
                "top_recordings": recordings[:TOP_RECORDINGS],
            }
        )
    return out
