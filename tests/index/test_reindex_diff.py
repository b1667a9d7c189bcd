"""A changed recording is re-indexed by writing only what changed (`Writer._same`): the
database must hold what a fresh index of the same files holds, row for row."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import CORPUS
from tests.index.conftest import rows, run

_ID_TABLES = ("http_requests", "sql_queries", "exceptions", "log_messages")
_CODE_COLUMNS = {
    "sql_queries": ("code_object_id", "caller_id"),
    "function_calls": ("code_object_id",),
    "exceptions": ("function_id",),
    "log_messages": ("logger_id", "caller_id"),
    "recording_code_objects": ("code_object_id",),
}


def content(qdb: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows with ids made names (recording → path, code object → fqid), row ids
    and run times left out; a recording's rows in their order."""
    conn = sqlite3.connect(qdb)
    try:
        paths = dict(conn.execute("SELECT id, path FROM recordings"))
        fqids = dict(conn.execute("SELECT id, fqid FROM code_objects"))
        out: dict[str, list[tuple[Any, ...]]] = {}
        cur = conn.execute("SELECT * FROM recordings")
        names = [d[0] for d in cur.description]
        out["recordings"] = sorted(
            tuple(v for n, v in zip(names, row) if n not in ("id", "indexed_at")) for row in cur
        )
        out["code_objects"] = sorted(
            tuple(row[1:]) for row in conn.execute("SELECT * FROM code_objects")
        )
        out["query_tables"] = sorted(
            (name, fqids[cid]) for name, cid in conn.execute("SELECT * FROM query_tables")
        )
        for table in (*_ID_TABLES, "function_calls", "recording_code_objects", "overhead"):
            order = "recording_id" if table == "recording_code_objects" else "rowid"
            cur = conn.execute(f"SELECT * FROM {table} ORDER BY {order}")
            names = [d[0] for d in cur.description]
            coded = _CODE_COLUMNS.get(table, ())
            named = []
            for row in cur:
                values = dict(zip(names, row))
                path = paths[values.pop("recording_id")]
                if table in _ID_TABLES:
                    del values["id"]
                for n in coded:
                    if values[n] is not None:
                        values[n] = fqids[values[n]]
                named.append((path, *values.values()))
            if table == "recording_code_objects":  # (a set: code ids differ between databases)
                out[table] = sorted(named)
            else:  # (stable: a recording's rows stay in their order)
                out[table] = sorted(named, key=lambda r: r[0])
        out["fts"] = sorted(
            (paths[rid], *rest)
            for rid, *rest in conn.execute(
                "SELECT rowid, name, labels, routes, code, sql, messages FROM recordings_fts"
            )
        )
        return out
    finally:
        conn.close()


def _edit(path: Path, change: Any) -> None:
    doc = orjson.loads(path.read_bytes())
    change(doc)
    path.write_bytes(orjson.dumps(doc))


def _scale_elapsed(doc: dict[str, Any]) -> None:
    for event in doc["events"]:
        if isinstance(event.get("elapsed"), (int, float)):
            event["elapsed"] = event["elapsed"] * 2


def test_same_content_rewrites_no_row(shop: Path, qdb: Path) -> None:
    run(shop, qdb)
    target = shop / "main/users_show.trace.json"
    before = rows(qdb, "SELECT id, recording_id, event_id FROM sql_queries ORDER BY id")
    requests = rows(qdb, "SELECT * FROM http_requests ORDER BY id")
    target.write_bytes(target.read_bytes() + b"\n")  # a new hash, the same recording
    result = run(shop, qdb)
    assert result.updated == ("main/users_show.trace.json",)
    # rows left alone keep their ids (rewritten ones would have new ones)
    assert rows(qdb, "SELECT id, recording_id, event_id FROM sql_queries ORDER BY id") == before
    assert rows(qdb, "SELECT * FROM http_requests ORDER BY id") == requests
    fresh = qdb.parent.parent / "fresh" / "query.db"
    run(shop, fresh)
    assert content(qdb) == content(fresh)


def test_changed_rows_match_a_fresh_index(shop: Path, qdb: Path) -> None:
    run(shop, qdb)

    def branch_and_cut(doc: dict[str, Any]) -> None:
        doc["metadata"]["git"]["branch"] = "hotfix"
        doc["events"] = doc["events"][:10]

    _edit(shop / "main/users_show.trace.json", branch_and_cut)
    _edit(shop / "main/orders_create.trace.json", _scale_elapsed)
    _edit(shop / "jobs/report_job.trace.json", lambda d: d["events"].reverse() or None)
    result = run(shop, qdb)
    assert len(result.updated) == 3
    fresh = qdb.parent.parent / "fresh" / "query.db"
    run(shop, fresh)
    assert content(qdb) == content(fresh)


def test_corpus_changes_match_a_fresh_index(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(CORPUS, root)
    qdb = tmp_path / "a" / "query.db"
    run(root, qdb)
    files = sorted(p for p in root.rglob("*.appmap.json") if p.stat().st_size > 2000)
    assert len(files) >= 6
    for i, path in enumerate(files[:12]):
        kind = i % 3
        if kind == 0:
            path.write_bytes(path.read_bytes() + b"\n")
        elif kind == 1:
            _edit(path, _scale_elapsed)
        else:
            _edit(
                path,
                lambda d: d.__setitem__(
                    "events", d.get("events", [])[: len(d.get("events", [])) // 2]
                ),
            )
    run(root, qdb)
    fresh = tmp_path / "b" / "query.db"
    run(root, fresh)
    assert content(qdb) == content(fresh)
