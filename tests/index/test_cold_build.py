"""The end of a cold load: secondary indexes built with SQLite's sorter threads (the same
indexes, settings restored, an in-memory build where temporary files fail), and code objects
counted, then the unused ones forgotten (`Writer.finish_code_objects`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.index.conftest import rows, run
from tracetool.index import schema


def _master(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
    ).fetchall()


def _loaded(path: Path, factory: type[sqlite3.Connection] = sqlite3.Connection) -> Any:
    conn = sqlite3.connect(str(path), isolation_level=None, factory=factory)
    schema._configure(conn)
    schema.create(conn, indexes=False)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO function_calls VALUES (?, ?, ?, ?, ?, ?)",
        [(i % 97, (i * 7919) % 1000, i, i / 3, i / 7, i / 5) for i in range(20_000)],
    )
    conn.executemany(
        "INSERT INTO recording_code_objects VALUES (?, ?)",
        [(c, r) for r in range(200) for c in range((r * 31) % 50, 400, 3)],
    )
    conn.execute("COMMIT")
    return conn


@pytest.mark.parametrize("threads", [0, 1, 2])
def test_create_indexes_with_threads_builds_every_index(tmp_path: Path, threads: int) -> None:
    conn = _loaded(tmp_path / "a.db")
    conn.execute("PRAGMA cache_size = -64")  # (small: the sorter spills, so threads sort)
    schema.create_indexes(conn, threads=threads)
    ref = sqlite3.connect(str(tmp_path / "ref.db"), isolation_level=None)
    schema.create(ref, indexes=True)
    assert _master(conn) == _master(ref)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("PRAGMA temp_store").fetchone() == (2,)  # MEMORY again
    assert conn.execute("PRAGMA threads").fetchone() == (0,)
    assert not conn.in_transaction
    # the index gives what the table holds, in index order
    assert conn.execute(
        "SELECT code_object_id, recording_id FROM recording_code_objects "
        "INDEXED BY recording_code_objects_code ORDER BY code_object_id, recording_id"
    ).fetchall() == sorted(conn.execute("SELECT * FROM recording_code_objects").fetchall())


class _NoTempFiles(sqlite3.Connection):
    """Refuses an index build while temp_store is FILE, as SQLite does without a temp dir."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        if "CREATE INDEX" in sql and super().execute("PRAGMA temp_store").fetchone()[0] == 1:
            raise sqlite3.OperationalError("unable to open database file")
        return super().execute(sql, *args)


def test_create_indexes_in_memory_when_temp_files_fail(tmp_path: Path) -> None:
    conn = _loaded(tmp_path / "a.db", _NoTempFiles)
    schema.create_indexes(conn, threads=2)
    ref = sqlite3.connect(str(tmp_path / "ref.db"), isolation_level=None)
    schema.create(ref, indexes=True)
    assert _master(conn) == _master(ref)
    assert conn.execute("PRAGMA temp_store").fetchone() == (2,)
    assert not conn.in_transaction


def _counts(qdb: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(code_objects.recordings, what recording_code_objects says) by fqid."""
    stored = dict(rows(qdb, "SELECT fqid, recordings FROM code_objects"))
    counted = dict(
        rows(
            qdb,
            "SELECT co.fqid, count(rco.recording_id) FROM code_objects co "
            "LEFT JOIN recording_code_objects rco ON rco.code_object_id = co.id GROUP BY co.id",
        )
    )
    return stored, counted


def test_code_objects_counted_and_unused_forgotten(shop: Path, qdb: Path) -> None:
    run(shop, qdb)
    stored, counted = _counts(qdb)
    assert stored == counted and min(stored.values()) > 0
    before = set(stored)
    victims = sorted(shop.rglob("*.json"))[: len(list(shop.rglob("*.json"))) // 2]
    for path in victims:
        path.unlink()
    run(shop, qdb)  # (few code objects touched: counted and pruned by chunk)
    stored, counted = _counts(qdb)
    assert stored == counted and min(stored.values()) > 0
    assert set(stored) < before
    names = {n for (n,) in rows(qdb, "SELECT DISTINCT code_object_id FROM query_tables")}
    assert names <= set(dict(rows(qdb, "SELECT id, fqid FROM code_objects")))
    for path in sorted(shop.rglob("*.json")):
        path.unlink()
    run(shop, qdb)
    assert _counts(qdb) == ({}, {})
    assert rows(qdb, "SELECT * FROM query_tables") == []


def _table(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER NOT NULL, b REAL, c TEXT)")


@pytest.mark.parametrize("n", [0, 1, 2, 63, 64, 65, 127, 128, 200, 1000])
def test_insert_many_rows_per_statement_keeps_order_and_ids(n: int) -> None:
    from tracetool.index.writer import _insert, _values

    rows = [(i, i / 7, f"r{i}" if i % 3 else None) for i in range(n)]
    fast, slow = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for conn in (fast, slow):
        _table(conn)
    _insert(fast, "INSERT INTO t (a, b, c)", 3, rows)
    slow.executemany(_values("INSERT INTO t (a, b, c)", 3, 1), rows)
    assert fast.execute("SELECT * FROM t").fetchall() == slow.execute("SELECT * FROM t").fetchall()
    assert len(fast.execute("SELECT * FROM t").fetchall()) == n


@pytest.mark.parametrize(
    "bad",
    [
        (None, 1.0, "x"),  # NOT NULL
        (1, 1.0, ["not", "text"]),  # a type the module cannot bind
        (2**70, 1.0, "x"),  # too large an integer
        (1, 1.0),  # too few values
        (1, 1.0, "x", "y"),  # too many
    ],
)
@pytest.mark.parametrize("at", [0, 5, 64, 70, 129])
def test_insert_refused_row_raises_what_one_row_per_statement_raises(
    bad: tuple[Any, ...], at: int
) -> None:
    from tracetool.index.writer import _insert, _values

    rows: list[tuple[Any, ...]] = [(i, i / 3, str(i)) for i in range(130)]
    rows[at] = bad
    fast, slow = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    errors = []
    for conn, put in (
        (fast, lambda c: _insert(c, "INSERT INTO t (a, b, c)", 3, rows)),
        (slow, lambda c: c.executemany(_values("INSERT INTO t (a, b, c)", 3, 1), rows)),
    ):
        _table(conn)
        with pytest.raises(Exception) as caught:
            put(conn)
        errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1]
    # the rows before the refused one are in, as one statement per row leaves them
    assert fast.execute("SELECT * FROM t").fetchall() == slow.execute("SELECT * FROM t").fetchall()


def test_a_cold_load_keeps_only_the_indexes_it_appends_to(tmp_path: Path) -> None:
    """Before a cold load, only the indexes that lead with the recording exist (its rows come
    with increasing recording ids, so their entries are appended); the others are built after
    it (`create_indexes`), and then the database has every index a new one has."""
    conn = sqlite3.connect(str(tmp_path / "a.db"), isolation_level=None)
    schema.create(conn, indexes=False)
    early = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    ).fetchall()
    assert sorted(name for name, _ in early) == [
        "exceptions_recording",
        "function_calls_recording",
        "http_requests_recording",
        "log_messages_recording",
        "sql_queries_recording",
    ]
    assert all(" (recording_id" in " ".join(sql.split()) for _, sql in early)
    schema.create_indexes(conn)
    ref = sqlite3.connect(str(tmp_path / "ref.db"), isolation_level=None)
    schema.create(ref, indexes=True)
    assert _master(conn) == _master(ref)
