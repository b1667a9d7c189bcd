"""psycopg 3 and psycopg2 against a throwaway PostgreSQL server (initdb + postgres on 127.0.0.1,
OS-chosen port). Skipped when the PostgreSQL server binaries or the drivers are missing."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent_integrations.conftest import Recording

INITDB, POSTGRES = shutil.which("initdb"), shutil.which("postgres")


def _as_server_user(cmd: list[str]) -> list[str]:
    """initdb/postgres refuse to run as root: run them as the `postgres` user then."""
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    if runuser is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL")
    return [runuser, "-u", "postgres", "--", *cmd]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def postgres() -> Iterator[dict[str, object]]:
    if not INITDB or not POSTGRES:
        pytest.skip("PostgreSQL server binaries (initdb, postgres) not found")
    # not under pytest's tmp_path: its parents are private to root, the server user could not
    # reach the data directory
    base = Path(tempfile.mkdtemp(prefix="tracetool-pg-"))
    data = base / "data"
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        base.chmod(0o700)
    init = subprocess.run(
        _as_server_user([INITDB, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if init.returncode != 0:
        pytest.skip(f"initdb failed: {init.stderr[-300:]}")
    port = _free_port()
    server = subprocess.Popen(
        _as_server_user(
            [POSTGRES, "-D", str(data), "-p", str(port), "-h", "127.0.0.1", "-k", str(base), "-F"]
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    params = {"host": "127.0.0.1", "port": port, "user": "postgres", "dbname": "postgres"}
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.terminate()
                pytest.skip("PostgreSQL did not start")
            time.sleep(0.05)  # poll interval of a deadline-bounded wait
    yield params
    server.terminate()
    server.wait(timeout=30)
    shutil.rmtree(base, ignore_errors=True)


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
    assert "UndefinedTable" in recording.return_of(calls[-1])["exceptions"][0]["class"]


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
