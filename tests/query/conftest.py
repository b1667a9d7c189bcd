"""The shop recordings (tests/index/shop.py), indexed once per module, opened read-only."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.index.shop import make_shop
from tracetool import store
from tracetool.cli import common
from tracetool.index import IndexOptions, index_directory
from tracetool.query import open_db

# A fixed "now" so relative ages in filters are exact.
NOW = time.time()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def shop_db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """query.db of the shop, or (param `postgres`) the location standing for a database on a
    real PostgreSQL server (tracetool.store): every query test runs against both."""
    base = tmp_path_factory.mktemp("shop")
    trace = make_shop(base / "trace", now=NOW)
    qdb = base / "query.db"
    if request.param == "postgres":
        url = request.getfixturevalue("pg_server").create_database("shop")
        qdb = store.bind(base / "pg" / "query.db", url)
    result = index_directory(trace, IndexOptions(query_db=qdb, workers=1))
    assert len(result.added) == 4 and not result.skipped
    return qdb


@pytest.fixture
def db(shop_db: Path) -> Iterator[sqlite3.Connection]:
    conn = open_db(query_db=shop_db)
    yield conn
    conn.close()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # `-v` in one CLI test must not leak into the next (it is process-global state).
    monkeypatch.setitem(common._state, "verbose", False)
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.delenv("TRACETOOL_TRACE_DIR", raising=False)
    monkeypatch.delenv(store.ENV_QUERY_DB, raising=False)
    return path
