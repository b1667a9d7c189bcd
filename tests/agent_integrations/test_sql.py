"""sqlite3 and SQLAlchemy integrations: statements become `sql_query` events, once each."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.agent_integrations.conftest import Recording


def test_sqlite3_execute_executemany_executescript(recording: Recording) -> None:
    conn = sqlite3.connect(":memory:")
    conn.executescript("CREATE TABLE t (id INTEGER, name TEXT);")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, "a"), (2, "b")])
    cur = conn.cursor()
    cur.execute("SELECT name FROM t WHERE id = ?", (2,))
    assert cur.fetchone() == ("b",)
    conn.close()
    calls = recording.calls("sql_query")
    assert [c["sql_query"]["sql"] for c in calls] == [
        "CREATE TABLE t (id INTEGER, name TEXT);",
        "INSERT INTO t VALUES (?, ?)",
        "SELECT name FROM t WHERE id = ?",
    ]
    for call in calls:
        assert call["sql_query"]["database_type"] == "sqlite"
        assert call["sql_query"]["server_version"] == sqlite3.sqlite_version
        ret = recording.return_of(call)
        assert ret["elapsed"] >= 0
        assert "exceptions" not in ret


def test_sqlite3_error_is_recorded_on_the_return(recording: Recording) -> None:
    conn = sqlite3.connect(":memory:")
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("SELECT * FROM nowhere")
    (call,) = recording.calls("sql_query")
    ret = recording.return_of(call)
    assert "exceptions" not in ret  # AppMap's schema: exceptions on function returns only


def test_sqlite3_custom_factories_keep_working(recording: Recording) -> None:
    class MyConnection(sqlite3.Connection):
        marker = "mine"

    class MyCursor(sqlite3.Cursor):
        pass

    conn = sqlite3.connect(":memory:", factory=MyConnection)
    assert isinstance(conn, MyConnection) and conn.marker == "mine"
    cur = conn.cursor(MyCursor)
    assert isinstance(cur, MyCursor)
    cur.execute("SELECT 1")
    conn.row_factory = sqlite3.Row
    assert conn.execute("SELECT 2 AS two").fetchone()["two"] == 2
    assert [c["sql_query"]["sql"] for c in recording.calls("sql_query")] == [
        "SELECT 1",
        "SELECT 2 AS two",
    ]


def test_sqlite3_not_recording_records_nothing() -> None:
    from tracetool.agent.recorder import get_recorder

    assert not get_recorder().is_recording()
    conn = sqlite3.connect(":memory:")
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_sqlalchemy_statements_recorded_once(recording: Recording, tmp_path: Path) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'sa.db'}")
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"))
        conn.execute(sqlalchemy.text("INSERT INTO items (name) VALUES (:n)"), [{"n": "x"}])
        rows = conn.execute(sqlalchemy.text("SELECT name FROM items")).all()
    assert [r[0] for r in rows] == ["x"]
    sqls = [c["sql_query"]["sql"] for c in recording.calls("sql_query")]
    # each statement once (the sqlite3 level below SQLAlchemy stays silent); the dialect's
    # first-connect PRAGMAs bypass SQLAlchemy's events and are recorded by the sqlite3 hook
    assert [s for s in sqls if not s.startswith("PRAGMA")] == [
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)",
        "INSERT INTO items (name) VALUES (?)",
        "SELECT name FROM items",
    ]
    call = recording.calls("sql_query")[0]
    assert call["sql_query"]["database_type"] == "sqlite"
    assert call["sql_query"]["server_version"] == sqlite3.sqlite_version


def test_sqlalchemy_error_recorded(recording: Recording) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine("sqlite://")
    with pytest.raises(sqlalchemy.exc.OperationalError), engine.connect() as conn:
        conn.execute(sqlalchemy.text("SELECT * FROM missing_table"))
    calls = [c for c in recording.calls("sql_query") if "missing_table" in c["sql_query"]["sql"]]
    assert len(calls) == 1
    assert "exceptions" not in recording.return_of(calls[0])
