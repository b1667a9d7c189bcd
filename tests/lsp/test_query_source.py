"""`tracetool.query.source`: recorded functions by source location, over a real index."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DocBuilder
from tracetool.errors import NotFoundError
from tracetool.index import IndexOptions, index_directory
from tracetool.query import (
    function_detail,
    function_exceptions,
    function_recordings,
    functions_in_file,
    open_db,
    repeated_queries,
)
from tracetool.query.source import split_location
from tracetool.trace import save

SHOW = "function:app/views.show"
LOAD = "function:app/models/User#load"


def _request(b: DocBuilder, show_ms: float, loads: list[float], queries: int) -> None:
    """GET /users/7 → views.show → `queries` lookups and one User#load per entry of `loads`."""
    http = b.call(
        http_server_request={
            "request_method": "GET",
            "path_info": "/users/7",
            "normalized_path_info": "/users/{id}",
        }
    )
    show = b.function("app.views", "show", "app/views.py", 10, static=True)
    for n in range(queries):
        q = b.call(
            sql_query={"database_type": "sqlite", "sql": f"SELECT * FROM users WHERE id = {n}"}
        )
        b.ret(q, elapsed=0.0001)
    for ms in loads:
        load = b.function("app.models.User", "load", "app/models.py", 5)
        b.ret(load, elapsed=ms / 1000)
    b.ret(show, elapsed=show_ms / 1000)
    b.ret(http, elapsed=show_ms / 1000, http_server_response={"status_code": 200})


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    base = tmp_path_factory.mktemp("source")
    trace = base / "trace"
    trace.mkdir()

    a = DocBuilder()
    a.metadata = {"name": "show user a"}
    _request(a, 10.0, [1.0, 2.0, 3.0], queries=11)
    save(a.doc(), trace / "a.trace.json")

    b = DocBuilder()
    b.metadata = {"name": "show user b", "test_status": "failed"}
    _request(b, 20.0, [10.0], queries=2)
    boom = b.function("app.views", "boom", "app/views.py", 30, static=True)
    b.ret(
        boom,
        exceptions=[{"class": "KeyError", "message": "'id'", "path": "app/views.py", "lineno": 32}],
    )
    outside = b.function("lib.helpers", "helper", "/abs/lib/helpers.py", 3, static=True)
    b.ret(outside)
    similar = b.function("app.views2", "other", "app/views.py2.py", 1, static=True)
    b.ret(similar)
    save(b.doc(), trace / "b.trace.json")

    qdb = base / "query.db"
    index_directory(trace, IndexOptions(query_db=qdb, workers=1))
    conn = open_db(query_db=qdb)
    yield conn
    conn.close()


def test_split_location() -> None:
    assert split_location("app/views.py:10") == ("app/views.py", 10)
    assert split_location("C:/src/app.py:3") == ("C:/src/app.py", 3)
    assert split_location("app/views.py") == ("app/views.py", None)
    assert split_location(None) == ("", None)


def test_functions_in_file(db: sqlite3.Connection) -> None:
    rows = functions_in_file(db, ["app/views.py"])
    assert [(r["fqid"], r["lineno"]) for r in rows] == [(SHOW, 10), ("function:app/views.boom", 30)]
    show = rows[0]
    assert show["count"] == 2 and show["recordings"] == 2
    assert show["total_ms"] == 30.0 and show["max_ms"] == 20.0 and show["avg_ms"] == 15.0
    # one call per recording: the median of (10, 20) is the lower middle value
    assert show["p50_ms"] == 10.0
    assert show["path"] == "app/views.py" and show["method"] == "show"
    # neither views.py2.py nor a path merely starting with the same text
    assert functions_in_file(db, ["app/views.py2.py"])[0]["method"] == "other"
    assert functions_in_file(db, ["app/views"]) == []
    assert [r["method"] for r in functions_in_file(db, ["/abs/lib/helpers.py"])] == ["helper"]
    assert functions_in_file(db, []) == []


def test_p50_is_weighted_by_calls(db: sqlite3.Connection) -> None:
    [load] = functions_in_file(db, ["app/models.py"])
    assert load["count"] == 4 and load["recordings"] == 2
    # recording a: 3 calls of mean 2 ms, recording b: 1 call of 10 ms → median call 2 ms
    assert load["p50_ms"] == 2.0
    assert load["total_ms"] == 16.0 and load["max_ms"] == 10.0


def test_function_recordings(db: sqlite3.Connection) -> None:
    rows = function_recordings(db, LOAD)
    assert [(r["name"], r["count"], r["total_ms"]) for r in rows] == [
        ("show user b", 1, 10.0),
        ("show user a", 3, 6.0),
    ]
    assert rows[0]["test_status"] == "failed"
    assert len(function_recordings(db, LOAD, limit=1)) == 1
    with pytest.raises(NotFoundError, match="function:nope: no such recorded function"):
        function_recordings(db, "function:nope")


def test_function_detail(db: sqlite3.Connection) -> None:
    detail = function_detail(db, SHOW)
    assert detail["count"] == 2
    assert [r["name"] for r in detail["top_recordings"]] == ["show user b", "show user a"]
    [query] = detail["queries"]
    assert query["sql"] == "SELECT * FROM users WHERE id = ?"
    assert query["count"] == 13 and query["recordings"] == 2
    assert detail["exceptions"] == []
    assert function_detail(db, SHOW, top=1)["top_recordings"][0]["name"] == "show user b"


def test_function_exceptions(db: sqlite3.Connection) -> None:
    rows = function_exceptions(db, ["function:app/views.boom", SHOW])
    assert rows == [
        {
            "function": "function:app/views.boom",
            "class": "KeyError",
            "location": "app/views.py:32",
            "message": "'id'",
            "count": 1,
            "recordings": 1,
        }
    ]
    assert function_exceptions(db, []) == []


def test_repeated_queries(db: sqlite3.Connection) -> None:
    rows = repeated_queries(db, [SHOW, LOAD], threshold=10)
    assert rows == [
        {
            "function": SHOW,
            "max_count": 11,
            "requests": 1,
            "in_request": True,
            "sql": "SELECT * FROM users WHERE id = ?",
            "recording": "a.trace.json",
            "route": "GET /users/{id}",
        }
    ]
    assert repeated_queries(db, [SHOW], threshold=12) == []
    assert repeated_queries(db, [SHOW], threshold=2)[0]["requests"] == 2
    assert repeated_queries(db, [SHOW], threshold=0) == []


def test_unknown_path(db: sqlite3.Connection, tmp_path: Path) -> None:
    assert functions_in_file(db, [str(tmp_path / "nothing.py")]) == []
