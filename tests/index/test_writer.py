"""Writer.put: a recording the database refuses leaves no row behind, in a cold load (undone by
deleting its rows) and after that (under a savepoint), and the others are indexed as usual."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.index.conftest import rows, run
from tracetool.index import indexer, schema
from tracetool.index.worker import Indexed, Result, Task, process
from tracetool.index.writer import Writer

TABLES = (
    "recordings",
    "recordings_fts",
    "http_requests",
    "sql_queries",
    "function_calls",
    "exceptions",
    "log_messages",
    "recording_code_objects",
    "overhead",
    "code_objects",
    "query_tables",
)


def _contents(qdb: Path) -> dict[str, Any]:
    """Every table by content, recording ids replaced by paths (ids depend on the order)."""
    path = dict(rows(qdb, "SELECT id, path FROM recordings"))
    code = dict(rows(qdb, "SELECT id, fqid FROM code_objects"))
    out: dict[str, Any] = {
        "recordings": sorted(r[1:] for r in rows(qdb, "SELECT id, path, name FROM recordings")),
        "fts": sorted(
            (path[r[0]], *r[1:]) for r in rows(qdb, "SELECT rowid, * FROM recordings_fts")
        ),
        "code_objects": sorted(
            r[1:] for r in rows(qdb, "SELECT * FROM code_objects")
        ),  # (id first)
        "query_tables": sorted((n, code[c]) for n, c in rows(qdb, "SELECT * FROM query_tables")),
        "recording_code_objects": sorted(
            (path[r], code[c])
            for c, r in rows(qdb, "SELECT code_object_id, recording_id FROM recording_code_objects")
        ),
    }
    c = code.get  # (None stays None)
    out["http_requests"] = sorted(
        (path[r[1]], *r[2:]) for r in rows(qdb, "SELECT * FROM http_requests")
    )
    out["sql_queries"] = sorted(
        (path[r], e, q, c(co), ms, c(caller))
        for _, r, e, q, co, ms, caller in rows(qdb, "SELECT * FROM sql_queries")
    )
    out["exceptions"] = sorted(
        (path[r[1]], *r[2:7], c(r[7])) for r in rows(qdb, "SELECT * FROM exceptions")
    )
    out["log_messages"] = sorted(
        (path[r], e, q, level, c(logger), c(caller), message)
        for _, r, e, q, level, logger, caller, message in rows(qdb, "SELECT * FROM log_messages")
    )
    out["function_calls"] = sorted(
        (path[r[0]], code[r[1]], *r[2:]) for r in rows(qdb, "SELECT * FROM function_calls")
    )
    out["overhead"] = sorted((path[r], s) for r, s in rows(qdb, "SELECT * FROM overhead"))
    return out


@pytest.mark.parametrize("refused", [1, 2])
def test_refused_recordings_leave_no_rows(
    shop: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused: int
) -> None:
    names = sorted(p.relative_to(shop).as_posix() for p in shop.rglob("*.trace.json"))
    bad = names[:refused]  # the first is undone by deletes, the second under a savepoint
    real = indexer.process

    def process(task: Task, threshold: int | None = None) -> Result:
        result = real(task, threshold)
        if task.relpath in bad:
            assert isinstance(result, Indexed)
            # Refused by the last insert of its rows (a list where text belongs), after all
            # the others went in.
            assert result.data.queries and result.data.functions
            result.data.fts = (*result.data.fts[:5], ["not", "text"])
        return result

    monkeypatch.setattr(indexer, "process", process)
    qdb = tmp_path / "db" / "query.db"
    result = run(shop, qdb)
    assert sorted(s.path for s in result.skipped) == bad
    assert sorted(result.added) == names[refused:]

    clean = tmp_path / "clean"
    shutil.copytree(shop, clean)
    for name in bad:
        (clean / name).unlink()
    monkeypatch.setattr(indexer, "process", real)
    expected = tmp_path / "db2" / "query.db"
    run(clean, expected)
    assert _contents(qdb) == _contents(expected)
    assert rows(qdb, "PRAGMA integrity_check") == [("ok",)]
    assert rows(qdb, "INSERT INTO recordings_fts(recordings_fts) VALUES ('integrity-check')") == []


def _indexed(shop: Path, tmp_path: Path) -> list[Indexed]:
    """The shop's recordings as the workers return them (sidecars under `tmp_path`)."""
    out = []
    for n, path in enumerate(sorted(shop.rglob("*.trace.json"))):
        st = path.stat()
        task = Task(
            str(path),
            path.relative_to(shop).as_posix(),
            st.st_size,
            st.st_mtime_ns,
            str(tmp_path / "sidecars" / f"{n}.json"),
            1 << 30,
        )
        result = process(task)
        assert isinstance(result, Indexed)
        out.append(result)
    return out


def _fts(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute("SELECT rowid, name FROM recordings_fts ORDER BY rowid").fetchall()


def test_full_text_rows_are_written_with_their_transaction(shop: Path, tmp_path: Path) -> None:
    """The writer holds a transaction's full-text rows back and inserts them as it commits
    (one FTS5 segment per batch, not per recording): whatever reads or deletes full-text rows
    in the same transaction sees them first, a rollback drops them, and none is lost."""
    results = _indexed(shop, tmp_path)
    assert len(results) >= 3
    conn, fresh = schema.open_writer(tmp_path / "query.db")
    assert fresh
    writer = Writer(conn, batch_seconds=3600)
    first = writer.put(results[0], fresh=True)
    second = writer.put(results[1], fresh=True)
    assert _fts(conn) == []  # (held until the transaction commits)
    # Deleted in the transaction that added it: its row is not written back later.
    writer.delete(second)
    # Replaced in the same transaction: compared with the row it holds, not with nothing.
    assert writer.put(results[0], replace_id=first) == first
    writer.commit()
    name = results[0].data.fts[0]
    assert _fts(conn) == [(first, name)]

    third = writer.put(results[2], fresh=True)
    writer.rollback()
    assert conn.execute("SELECT id FROM recordings WHERE id = ?", (third,)).fetchall() == []
    writer.commit()
    assert _fts(conn) == [(first, name)]
    conn.execute("INSERT INTO recordings_fts(recordings_fts) VALUES ('integrity-check')")
    conn.close()


def test_held_full_text_rows_survive_a_replaced_recording_that_fails(
    shop: Path, tmp_path: Path
) -> None:
    """A replaced recording is written under a savepoint: rows held for the recordings written
    before it go in first, so a failure rolled back to that savepoint does not drop them."""
    first, second, third = _indexed(shop, tmp_path)[:3]
    conn, _ = schema.open_writer(tmp_path / "query.db")
    writer = Writer(conn, batch_seconds=3600)
    old = writer.put(first, fresh=True)
    writer.commit()
    added = writer.put(second, fresh=True)  # (held)
    third.data.fts = (*third.data.fts[:5], ["not", "text"])  # refused by SQLite
    with pytest.raises(Exception, match="bind|type"):
        writer.put(third, replace_id=old)
    writer.commit()
    assert _fts(conn) == [(old, first.data.fts[0]), (added, second.data.fts[0])]
    conn.close()


class _NoJson(sqlite3.Connection):
    """A connection as SQLite built without its JSON functions answers `json_each`."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        if "json_each" in sql:
            raise sqlite3.OperationalError("no such table: json_each")
        return super().execute(sql, *args)


def _code_object_rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT r.path, c.fqid FROM recording_code_objects rc JOIN recordings r "
        "ON r.id = rc.recording_id JOIN code_objects c ON c.id = rc.code_object_id "
        "ORDER BY r.path, c.fqid"
    ).fetchall()


def test_code_object_rows_are_the_same_without_json(shop: Path, tmp_path: Path) -> None:
    """A recording's code objects go in as one statement over a JSON array; where SQLite has
    no `json_each` they go in one statement per row, and the rows are the same (re-indexing a
    changed recording replaces them the same way too)."""
    results = _indexed(shop, tmp_path)
    written = []
    for name, factory in (("json", sqlite3.Connection), ("rows", _NoJson)):
        path = tmp_path / name / "query.db"
        path.parent.mkdir()
        schema.open_writer(path)[0].close()
        conn = sqlite3.connect(path, isolation_level=None, factory=factory)
        writer = Writer(conn, batch_seconds=3600)
        ids = [writer.put(result, fresh=True) for result in results]
        writer.commit()
        assert writer._json_each is (factory is sqlite3.Connection)
        # the first recording re-indexed as the second's content: its rows are replaced
        second = results[1]
        writer.put(
            Indexed(
                results[0].relpath,
                second.size,
                second.mtime_ns,
                second.sha256,
                second.data,
                second.digests,
                second.sql,
                second.overhead,
            ),
            replace_id=ids[0],
        )
        writer.commit()
        written.append(_code_object_rows(conn))
        conn.close()
    assert written[0] == written[1]
    first = results[0].relpath
    assert {fqid for path, fqid in written[0] if path == first} == {
        fqid for path, fqid in written[0] if path == results[1].relpath
    }
    assert len(written[0]) > 20
