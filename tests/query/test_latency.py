"""endpoints() and compare(): per-route latency, percentiles, branch deltas."""

from __future__ import annotations

import sqlite3

import pytest

from tests.query.conftest import NOW
from tracetool.errors import NotFoundError, UsageError
from tracetool.query import compare, endpoints, parse_filters, percentile


def test_nearest_rank_percentile() -> None:
    assert percentile([10.0, 20.0, 30.0, 40.0], 50) == 20.0
    assert percentile([10.0, 20.0, 30.0, 40.0], 95) == 40.0
    assert percentile([5.0], 95) == 5.0
    assert percentile([], 50) is None
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 100)) == (
        50.0,
        95.0,
        100.0,
    )


def test_endpoints(db: sqlite3.Connection) -> None:
    assert endpoints(db) == [
        {
            "method": "POST",
            "route": "/orders",
            "count": 1,
            "statuses": {"500": 1},
            "p50_ms": 125.0,
            "p95_ms": 125.0,
            "max_ms": 125.0,
            "sql_per_request": 2.0,
        },
        {
            "method": "GET",
            "route": "/users",
            "count": 1,
            "statuses": {"200": 1},
            "p50_ms": 50.0,
            "p95_ms": 50.0,
            "max_ms": 50.0,
            "sql_per_request": 1.0,
        },
        {
            "method": "GET",
            "route": "/users/{id}",
            "count": 3,
            "statuses": {"200": 2, "404": 1},
            "p50_ms": 7.813,
            "p95_ms": 31.25,
            "max_ms": 31.25,
            "sql_per_request": 0.67,
        },
    ]


def test_endpoints_filters(db: sqlite3.Connection) -> None:
    rows = endpoints(db, parse_filters(branch="main", now=NOW))
    assert [(r["route"], r["count"]) for r in rows] == [("/orders", 1), ("/users/{id}", 2)]
    rows = endpoints(db, parse_filters(status="<400", since="5d", now=NOW))
    assert [(r["route"], r["count"], r["p50_ms"]) for r in rows] == [("/users/{id}", 2, 7.813)]
    rows = endpoints(db, parse_filters(route="/users/*", duration="<10ms"))
    assert [(r["route"], r["statuses"]) for r in rows] == [("/users/{id}", {"200": 1, "404": 1})]
    assert len(endpoints(db, parse_filters(limit=1))) == 1
    with pytest.raises(UsageError, match="--table does not apply to `endpoints`"):
        endpoints(db, parse_filters(table="users"))


def test_compare_branches(db: sqlite3.Connection) -> None:
    assert compare(db, "main", "feature") == [
        {
            "method": "GET",
            "route": "/users/{id}",
            "count_a": 2,
            "p50_a_ms": 7.813,
            "p95_a_ms": 31.25,
            "count_b": 1,
            "p50_b_ms": 4.883,
            "p95_b_ms": 4.883,
            "delta_p50_ms": -2.93,
            "delta_p50_pct": -37.5,
            "delta_p95_ms": -26.367,
            "delta_p95_pct": -84.4,
            "only": None,
        },
        {
            "method": "POST",
            "route": "/orders",
            "count_a": 1,
            "p50_a_ms": 125.0,
            "p95_a_ms": 125.0,
            "count_b": 0,
            "p50_b_ms": None,
            "p95_b_ms": None,
            "delta_p50_ms": None,
            "delta_p50_pct": None,
            "delta_p95_ms": None,
            "delta_p95_pct": None,
            "only": "a",
        },
        {
            "method": "GET",
            "route": "/users",
            "count_a": 0,
            "p50_a_ms": None,
            "p95_a_ms": None,
            "count_b": 1,
            "p50_b_ms": 50.0,
            "p95_b_ms": 50.0,
            "delta_p50_ms": None,
            "delta_p50_pct": None,
            "delta_p95_ms": None,
            "delta_p95_pct": None,
            "only": "b",
        },
    ]
    reverse = compare(db, "feature", "main", parse_filters(route="/users/{id}"))
    assert [(r["route"], r["delta_p95_ms"], r["only"]) for r in reverse] == [
        ("/users/{id}", 26.367, None)
    ]


def test_compare_unknown_branch(db: sqlite3.Connection) -> None:
    with pytest.raises(
        NotFoundError,
        match=r"no indexed recordings on branch 'nope' "
        r"\(branches: feature, main\)",
    ):
        compare(db, "main", "nope")
    with pytest.raises(UsageError):
        compare(db, "main", "feature", parse_filters(branch="main"))
