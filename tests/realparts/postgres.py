"""A throwaway PostgreSQL server on 127.0.0.1 (initdb + postgres from Debian's postgresql package,
OS-chosen port, trust auth), one per test session, with a fresh database per caller.

    def test_x(pg_server: PgServer) -> None:
        dsn = pg_server.create_database("shop")  # postgresql://postgres@127.0.0.1:PORT/shop

The fixture `pg_server` lives in tests/conftest.py.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.realparts import need


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return versions[-1] if versions else None


def _as_server_user(cmd: list[str]) -> list[str]:
    """initdb/postgres refuse to run as root: run them as the `postgres` user then."""
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    if runuser is None:
        need("runuser", "running as root, PostgreSQL must be started as another user")
    return [runuser, "-u", "postgres", "--", *cmd]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    host: str
    port: int
    base: Path
    process: subprocess.Popen[bytes]
    user: str = "postgres"
    _names: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def params(self) -> dict[str, object]:
        """Connection keywords for psycopg/psycopg2 (database `postgres`)."""
        return {"host": self.host, "port": self.port, "user": self.user, "dbname": "postgres"}

    def dsn(self, dbname: str = "postgres", driver: str = "postgresql") -> str:
        return f"{driver}://{self.user}@{self.host}:{self.port}/{dbname}"

    def create_database(self, prefix: str = "db") -> str:
        """A new empty database; returns its postgresql:// URL."""
        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        self._psql(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def _psql(self, sql: str) -> None:
        psql = _binary("psql")
        if psql is None:
            need("psql", "creating test databases needs PostgreSQL's client")
        subprocess.run(
            [
                psql,
                "-h",
                self.host,
                "-p",
                str(self.port),
                "-U",
                self.user,
                "-d",
                "postgres",
                "-v",
                "ON_ERROR_STOP=1",
                "-q",
                "-c",
                sql,
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.base, ignore_errors=True)


def start_server() -> PgServer:
    initdb, postgres = _binary("initdb"), _binary("postgres")
    if not initdb or not postgres:
        need("PostgreSQL server", "initdb/postgres not found (apt-get install postgresql)")
    # not under pytest's tmp_path: its parents are private to root, the server user can't reach it
    base = Path(tempfile.mkdtemp(prefix="tracetool-pg-"))
    data = base / "data"
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        base.chmod(0o700)
    init = subprocess.run(
        _as_server_user([initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if init.returncode != 0:
        need("PostgreSQL server", f"initdb failed: {init.stderr[-300:]}")
    port = _free_port()
    process = subprocess.Popen(
        _as_server_user(
            [
                postgres,
                "-D",
                str(data),
                "-p",
                str(port),
                "-h",
                "127.0.0.1",
                "-k",
                str(base),
                "-F",
                "-c",
                "max_connections=200",
                "-c",
                "fsync=off",
            ]
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = PgServer("127.0.0.1", port, base, process)
    deadline = time.monotonic() + 60
    while True:  # the port opens before the server accepts logins: ask psql
        try:
            server._psql("SELECT 1")
            return server
        except subprocess.CalledProcessError:
            if time.monotonic() > deadline or process.poll() is not None:
                server.stop()
                need("PostgreSQL server", "it did not start within 60 s")
            time.sleep(0.1)  # poll interval of a deadline-bounded wait
