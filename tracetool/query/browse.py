"""Recordings grouped for a browser (the editors' recordings tree): by test file, route or kind.

`recording_groups(db, text=None, n_plus_one=10)` returns groups, in label order within kind
(test files, then routes, then the rest):

    {"kind": "test"|"route"|"other", "label": "tests/test_orders.py" | "GET /orders/{id}" |
     "remote", "failed": n, "exceptions": n, "nPlusOne": n, "recordings": [row, ...]}

A recording made by a test (`recorder_type` test/tests) belongs to its test file (the path part of
its `source_location`); other recordings with HTTP requests to their first request's route;
the rest to their recorder type. Each row: recording (path relative to trace_dir), name,
test_status, recorder_type, source_location, route, requests, queries, exceptions, elapsed_ms,
recorded_at, failed (test failed), n_plus_one (the most executions of one normalized query
within one request or recording, when at least `n_plus_one`; else 0), status (the worst of
"failed", "exception", "n+1", "ok": what an icon shows).

`text` keeps recordings whose name, path, route or test file contains it (case-insensitive).
`n_plus_one` < 1 turns the N+1 check off.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from tracetool.query.db import round_ms
from tracetool.query.source import split_location
from tracetool.trace import gc_paused_call

TEST_RECORDERS = frozenset({"test", "tests"})
KIND_ORDER = {"test": 0, "route": 1, "other": 2}


def _first_routes(db: sqlite3.Connection) -> dict[int, str]:
    rows = db.execute(
        "SELECT recording_id, method, route, min(event_id) FROM http_requests GROUP BY recording_id"
    ).fetchall()
    return {int(r[0]): f"{r[1]} {r[2]}" for r in rows}


def _n_plus_one(db: sqlite3.Connection, threshold: int) -> dict[int, int]:
    if threshold < 1:
        return {}
    rows = db.execute(
        "SELECT recording_id, max(n) FROM (SELECT recording_id, count(*) AS n FROM sql_queries "
        "GROUP BY recording_id, code_object_id, request_event_id HAVING n >= ?) "
        "GROUP BY recording_id",
        (threshold,),
    ).fetchall()
    return {int(r[0]): int(r[1]) for r in rows}


def status_of(row: dict[str, Any]) -> str:
    if row["failed"]:
        return "failed"
    if row["exceptions"]:
        return "exception"
    if row["n_plus_one"]:
        return "n+1"
    return "ok"


@gc_paused_call
def recording_groups(
    db: sqlite3.Connection, text: str | None = None, n_plus_one: int = 10
) -> list[dict[str, Any]]:
    """Recordings grouped by test file / route / recorder (module doc)."""
    routes = _first_routes(db)
    repeated = _n_plus_one(db, n_plus_one)
    needle = (text or "").strip().lower()
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for (
        rid,
        path,
        name,
        status,
        recorder,
        location,
        requests,
        queries,
        exc,
        elapsed,
        at,
    ) in db.execute(
        "SELECT id, path, name, test_status, recorder_type, source_location, requests, "
        "queries, exceptions, elapsed_ms, recorded_at FROM recordings ORDER BY path"
    ):
        route = routes.get(int(rid))
        test_file = split_location(location)[0] if location else ""
        if recorder in TEST_RECORDERS and test_file:
            key = ("test", test_file)
        elif route:
            key = ("route", route)
        else:
            key = ("other", recorder or "other")
        if needle and not any(
            needle in (s or "").lower() for s in (name, path, route, test_file, key[1])
        ):
            continue
        row: dict[str, Any] = {
            "recording": path,
            "name": name,
            "test_status": status,
            "recorder_type": recorder,
            "source_location": location,
            "route": route,
            "requests": requests,
            "queries": queries,
            "exceptions": exc,
            "elapsed_ms": round_ms(elapsed),
            "recorded_at": at,
            "failed": status == "failed",
            "n_plus_one": repeated.get(int(rid), 0),
        }
        row["status"] = status_of(row)
        group = groups.get(key)
        if group is None:
            group = groups[key] = {
                "kind": key[0],
                "label": key[1],
                "failed": 0,
                "exceptions": 0,
                "nPlusOne": 0,
                "recordings": [],
            }
        group["recordings"].append(row)
        group["failed"] += int(row["failed"])
        group["exceptions"] += int(bool(exc))
        group["nPlusOne"] += int(bool(row["n_plus_one"]))
    out = list(groups.values())
    out.sort(key=lambda g: (KIND_ORDER[g["kind"]], g["label"]))
    for g in out:
        g["recordings"].sort(key=lambda r: (r["name"] or "", r["recording"]))
    return out
