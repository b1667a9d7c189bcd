"""psycopg 3 and psycopg2 against a real PostgreSQL server (tests/realparts/postgres.py)."""

from __future__ import annotations

import time

import pytest

from tests.agent_integrations.conftest import Recording
from tests.realparts.postgres import PgServer


@pytest.fixture(scope="module")
def postgres(pg_server: PgServer) -> dict[str, object]:
    return pg_server.params


def _ready(connect: object, params: dict[str, object]) -> object:
    deadline = time.monotonic() + 30
    while True:  # the port opens before the server accepts logins
        try:
            return connect(**params)  # type: ignore[operator]
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_psycopg3(postgres: dict[str, object], recording: Recording) -> None:
    psycopg = pytest.importorskip("psycopg")
    conn = _ready(psycopg.connect, postgres)
    with conn:  # type: ignore[attr-defined]
        cur = conn.cursor()  # type: ignore[attr-defined]
        cur.execute("CREATE TEMP TABLE t (id int, name text)")
        cur.executemany("INSERT INTO t VALUES (%s, %s)", [(1, "a"), (2, "b")])
        assert conn.execute("SELECT name FROM t WHERE id = %s", (2,)).fetchone() == ("b",)  # type: ignore[attr-defined]
        with pytest.raises(psycopg.errors.UndefinedTable):
            cur.execute("SELECT * FROM missing")
    calls = recording.calls("sql_query")
    assert [c["sql_query"]["sql"] for c in calls] == [
        "CREATE TEMP TABLE t (id int, name text)",
        "INSERT INTO t VALUES (%s, %s)",
        "SELECT name FROM t WHERE id = %s",
        "SELECT * FROM missing",
    ]
    assert {c["sql_query"]["database_type"] for c in calls} == {"postgresql"}
    assert calls[0]["sql_query"]["server_version"].startswith("1")
    assert "exceptions" not in recording.return_of(calls[-1])  # (function returns only)


def test_psycopg2(postgres: dict[str, object], recording: Recording) -> None:
    psycopg2 = pytest.importorskip("psycopg2")
    extras = pytest.importorskip("psycopg2.extras")

    conn = _ready(psycopg2.connect, postgres)
    cur = conn.cursor(cursor_factory=extras.RealDictCursor)  # type: ignore[attr-defined]
    cur.execute("SELECT 1 AS one")
    assert cur.fetchone() == {"one": 1}
    conn.cursor().execute("SELECT 2")  # type: ignore[attr-defined]
    conn.close()  # type: ignore[attr-defined]
    sqls = [c["sql_query"]["sql"] for c in recording.calls("sql_query")]
    assert sqls == ["SELECT 1 AS one", "SELECT 2"]


def test_sqlalchemy_over_psycopg_recorded_once(
    postgres: dict[str, object], recording: Recording
) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    pytest.importorskip("psycopg")
    url = "postgresql+psycopg://postgres@{host}:{port}/postgres".format(**postgres)
    engine = sqlalchemy.create_engine(url)
    _ready(lambda: engine.connect().close(), {})
    with engine.connect() as conn:
        assert conn.execute(sqlalchemy.text("SELECT 41 + 1")).scalar() == 42
    calls = [c for c in recording.calls("sql_query") if c["sql_query"]["sql"] == "SELECT 41 + 1"]
    assert len(calls) == 1  # by SQLAlchemy; the psycopg hook below it stayed silent
    assert calls[0]["sql_query"]["database_type"] == "postgresql"
    engine.dispose()
