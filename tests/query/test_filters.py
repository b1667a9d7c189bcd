"""Parsing filter text into conditions."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tracetool.errors import UsageError
from tracetool.query.filters import (
    parse_duration,
    parse_filters,
    parse_route,
    parse_status,
    parse_time,
)


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("500", (("=", 500, None),)),
        (">=500", ((">=", 500, None),)),
        ("<400", (("<", 400, None),)),
        ("!=200", (("!=", 200, None),)),
        ("200-299", (("between", 200, 299),)),
        ("5xx", (("between", 500, 599),)),
        ("200, 3xx", (("=", 200, None), ("between", 300, 399))),
    ],
)
def test_status(text: str, terms: tuple[object, ...]) -> None:
    assert parse_status(text).terms == terms


@pytest.mark.parametrize("text", ["abc", ">=", "2000", "", "5x"])
def test_bad_status(text: str) -> None:
    with pytest.raises(UsageError, match="status"):
        parse_status(text)


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        (">100ms", ((">", 100.0, None),)),
        ("<2s", (("<", 2000.0, None),)),
        ("100ms-1s", (("between", 100.0, 1000.0),)),
        (">=250us", ((">=", 0.25, None),)),
        ("50", ((">=", 50.0, None),)),
        ("1m", ((">=", 60000.0, None),)),
    ],
)
def test_duration(text: str, terms: tuple[object, ...]) -> None:
    assert parse_duration(text).terms == terms


def test_bad_duration() -> None:
    with pytest.raises(UsageError, match="duration"):
        parse_duration(">fast")


def test_times() -> None:
    now = 1_700_000_000.0
    assert parse_time("2d", now=now) == now - 2 * 86400
    assert parse_time("3h", now=now) == now - 3 * 3600
    assert parse_time("90s", now=now) == now - 90
    assert parse_time("1w", now=now) == now - 7 * 86400
    assert (
        parse_time("2024-05-01T12:00:00Z")
        == datetime(2024, 5, 1, 12, tzinfo=timezone.utc).timestamp()
    )
    assert parse_time("2024-05-01T14:00:00+02:00") == parse_time("2024-05-01T12:00:00Z")
    assert parse_time("2024-05-01") == datetime(2024, 5, 1).timestamp()  # local midnight
    with pytest.raises(UsageError, match="--until"):
        parse_time("yesterday-ish", what="--until")


def test_routes() -> None:
    r = parse_route("get /users/:id")
    assert (r.method, r.pattern, r.glob) == ("GET", "/users/{id}", False)
    r = parse_route("/users/<int:id>")
    assert (r.method, r.pattern) == (None, "/users/{id}")
    r = parse_route("/api/*")
    assert (r.method, r.pattern, r.glob) == (None, "/api/*", True)
    r = parse_route("DELETE")
    assert (r.method, r.pattern) == ("DELETE", None)


def test_parse_filters_and_limit() -> None:
    f = parse_filters(table="Users", commit="abc", limit=5, branch="")
    assert (f.table, f.commit, f.limit, f.branch) == ("users", "abc", 5, None)
    assert f.given() == ["commit", "table"]
    with pytest.raises(UsageError, match="--limit"):
        parse_filters(limit=0)
