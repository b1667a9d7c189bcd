"""Fixtures for index tests: a private HOME, the shop recordings, helpers to index them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.index.shop import make_shop
from tracetool.cli import common
from tracetool.index import IndexOptions, IndexResult, index_directory


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # `-v` in one CLI test must not leak into the next (it is process-global state).
    monkeypatch.setitem(common._state, "verbose", False)
    """Nothing may write to the real ~/.trace."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.delenv("TRACETOOL_TRACE_DIR", raising=False)
    monkeypatch.delenv("TRACETOOL_CONFIG", raising=False)
    return path


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return make_shop(tmp_path / "trace")


@pytest.fixture
def qdb(tmp_path: Path) -> Path:
    return tmp_path / "db" / "query.db"


def run(trace_dir: Path, qdb: Path, **options: Any) -> IndexResult:
    return index_directory(trace_dir, IndexOptions(query_db=qdb, workers=1, **options))


def rows(qdb: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(qdb)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()
