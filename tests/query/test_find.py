"""find(): exact rows for every type and filter over the shop recordings."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from tests.query.conftest import NOW
from tracetool.errors import UsageError
from tracetool.query import find, parse_filters, search

SHOW = "main/users_show.trace.json"
ORDERS = "main/orders_create.trace.json"
INDEX = "feature/users_index.trace.json"
JOB = "jobs/report_job.trace.json"


def pick(rows: list[dict[str, Any]], *keys: str) -> list[tuple[Any, ...]]:
    return [tuple(row[k] for k in keys) for row in rows]


def f(**kwargs: Any) -> Any:
    return parse_filters(now=NOW, **kwargs)


def test_requests_all_slowest_first(db: sqlite3.Connection) -> None:
    assert find(db, "requests") == [
        {
            "recording": ORDERS,
            "event_id": 1,
            "method": "POST",
            "route": "/orders",
            "path": "/orders",
            "status": 500,
            "duration_ms": 125.0,
            "sql_count": 2,
            "sql_ms": 9.766,
        },
        {
            "recording": INDEX,
            "event_id": 1,
            "method": "GET",
            "route": "/users",
            "path": "/users",
            "status": 200,
            "duration_ms": 50.0,
            "sql_count": 1,
            "sql_ms": 31.25,
        },
        {
            "recording": SHOW,
            "event_id": 11,
            "method": "GET",
            "route": "/users/{id}",
            "path": "/users/7",
            "status": 200,
            "duration_ms": 31.25,
            "sql_count": 1,
            "sql_ms": 7.813,
        },
        {
            "recording": SHOW,
            "event_id": 1,
            "method": "GET",
            "route": "/users/{id}",
            "path": "/users/42",
            "status": 200,
            "duration_ms": 7.813,
            "sql_count": 1,
            "sql_ms": 0.977,
        },
        {
            "recording": INDEX,
            "event_id": 9,
            "method": "GET",
            "route": "/users/{id}",
            "path": "/users/42",
            "status": 404,
            "duration_ms": 4.883,
            "sql_count": 0,
            "sql_ms": 0.0,
        },
    ]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"status": ">=500"}, [(ORDERS, "/orders")]),
        ({"status": "500"}, [(ORDERS, "/orders")]),
        ({"status": "<400"}, [(INDEX, "/users"), (SHOW, "/users/7"), (SHOW, "/users/42")]),
        ({"status": "200-299"}, [(INDEX, "/users"), (SHOW, "/users/7"), (SHOW, "/users/42")]),
        ({"status": "4xx,5xx"}, [(ORDERS, "/orders"), (INDEX, "/users/42")]),
        ({"duration": ">100ms"}, [(ORDERS, "/orders")]),
        ({"duration": "5ms-40ms"}, [(SHOW, "/users/7"), (SHOW, "/users/42")]),
        (
            {"route": "GET /users/:id"},
            [(SHOW, "/users/7"), (SHOW, "/users/42"), (INDEX, "/users/42")],
        ),
        ({"route": "/users/{id}", "status": "404"}, [(INDEX, "/users/42")]),
        ({"route": "/users/7"}, [(SHOW, "/users/7")]),
        (
            {"route": "/users*"},
            [(INDEX, "/users"), (SHOW, "/users/7"), (SHOW, "/users/42"), (INDEX, "/users/42")],
        ),
        ({"route": "POST"}, [(ORDERS, "/orders")]),
        ({"method": "post"}, [(ORDERS, "/orders")]),
        ({"method": "GET", "route": "/users"}, [(INDEX, "/users")]),
        ({"table": "orders"}, [(ORDERS, "/orders")]),
        ({"branch": "feature"}, [(INDEX, "/users"), (INDEX, "/users/42")]),
        ({"commit": "aaaa"}, [(SHOW, "/users/7"), (SHOW, "/users/42")]),
        ({"since": "2d"}, [(SHOW, "/users/7"), (SHOW, "/users/42")]),
        ({"until": "2d", "since": "5d"}, [(ORDERS, "/orders")]),
        ({"limit": 2}, [(ORDERS, "/orders"), (INDEX, "/users")]),
        ({"text": "42"}, [(SHOW, "/users/42"), (INDEX, "/users/42")]),
    ],
)
def test_requests_filters(db: sqlite3.Connection, filters: dict[str, Any], expected: Any) -> None:
    assert pick(find(db, "requests", f(**filters)), "recording", "path") == expected


def test_iso_dates(db: sqlite3.Connection) -> None:
    from datetime import datetime, timezone

    def iso(days: float) -> str:
        return datetime.fromtimestamp(NOW - days * 86400, timezone.utc).isoformat()

    rows = find(db, "appmaps", f(since=iso(4), until=iso(2)))
    assert pick(rows, "recording") == [(ORDERS,)]


def test_appmaps(db: sqlite3.Connection) -> None:
    rows = find(db, "recordings")
    assert pick(rows, "recording") == [(JOB,), (SHOW,), (ORDERS,), (INDEX,)]
    assert rows[2] == {
        "recording": ORDERS,
        "name": "orders create",
        "test_status": "failed",
        "recorder": "tests",
        "branch": "main",
        "commit": "bbbb2222",
        "recorded_at": rows[2]["recorded_at"],
        "requests": 1,
        "queries": 2,
        "exceptions": 1,
        "elapsed_ms": 125.0,
        "labels": ["api"],
    }
    assert rows[2]["recorded_at"].endswith("Z")


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"status": ">=500"}, [ORDERS]),
        ({"route": "GET /users"}, [INDEX]),
        ({"duration": ">=125ms"}, [JOB, ORDERS]),
        ({"class": "User"}, [SHOW, INDEX]),
        ({"class": "app/models/User", "method": "where"}, [INDEX]),
        ({"method": "walk"}, [JOB]),
        ({"table": "orders"}, [JOB, ORDERS]),
        ({"commit": "bbbb"}, [ORDERS]),
        ({"branch": "main", "since": "2d"}, [JOB, SHOW]),
        ({"until": "2d"}, [ORDERS, INDEX]),
        ({"text": "payment"}, [ORDERS]),
        ({"text": "users orders"}, [ORDERS]),
        ({"text": "Tree"}, [JOB]),
    ],
)
def test_appmaps_filters(db: sqlite3.Connection, filters: dict[str, Any], expected: Any) -> None:
    kwargs = {("class_" if k == "class" else k): v for k, v in filters.items()}
    assert [r["recording"] for r in find(db, "appmaps", f(**kwargs))] == expected


def test_queries(db: sqlite3.Connection) -> None:
    assert pick(find(db, "queries"), "recording", "sql", "duration_ms", "caller", "route") == [
        (JOB, "SELECT count(*) FROM orders", 125.0, "ReportJob#perform", None),
        (INDEX, "SELECT * FROM users", 31.25, "app/models/User.where", "/users"),
        (SHOW, "SELECT * FROM users WHERE id = ?", 7.813, "app/models/User.find", "/users/{id}"),
        (
            ORDERS,
            "INSERT INTO orders (user_id, total) VALUES (?, ?)",
            7.813,
            "OrderService#place",
            "/orders",
        ),
        (ORDERS, "SELECT * FROM users WHERE id = ?", 1.953, "OrderService#place", "/orders"),
        (SHOW, "SELECT * FROM users WHERE id = ?", 0.977, "app/models/User.find", "/users/{id}"),
    ]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"table": "orders"}, [(JOB, 2), (ORDERS, 4)]),
        ({"class": "User"}, [(INDEX, 4), (SHOW, 14), (SHOW, 4)]),
        ({"method": "place"}, [(ORDERS, 4), (ORDERS, 6)]),
        ({"route": "POST /orders"}, [(ORDERS, 4), (ORDERS, 6)]),
        ({"status": "200"}, [(INDEX, 4), (SHOW, 14), (SHOW, 4)]),
        ({"duration": "<2ms"}, [(ORDERS, 6), (SHOW, 4)]),
        ({"text": "count(*)"}, [(JOB, 2)]),
        ({"branch": "feature"}, [(INDEX, 4)]),
    ],
)
def test_queries_filters(db: sqlite3.Connection, filters: dict[str, Any], expected: Any) -> None:
    kwargs = {("class_" if k == "class" else k): v for k, v in filters.items()}
    assert pick(find(db, "queries", f(**kwargs)), "recording", "event_id") == expected


def test_calls(db: sqlite3.Connection) -> None:
    rows = find(db, "calls", f(class_="UsersController"))
    assert rows == [
        {
            "recording": INDEX,
            "function": "app/controllers/UsersController#index",
            "class": "UsersController",
            "method": "index",
            "location": "app/controllers/users_controller.rb:20",
            "count": 1,
            "total_ms": 46.875,
            "self_ms": 7.813,
            "max_ms": 46.875,
        },
        {
            "recording": SHOW,
            "function": "app/controllers/UsersController#show",
            "class": "UsersController",
            "method": "show",
            "location": "app/controllers/users_controller.rb:10",
            "count": 2,
            "total_ms": 28.906,
            "self_ms": 14.453,
            "max_ms": 25.0,
        },
        {
            "recording": INDEX,
            "function": "app/controllers/UsersController#show",
            "class": "UsersController",
            "method": "show",
            "location": "app/controllers/users_controller.rb:10",
            "count": 1,
            "total_ms": 3.906,
            "self_ms": 3.906,
            "max_ms": 3.906,
        },
    ]
    assert pick(find(db, "calls", f(method="w*")), "recording", "function") == [
        (JOB, "Tree#walk"),
        (INDEX, "app/models/User.where"),
    ]
    assert pick(find(db, "calls", f(duration=">100ms")), "function") == [("ReportJob#perform",)]
    assert pick(find(db, "calls", f(class_="*Service")), "function", "count") == [
        ("OrderService#place", 1)
    ]
    assert pick(find(db, "calls", f(class_="Logger")), "function") == [("logging/Logger#info",)]


def test_exceptions_and_logs(db: sqlite3.Connection) -> None:
    expected = [
        {
            "recording": ORDERS,
            "event_id": 3,
            "class": "PaymentError",
            "message": "card declined",
            "location": "app/services/order_service.rb:30",
            "function": "OrderService#place",
            "request_method": "POST",
            "route": "/orders",
        }
    ]
    assert find(db, "exceptions") == expected
    assert find(db, "exceptions", f(class_="PaymentError", status="5xx")) == expected
    assert find(db, "exceptions", f(method="place")) == expected
    assert find(db, "exceptions", f(class_="KeyError")) == []
    assert find(db, "exceptions", f(route="GET /users")) == []
    assert find(db, "logs") == [
        {
            "recording": SHOW,
            "event_id": 7,
            "level": "info",
            "message": "showing user 42",
            "caller": "app/controllers/UsersController#show",
            "request_method": "GET",
            "route": "/users/{id}",
        }
    ]
    assert find(db, "logs", f(class_="UsersController", text="USER 42"))[0]["event_id"] == 7
    assert find(db, "logs", f(route="POST /orders")) == []


def test_filters_that_do_not_apply_are_refused(db: sqlite3.Connection) -> None:
    with pytest.raises(UsageError, match=r"--table does not apply to `find calls`"):
        find(db, "calls", f(table="users"))
    with pytest.raises(UsageError, match=r"--class does not apply to `find requests`"):
        find(db, "requests", f(class_="User"))
    with pytest.raises(UsageError, match="unknown type 'things'"):
        find(db, "things")


def test_search_ranks_recordings(db: sqlite3.Connection) -> None:
    assert [r["recording"] for r in search(db, "PaymentError")] == [ORDERS]
    assert {r["recording"] for r in search(db, "walk declined")} == {JOB, ORDERS}
    with pytest.raises(UsageError):
        search(db, '  "  ')
