"""Wide fixtures' set-up and tear-down are recorded on their own (real pytest subprocess): a
session fixture that creates and migrates a real SQLite database, a module fixture used by two
modules, a class fixture — each set-up/tear-down is one recording, labeled ``fixture.setup`` /
``fixture.teardown`` with ``metadata.fixture``, and none of it lands in the test that happens to
run first (or last)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.pytest_plugin.helpers import by_name, read_recordings

pytestmark = pytest.mark.usefixtures("clean_env")

TRACE_YML = """
name: fixtures
packages:
  - path: fixpkg
"""

FIXPKG = """
import sqlite3

MIGRATIONS = [
    "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, total REAL)",
    "CREATE INDEX orders_user ON orders (user_id)",
]


def migrate(path):
    con = sqlite3.connect(path)
    for statement in MIGRATIONS:
        con.execute(statement)
    con.execute("INSERT INTO users (name) VALUES ('seed')")
    con.commit()
    return con


def destroy(con):
    con.execute("DROP TABLE orders")
    con.execute("DROP TABLE users")
    con.close()


def count_users(con):
    return con.execute("SELECT count(*) FROM users").fetchone()[0]


def warm_cache():
    return {"warm": True}


def class_helper():
    return 1
"""

CONFTEST = """
import pytest

from fixpkg import db as fixpkg


@pytest.fixture(scope="session")
def db():
    con = fixpkg.migrate(":memory:")
    yield con
    fixpkg.destroy(con)


@pytest.fixture(scope="module")
def cache():
    return fixpkg.warm_cache()
"""

TEST_A = """
import pytest

from fixpkg import db as fixpkg


def test_first(db, cache):
    assert fixpkg.count_users(db) == 1


class TestGrouped:
    @pytest.fixture(scope="class")
    def helper(self):
        return fixpkg.class_helper()

    def test_in_class(self, helper, db):
        assert helper == 1
"""

TEST_B = """
from fixpkg import db as fixpkg


def test_second(db, cache):
    assert fixpkg.count_users(db) == 1
"""


def _sql(doc: dict[str, Any]) -> list[str]:
    return [e["sql_query"]["sql"] for e in doc["events"] if "sql_query" in e]


def _functions(doc: dict[str, Any]) -> list[str]:
    return [e["method_id"] for e in doc["events"] if e["event"] == "call" and "method_id" in e]


def test_wide_fixtures_are_recorded_in_their_own_recordings(
    pytester: pytest.Pytester, appmap_validate: Callable[[Iterable[Path]], int]
) -> None:
    pytester.makefile(".yml", trace=TRACE_YML)
    pytester.makeini("[pytest]\n")
    pkg = pytester.mkpydir("fixpkg")
    (pkg / "db.py").write_text(FIXPKG, encoding="utf-8")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a=TEST_A, test_b=TEST_B)
    result = pytester.runpytest_subprocess("--trace-record", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    out = pytester.path / "tmp" / "trace" / "pytest"
    files = read_recordings(out)
    docs = by_name(files)

    # the tests hold their own work only
    first, second = docs["first"], docs["second"]
    assert _sql(first) == ["SELECT count(*) FROM users"]
    assert _functions(first) == ["count_users"]
    assert _sql(second) == ["SELECT count(*) FROM users"]  # the last test: no DROP TABLE
    assert _functions(docs["TestGrouped in class"]) == []

    setup = docs["db (session fixture) setup"]
    meta = setup["metadata"]
    assert meta["labels"] == ["pytest", "fixture.setup"]
    assert meta["fixture"] == {
        "name": "db",
        "scope": "session",
        "phase": "setup",
        "defined_in": "<root>",
        "for": "<session>",
    }
    assert meta["source_location"] == "conftest.py:6"  # its decorator
    assert meta["test_status"] == "succeeded"
    assert [s.split(" (")[0] for s in _sql(setup)] == [
        "CREATE TABLE users",
        "CREATE TABLE orders",
        "CREATE INDEX orders_user ON orders",
        "INSERT INTO users",
    ]
    teardown = docs["db (session fixture) teardown"]
    assert teardown["metadata"]["labels"] == ["pytest", "fixture.teardown"]
    assert _sql(teardown) == ["DROP TABLE orders", "DROP TABLE users"]

    # a module fixture from conftest.py: one set-up per module that uses it, in its own file
    caches = [d for d in files.values() if d["metadata"].get("fixture", {}).get("name") == "cache"]
    assert sorted(d["metadata"]["fixture"]["for"] for d in caches) == ["test_a.py", "test_b.py"]
    assert all(_functions(d) == ["warm_cache"] for d in caches)
    helper = docs["helper (class fixture) setup for test_a.py::TestGrouped"]
    assert helper["metadata"]["fixture"]["for"] == "test_a.py::TestGrouped"
    assert _functions(helper) == ["class_helper"]
    names = sorted(files)
    assert "fixture.setup.session.session_db.trace.json" in names, names
    appmap_validate(sorted((out).glob("*.trace.json")))
