"""`related`: recordings ranked by how much of their code they share with a given one.

Each recording touches a set of code objects: functions, classes, routes, SQL queries, tables
and external routes. The score of another recording is the Jaccard similarity of the two sets
(shared / union, 0..1), ties broken by path. Each row lists how many items of each kind are
shared and the most distinctive shared items — those the fewest recordings touch.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from tracetool.query.db import resolve_recording
from tracetool.trace import gc_paused_call

DEFAULT_LIMIT = 10
EXAMPLES = 5
_KIND_KEYS = {
    "function": "functions",
    "class": "classes",
    "route": "routes",
    "query": "queries",
    "table": "tables",
    "external-route": "external_routes",
}


@gc_paused_call
def related(
    db: sqlite3.Connection, appmap: str, *, limit: int | None = None
) -> list[dict[str, Any]]:
    """Recordings most similar to `appmap` (a path, file or name; see `resolve_recording`)."""
    target = resolve_recording(db, appmap)
    rid = int(target["id"])
    size = int(target["items"])
    shared_counts = db.execute(
        "SELECT rc.recording_id, count(*) FROM recording_code_objects t "
        "JOIN recording_code_objects rc ON rc.code_object_id = t.code_object_id "
        "AND rc.recording_id != t.recording_id "
        "WHERE t.recording_id = ? GROUP BY rc.recording_id",
        (rid,),
    ).fetchall()
    recordings = {
        row[0]: (row[1], row[2], int(row[3]))
        for row in db.execute("SELECT id, path, name, items FROM recordings")
    }
    scored = []
    for cid, shared in shared_counts:
        path, name, items = recordings[cid]
        union = size + items - shared
        scored.append((shared / union if union else 0.0, path, cid, shared, name))
    scored.sort(key=lambda s: (-s[0], s[1]))
    scored = scored[: limit or DEFAULT_LIMIT]

    mine = {
        row[0]: (row[1], row[2], row[3])
        for row in db.execute(
            "SELECT co.id, co.fqid, co.type, co.recordings FROM recording_code_objects rc "
            "JOIN code_objects co ON co.id = rc.code_object_id WHERE rc.recording_id = ?",
            (rid,),
        )
    }
    out = []
    for score, path, cid, shared, name in scored:
        theirs = {
            row[0]
            for row in db.execute(
                "SELECT code_object_id FROM recording_code_objects WHERE recording_id = ?", (cid,)
            )
        }
        common = [mine[i] for i in mine.keys() & theirs]
        counts = {key: 0 for key in _KIND_KEYS.values()}
        for _, type_, _ in common:
            key = _KIND_KEYS.get(type_)
            if key is not None:
                counts[key] += 1
        distinctive = sorted(common, key=lambda item: (item[2], item[0]))[:EXAMPLES]
        out.append(
            {
                "recording": path,
                "name": name,
                "score": round(score, 3),
                "shared": shared,
                **counts,
                "examples": [fqid for fqid, _, _ in distinctive],
            }
        )
    return out
