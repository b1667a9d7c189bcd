"""`summary`: what an index holds, in one object (the web UI's dashboard, MCP's `summary` tool).

`summary(db)` returns JSON-ready counts read from query.db:

- `trace_dir`, `indexed_at` (ISO, last `tracetool index` run), `tool_version`;
- `recordings`, `requests`, `queries`, `function_calls` (calls summed over recordings),
  `exceptions`, `log_messages`, `events`;
- distinct `routes` (method + template), `functions`, `sql_queries` (normalized), `tables`;
- `first_recorded_at` / `last_recorded_at` (ISO), `elapsed_ms` (all recordings);
- `by_branch` [{branch, recordings}] (most recordings first; `null` = no git metadata),
  `by_test_status` {succeeded: n, failed: n, …} (recordings without a status are not counted),
  `by_status_class` {"2xx": n, …} (HTTP server responses; "none" = no status recorded).

`recording(db, appmap)` returns one recording's indexed facts (the UI's recording page, MCP's
`recording` tool): path, file, name, labels, test_status, failure, source_location, recorder,
language, app, branch, commit, recorded_at, indexed_at, size, counts and elapsed_ms.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from tracetool.query.db import iso, recording_file, resolve_recording, round_ms
from tracetool.trace import gc_paused_call


def _meta(db: sqlite3.Connection) -> dict[str, str | None]:
    return {str(k): v for k, v in db.execute("SELECT key, value FROM meta").fetchall()}


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


@gc_paused_call
def summary(db: sqlite3.Connection) -> dict[str, Any]:
    """Counts and breakdowns of the indexed recordings (module doc)."""
    meta = _meta(db)
    rec = db.execute(
        "SELECT count(*), coalesce(sum(requests), 0), coalesce(sum(queries), 0), "
        "coalesce(sum(exceptions), 0), coalesce(sum(events), 0), min(recorded_at), "
        "max(recorded_at), sum(elapsed_ms) FROM recordings"
    ).fetchone()
    calls = db.execute("SELECT coalesce(sum(count), 0) FROM function_calls").fetchone()[0]
    logs = db.execute("SELECT count(*) FROM log_messages").fetchone()[0]
    routes = db.execute(
        "SELECT count(*) FROM (SELECT DISTINCT method, route FROM http_requests)"
    ).fetchone()[0]
    kinds = dict(
        db.execute(
            "SELECT type, count(*) FROM code_objects WHERE recordings > 0 GROUP BY type"
        ).fetchall()
    )
    by_branch = [
        {"branch": branch, "recordings": n}
        for branch, n in db.execute(
            "SELECT branch, count(*) AS n FROM recordings GROUP BY branch "
            "ORDER BY n DESC, branch IS NULL, branch"
        ).fetchall()
    ]
    by_test_status = dict(
        db.execute(
            "SELECT test_status, count(*) FROM recordings WHERE test_status IS NOT NULL "
            "GROUP BY test_status ORDER BY test_status"
        ).fetchall()
    )
    by_status_class = {
        (f"{cls}xx" if cls is not None else "none"): n
        for cls, n in db.execute(
            "SELECT status / 100, count(*) FROM http_requests GROUP BY status / 100 "
            "ORDER BY status / 100 IS NULL, status / 100"
        ).fetchall()
    }
    return {
        "trace_dir": meta.get("trace_dir"),
        "indexed_at": iso(_float(meta.get("indexed_at"))),
        "tool_version": meta.get("tool_version"),
        "recordings": rec[0],
        "requests": rec[1],
        "queries": rec[2],
        "function_calls": calls,
        "exceptions": rec[3],
        "log_messages": logs,
        "events": rec[4],
        "routes": routes,
        "functions": kinds.get("function", 0),
        "sql_queries": kinds.get("query", 0),
        "tables": kinds.get("table", 0),
        "first_recorded_at": iso(rec[5]),
        "last_recorded_at": iso(rec[6]),
        "elapsed_ms": round_ms(rec[7]),
        "by_branch": by_branch,
        "by_test_status": by_test_status,
        "by_status_class": by_status_class,
    }


@gc_paused_call
def recording(db: sqlite3.Connection, appmap: str) -> dict[str, Any]:
    """What the index knows about one recording (a path, file or name; see `resolve_recording`)."""
    row = resolve_recording(db, appmap)
    return {
        "recording": row["path"],
        "file": str(recording_file(db, row)),
        "name": row["name"],
        "labels": orjson.loads(row["labels"] or "[]"),
        "test_status": row["test_status"],
        "failure": row["failure"],
        "source_location": row["source_location"],
        "recorder": row["recorder_type"],
        "language": row["language"],
        "app": row["app"],
        "branch": row["branch"],
        "commit": row["git_commit"],
        "recorded_at": iso(row["recorded_at"]),
        "indexed_at": iso(row["indexed_at"]),
        "size": row["size"],
        "events": row["events"],
        "requests": row["requests"],
        "queries": row["queries"],
        "calls": row["calls"],
        "exceptions": row["exceptions"],
        "elapsed_ms": round_ms(row["elapsed_ms"]),
    }
