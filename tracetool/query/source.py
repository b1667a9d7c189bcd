"""Recorded functions by source file: what an editor shows next to the code.

The agent names a function's source as `location = "<path>:<lineno>"`, `path` relative to the
project root (absolute when outside it) and `lineno` the function's `co_firstlineno` (its first
decorator line when decorated). These functions read query.db by that location:

- `functions_in_file(db, paths)` — one row per recorded function whose location is in one of
  `paths`: fqid, name, class, method, path, lineno, count, recordings, total_ms, self_ms, max_ms,
  avg_ms and p50_ms; ordered by line;
- `function_detail(db, fqid, top=5)` — the same figures for one function plus its
  `top_recordings` (most time first), the SQL `queries` it issued itself and the `exceptions`
  that left it;
- `function_recordings(db, fqid, limit=100)` — the recordings that called it (most time first);
- `function_exceptions(db, fqids)` — exceptions that left these functions, grouped by function,
  class and raise location;
- `repeated_queries(db, fqids, threshold=10)` — N+1 patterns: one normalized query issued by the
  function `threshold` times or more within one HTTP request (or one recording without
  requests);
- `slow_queries(db, fqids, threshold_ms=100)` — queries issued by these functions that took
  `threshold_ms` or more at least once: function, sql, count (slow runs), max_ms, recording;
- `function_tests(db, fqid, limit=20)` — the test recordings that reach the function: recording,
  name, test_status, source_location (the test), count. `function_detail` includes them as
  `tests`.

The index keeps per recording a function's call count and total time, not each call's time, so
`p50_ms` is the median of the per-recording mean call times weighted by their call counts: exact
when each recording calls the function once (a request handler, a test's subject), an estimate
otherwise. A function may be spelled any way `tracetool.identifiers` accepts (`a.b.C.m` for
`function:a/b/C#m`); unknown ones raise `NotFoundError` saying "did you mean …".
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from tracetool.errors import NotFoundError
from tracetool.query.db import round_ms
from tracetool.trace import gc_paused_call

DEFAULT_TOP = 5
DEFAULT_THRESHOLD = 10


def split_location(location: str | None) -> tuple[str, int | None]:
    """`"app/models.py:12"` → (`"app/models.py"`, 12); a location without a line → (it, None)."""
    if not location:
        return "", None
    path, sep, line = location.rpartition(":")
    if sep and line.isdigit():
        return path, int(line)
    return location, None


def _in(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


def _p50(db: sqlite3.Connection, ids: Sequence[int]) -> dict[int, float]:
    """Weighted median of per-recording mean call times (module doc), by code object id."""
    if not ids:
        return {}
    # The first row (in mean order) whose running call count reaches half of all calls; SQLite
    # returns the bare `mean` column of the row that gives min(cum).
    rows = db.execute(
        "SELECT id, mean, min(cum) FROM ("
        " SELECT code_object_id AS id, total_ms / count AS mean,"
        "  sum(count) OVER (PARTITION BY code_object_id ORDER BY total_ms / count"
        "   ROWS UNBOUNDED PRECEDING) AS cum,"
        "  sum(count) OVER (PARTITION BY code_object_id) AS n"
        f" FROM function_calls WHERE code_object_id IN ({_in(ids)}) AND count > 0"
        ") WHERE 2 * cum >= n GROUP BY id",
        tuple(ids),
    ).fetchall()
    return {int(r[0]): float(r[1]) for r in rows}


_STATS = (
    "SELECT co.id, co.fqid, co.class_name, co.method, co.location, sum(fc.count), "
    "count(fc.recording_id), sum(fc.total_ms), sum(fc.self_ms), max(fc.max_ms) "
    "FROM code_objects co JOIN function_calls fc ON fc.code_object_id = co.id"
)


def _rows(db: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    found = db.execute(
        f"{_STATS} WHERE co.type = 'function' AND ({where}) GROUP BY co.id", params
    ).fetchall()
    p50 = _p50(db, [r[0] for r in found])
    out = []
    for cid, fqid, class_name, method, location, count, n_rec, total, self_ms, max_ms in found:
        path, line = split_location(location)
        out.append(
            {
                "fqid": fqid,
                "name": fqid.split(":", 1)[-1],
                "class": class_name,
                "method": method,
                "location": location,
                "path": path,
                "lineno": line,
                "count": count,
                "recordings": n_rec,
                "total_ms": round_ms(total),
                "self_ms": round_ms(self_ms),
                "max_ms": round_ms(max_ms),
                "avg_ms": round_ms(total / count) if count else None,
                "p50_ms": round_ms(p50.get(cid)),
            }
        )
    return out


@gc_paused_call
def functions_in_file(db: sqlite3.Connection, paths: Iterable[str]) -> list[dict[str, Any]]:
    """Recorded functions whose location lies in one of `paths` (as the agent writes them)."""
    wanted = [p for p in dict.fromkeys(paths) if p]
    if not wanted:
        return []
    # "<path>:" <= location < "<path>;" selects exactly the locations starting with "<path>:"
    # (';' follows ':' in every collation) without LIKE/GLOB escaping.
    where = " OR ".join("(co.location >= ? AND co.location < ?)" for _ in wanted)
    params = tuple(x for p in wanted for x in (f"{p}:", f"{p};"))
    rows = [r for r in _rows(db, where, params) if r["path"] in wanted]
    rows.sort(key=lambda r: (r["path"], r["lineno"] or 0, r["fqid"]))
    return rows


def _function_id(db: sqlite3.Connection, fqid: str) -> int:
    return _resolve_function(db, fqid)[0]


def _resolve_function(db: sqlite3.Connection, fqid: str) -> tuple[int, str]:
    """(code object id, fqid as recorded) of a function of a function, spelled any way `tracetool.identifiers` accepts
    (`function:a/b/C#m`, `a.b.C.m`, `a/b.f`); not found → `NotFoundError` with suggestions."""
    from tracetool import identifiers

    row = db.execute(
        "SELECT id FROM code_objects WHERE fqid = ? AND type = 'function'", (fqid,)
    ).fetchone()
    if row is not None:
        return int(row[0]), fqid
    ident = fqid[len("function:") :] if fqid.startswith("function:") else fqid
    name = identifiers.last_name(ident)
    rows = db.execute(
        "SELECT id, fqid FROM code_objects WHERE type = 'function' AND method = ?", (name,)
    ).fetchall()
    found = identifiers.matches(ident, [str(r[1])[len("function:") :] for r in rows])
    if found:
        canonical = "function:" + found[0]
        return next(int(r[0]) for r in rows if str(r[1]) == canonical), canonical
    known = [
        str(r[0])
        for r in db.execute("SELECT fqid FROM code_objects WHERE type = 'function' LIMIT 100000")
    ]
    hint = identifiers.did_you_mean("function:" + ident, known)
    raise NotFoundError(f"{fqid}: no such recorded function in the index{hint}")


@gc_paused_call
def function_recordings(
    db: sqlite3.Connection, fqid: str, limit: int = 100
) -> list[dict[str, Any]]:
    """The recordings that called `fqid`, most time spent in it first."""
    cid = _function_id(db, fqid)
    rows = db.execute(
        "SELECT r.path, r.name, r.test_status, r.branch, fc.count, fc.total_ms, fc.self_ms, "
        "fc.max_ms FROM function_calls fc JOIN recordings r ON r.id = fc.recording_id "
        "WHERE fc.code_object_id = ? ORDER BY fc.total_ms DESC, r.path LIMIT ?",
        (cid, limit),
    ).fetchall()
    return [
        {
            "recording": path,
            "name": name,
            "test_status": status,
            "branch": branch,
            "count": count,
            "total_ms": round_ms(total),
            "self_ms": round_ms(own),
            "max_ms": round_ms(top),
        }
        for path, name, status, branch, count, total, own, top in rows
    ]


@gc_paused_call
def function_exceptions(db: sqlite3.Connection, fqids: Iterable[str]) -> list[dict[str, Any]]:
    """Exceptions that left these functions: one row per (function, class, location)."""
    wanted = list(dict.fromkeys(fqids))
    if not wanted:
        return []
    # max(e.id) picks the latest message of each group (bare column with max()).
    rows = db.execute(
        "SELECT co.fqid, e.class, e.location, e.message, max(e.id), count(*), "
        "count(DISTINCT e.recording_id) FROM exceptions e "
        "JOIN code_objects co ON co.id = e.function_id "
        f"WHERE co.fqid IN ({_in(wanted)}) GROUP BY co.fqid, e.class, e.location "
        "ORDER BY co.fqid, count(*) DESC, e.class",
        tuple(wanted),
    ).fetchall()
    return [
        {
            "function": fqid,
            "class": cls,
            "location": location,
            "message": message,
            "count": count,
            "recordings": n_rec,
        }
        for fqid, cls, location, message, _, count, n_rec in rows
    ]


@gc_paused_call
def repeated_queries(
    db: sqlite3.Connection, fqids: Iterable[str], threshold: int = DEFAULT_THRESHOLD
) -> list[dict[str, Any]]:
    """N+1 patterns issued by these functions (module doc), worst first per function.

    Rows: function, sql, max_count (most executions within one request), requests (how many
    requests or recordings showed the pattern), recording (where max_count was seen),
    in_request (False: a recording without HTTP requests), route (of that request, if any).
    """
    wanted = list(dict.fromkeys(fqids))
    if not wanted or threshold < 1:
        return []
    groups = db.execute(
        "SELECT co.fqid, q.code_object_id, q.recording_id, q.request_event_id, count(*) AS n "
        "FROM sql_queries q JOIN code_objects co ON co.id = q.caller_id "
        f"WHERE co.fqid IN ({_in(wanted)}) "
        "GROUP BY q.caller_id, q.code_object_id, q.recording_id, q.request_event_id "
        "HAVING n >= ? ORDER BY n DESC",
        (*wanted, threshold),
    ).fetchall()
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for fqid, query_id, recording_id, request_id, n in groups:
        row = found.get((fqid, query_id))
        if row is None:
            found[(fqid, query_id)] = {
                "function": fqid,
                "query_id": query_id,
                "max_count": n,
                "requests": 1,
                "recording_id": recording_id,
                "request_event_id": request_id,
            }
        else:
            row["requests"] += 1
    out = []
    for row in found.values():
        sql = db.execute(
            "SELECT name FROM code_objects WHERE id = ?", (row.pop("query_id"),)
        ).fetchone()
        rec = db.execute(
            "SELECT path FROM recordings WHERE id = ?", (row.pop("recording_id"),)
        ).fetchone()
        request_id = row.pop("request_event_id")
        route = None
        if request_id is not None and rec is not None:
            req = db.execute(
                "SELECT h.method, h.route FROM http_requests h JOIN recordings r "
                "ON r.id = h.recording_id WHERE r.path = ? AND h.event_id = ?",
                (rec[0], request_id),
            ).fetchone()
            route = f"{req[0]} {req[1]}" if req is not None else None
        out.append(
            {
                **row,
                "in_request": request_id is not None,
                "sql": sql[0] if sql else "?",
                "recording": rec[0] if rec else None,
                "route": route,
            }
        )
    out.sort(key=lambda r: (r["function"], -r["max_count"], r["sql"]))
    return out


@gc_paused_call
def function_detail(db: sqlite3.Connection, fqid: str, top: int = DEFAULT_TOP) -> dict[str, Any]:
    """Figures, top recordings, own SQL and exceptions of one recorded function."""
    cid, fqid = _resolve_function(db, fqid)
    rows = _rows(db, "co.id = ?", (cid,))
    if not rows:
        raise NotFoundError(f"{fqid}: the function has no recorded calls in the index")
    detail = rows[0]
    detail["top_recordings"] = function_recordings(db, fqid, limit=top)
    queries = db.execute(
        "SELECT co.name, count(*), sum(q.duration_ms), count(DISTINCT q.recording_id) "
        "FROM sql_queries q JOIN code_objects co ON co.id = q.code_object_id "
        "WHERE q.caller_id = ? GROUP BY q.code_object_id "
        "ORDER BY sum(q.duration_ms) DESC, count(*) DESC, co.name LIMIT ?",
        (cid, top),
    ).fetchall()
    detail["queries"] = [
        {"sql": sql, "count": n, "total_ms": round_ms(ms), "recordings": n_rec}
        for sql, n, ms, n_rec in queries
    ]
    detail["exceptions"] = function_exceptions(db, [fqid])[:top]
    detail["tests"] = function_tests(db, fqid, limit=max(top, 1) * 2)
    return detail


DEFAULT_SLOW_MS = 100.0
TEST_RECORDERS = ("test", "tests")


@gc_paused_call
def function_tests(db: sqlite3.Connection, fqid: str, limit: int = 20) -> list[dict[str, Any]]:
    """Test recordings that called `fqid` (failed ones first, then by name)."""
    cid = _function_id(db, fqid)
    rows = db.execute(
        "SELECT r.path, r.name, r.test_status, r.source_location, fc.count "
        "FROM function_calls fc JOIN recordings r ON r.id = fc.recording_id "
        f"WHERE fc.code_object_id = ? AND r.recorder_type IN ({_in(TEST_RECORDERS)}) "
        "ORDER BY r.test_status = 'failed' DESC, r.name, r.path LIMIT ?",
        (cid, *TEST_RECORDERS, limit),
    ).fetchall()
    return [
        {
            "recording": path,
            "name": name,
            "test_status": status,
            "source_location": location,
            "count": count,
        }
        for path, name, status, location, count in rows
    ]


@gc_paused_call
def slow_queries(
    db: sqlite3.Connection, fqids: Iterable[str], threshold_ms: float = DEFAULT_SLOW_MS
) -> list[dict[str, Any]]:
    """Queries these functions issued that took `threshold_ms` or more (slowest first)."""
    wanted = list(dict.fromkeys(fqids))
    if not wanted or threshold_ms <= 0:
        return []
    # max(q.duration_ms) makes the bare r.path column the recording of the slowest run.
    rows = db.execute(
        "SELECT caller.fqid, co.name, count(*), max(q.duration_ms), r.path "
        "FROM sql_queries q JOIN code_objects caller ON caller.id = q.caller_id "
        "JOIN code_objects co ON co.id = q.code_object_id "
        "JOIN recordings r ON r.id = q.recording_id "
        f"WHERE caller.fqid IN ({_in(wanted)}) AND q.duration_ms >= ? "
        "GROUP BY q.caller_id, q.code_object_id ORDER BY caller.fqid, max(q.duration_ms) DESC",
        (*wanted, threshold_ms),
    ).fetchall()
    return [
        {"function": fqid, "sql": sql, "count": n, "max_ms": round_ms(ms), "recording": rec}
        for fqid, sql, n, ms, rec in rows
    ]
