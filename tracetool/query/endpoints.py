"""Per-route latency: `endpoints` (one row per route) and `compare` (two branches side by side).

Routes are `(method, template)` pairs as indexed (`GET /users/{id}`). Percentiles use the
nearest-rank method on the request durations (p50 of [10, 20, 30, 40] is 20), so every value
shown is a real request's duration. Requests without a recorded duration count towards `count`
and the status mix but not towards percentiles.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from typing import Any

from tracetool.errors import NotFoundError, UsageError
from tracetool.query.db import round_ms
from tracetool.query.filters import Clause, Filters, recording_clauses, route_clauses, where
from tracetool.trace import gc_paused_call


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of already sorted values; None when empty."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


def _request_rows(db: sqlite3.Connection, f: Filters, allowed: set[str], verb: str) -> list[Any]:
    extra = [n for n in f.given() if n not in allowed]
    if extra:
        raise UsageError(
            f"{', '.join('--' + n for n in extra)} does not apply to `{verb}` "
            f"(it takes {', '.join('--' + n for n in sorted(allowed))})"
        )
    clauses: list[Clause] = recording_clauses(f)
    if f.route is not None:
        clauses += route_clauses(f.route)
    if f.status is not None:
        clauses.append(f.status.sql("h.status"))
    if f.duration is not None:
        clauses.append(f.duration.sql("h.duration_ms"))
    join = " JOIN recordings r ON r.id = h.recording_id" if recording_clauses(f) else ""
    sql, params = where(clauses)
    return db.execute(
        f"SELECT h.method, h.route, h.status, h.duration_ms, h.sql_count FROM http_requests h"
        f"{join}{sql}",
        params,
    ).fetchall()


def _summary(rows: list[Any]) -> dict[str, Any]:
    durations = sorted(r[3] for r in rows if r[3] is not None)
    statuses: dict[str, int] = {}
    for r in rows:
        key = "none" if r[2] is None else str(r[2])
        statuses[key] = statuses.get(key, 0) + 1
    return {
        "count": len(rows),
        "statuses": dict(sorted(statuses.items())),
        "p50_ms": round_ms(percentile(durations, 50)),
        "p95_ms": round_ms(percentile(durations, 95)),
        "max_ms": round_ms(durations[-1] if durations else None),
        "sql_per_request": round(sum(r[4] for r in rows) / len(rows), 2),
    }


def _by_route(rows: list[Any]) -> dict[tuple[str, str], list[Any]]:
    groups: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        groups.setdefault((row[1], row[0]), []).append(row)
    return groups


_ENDPOINT_FILTERS = {"route", "status", "duration", "branch", "commit", "since", "until"}


@gc_paused_call
def endpoints(db: sqlite3.Connection, filters: Filters = Filters()) -> list[dict[str, Any]]:
    """One row per route: method, route, count, status mix, p50/p95/max ms, SQL per request."""
    groups = _by_route(_request_rows(db, filters, _ENDPOINT_FILTERS, "endpoints"))
    out = []
    for (route, method), rows in sorted(groups.items()):
        out.append({"method": method, "route": route, **_summary(rows)})
    if filters.limit:
        out = out[: filters.limit]
    return out


def _branch_rows(db: sqlite3.Connection, branch: str, f: Filters) -> list[Any]:
    rows = _request_rows(
        db,
        Filters(route=f.route, status=f.status, since=f.since, until=f.until, branch=branch),
        _ENDPOINT_FILTERS,
        "compare",
    )
    if not rows:
        exists = db.execute("SELECT 1 FROM recordings WHERE branch = ? LIMIT 1", (branch,))
        if exists.fetchone() is None:
            known = [
                r[0]
                for r in db.execute(
                    "SELECT DISTINCT branch FROM recordings WHERE branch IS NOT NULL ORDER BY 1"
                )
            ]
            listed = ", ".join(known[:10]) or "none"
            raise NotFoundError(f"no indexed recordings on branch {branch!r} (branches: {listed})")
    return rows


@gc_paused_call
def compare(
    db: sqlite3.Connection, branch_a: str, branch_b: str, filters: Filters = Filters()
) -> list[dict[str, Any]]:
    """Per-route latency of `branch_b` against `branch_a`.

    Rows with both sides come first, the largest p95 increase first; then routes only on one
    side (`only` = "a" or "b"). Deltas are b − a in milliseconds and percent of a.
    """
    if filters.branch or filters.commit or filters.duration or filters.class_ or filters.method:
        raise UsageError("compare takes --route, --status, --since and --until filters only")
    a = _by_route(_branch_rows(db, branch_a, filters))
    b = _by_route(_branch_rows(db, branch_b, filters))
    both: list[dict[str, Any]] = []
    one_sided: list[dict[str, Any]] = []
    for key in sorted(set(a) | set(b)):
        route, method = key
        sa = _summary(a[key]) if key in a else None
        sb = _summary(b[key]) if key in b else None
        row: dict[str, Any] = {"method": method, "route": route}
        for side, s in (("a", sa), ("b", sb)):
            row[f"count_{side}"] = s["count"] if s else 0
            row[f"p50_{side}_ms"] = s["p50_ms"] if s else None
            row[f"p95_{side}_ms"] = s["p95_ms"] if s else None
        if sa and sb:
            for q in ("p50", "p95"):
                va, vb = sa[f"{q}_ms"], sb[f"{q}_ms"]
                delta = None if va is None or vb is None else round_ms(vb - va)
                row[f"delta_{q}_ms"] = delta
                row[f"delta_{q}_pct"] = (
                    round(100.0 * delta / va, 1) if delta is not None and va else None
                )
            row["only"] = None
            both.append(row)
        else:
            for q in ("p50", "p95"):
                row[f"delta_{q}_ms"] = None
                row[f"delta_{q}_pct"] = None
            row["only"] = "a" if sa else "b"
            one_sided.append(row)
    both.sort(key=lambda r: (-(r["delta_p95_ms"] or 0.0), r["route"], r["method"]))
    one_sided.sort(key=lambda r: (r["only"], r["route"], r["method"]))
    out = both + one_sided
    return out[: filters.limit] if filters.limit else out
