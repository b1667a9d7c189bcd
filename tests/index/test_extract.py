"""extract(): the rows one recording contributes to query.db."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import CORPUS
from tests.index import shop
from tracetool.index import extract
from tracetool.trace import from_data


def test_users_show_rows() -> None:
    x = extract(from_data(shop.users_show()))
    assert x.requests == [
        [1, "GET", "/users/{id}", "/users/42", 200, 7.8125, 1, 0.9765625, "/users/{}"],
        [11, "GET", "/users/{id}", "/users/7", 200, 31.25, 1, 7.8125, "/users/{}"],
    ]
    assert x.queries == [
        (
            4,
            1,
            "query:SELECT * FROM users WHERE id = ?",
            0.9765625,
            "function:app/models/User.find",
        ),
        (14, 11, "query:SELECT * FROM users WHERE id = ?", 7.8125, "function:app/models/User.find"),
    ]
    assert sorted(x.functions) == [
        ("function:app/controllers/UsersController#show", 2, 28.90625, 14.453125, 25.0),
        ("function:app/models/User.find", 2, 14.453125, 5.6640625, 12.5),
        ("function:logging/Logger#info", 1, 0.0, 0.0, 0.0),
    ]
    assert x.logs == [
        (
            7,
            1,
            "info",
            "function:logging/Logger#info",
            "function:app/controllers/UsersController#show",
            "showing user 42",
        )
    ]
    assert x.exceptions == []
    assert sorted((fqid, row[0]) for fqid, row in x.items.items()) == [
        ("class:app/controllers/UsersController", "class"),
        ("class:app/models/User", "class"),
        ("class:logging/Logger", "class"),
        ("function:app/controllers/UsersController#show", "function"),
        ("function:app/models/User.find", "function"),
        ("function:logging/Logger#info", "function"),
        ("query:SELECT * FROM users WHERE id = ?", "query"),
        ("route:GET /users/{id}", "route"),
        ("table:users", "table"),
    ]
    assert x.items["function:app/models/User.find"] == (
        "function",
        "find",
        "app/models/User",
        "User",
        "find",
        1,
        "app/models/user.rb:5",
        "dao.materialize",
        None,
        None,
        None,
    )
    assert x.items["query:SELECT * FROM users WHERE id = ?"][8:] == ("select", "users", "sqlite")
    rec = x.recording
    assert (rec["name"], rec["branch"], rec["git_commit"], rec["test_status"]) == (
        "users show",
        "main",
        "aaaa1111",
        "succeeded",
    )
    assert (rec["requests"], rec["queries"], rec["calls"], rec["exceptions"]) == (2, 2, 5, 0)
    assert rec["elapsed_ms"] == 39.0625
    assert rec["labels"] == ["api"]
    assert x.metadata["git"] == {
        "repository": "git@example:shop.git",
        "branch": "main",
        "commit": "aaaa1111",
    }


def test_exception_and_failure() -> None:
    x = extract(from_data(shop.orders_create()))
    assert x.exceptions == [
        (
            3,
            1,
            "PaymentError",
            "card declined",
            "app/services/order_service.rb:30",
            "function:OrderService#place",
        )
    ]
    assert x.recording["failure"] == "expected 201, got 500"
    assert x.requests == [[1, "POST", "/orders", "/orders", 500, 125.0, 2, 9.765625, "/orders"]]
    assert "PaymentError Payment Error card declined" in x.fts[5]


def test_recursion_counts_total_once_and_self_exactly() -> None:
    x = extract(from_data(shop.report_job()))
    funcs = {row[0]: row[1:] for row in x.functions}
    # outer walk 46.875 ms containing inner walk 15.625 ms
    assert funcs["function:Tree#walk"] == (2, 46.875, 46.875, 46.875)
    # perform 250 ms minus its children (125 ms query + 46.875 ms walk)
    assert funcs["function:ReportJob#perform"] == (1, 250.0, 78.125, 250.0)
    assert x.requests == []
    assert x.recording["elapsed_ms"] == 250.0


def test_route_template_from_path_when_agent_gave_none(builder) -> None:  # type: ignore[no-untyped-def]
    call = builder.call(http_server_request={"request_method": "get", "path_info": "/items/123"})
    builder.ret(call, http_server_response={"status": 201})
    x = extract(from_data(builder.doc()))
    # tracetool.route_model: a guessed parameter is named after the word before it
    assert x.requests == [
        [1, "GET", "/items/{item_id}", "/items/123", 201, 1.0, 0, 0.0, "/items/{}"]
    ]
    assert "route:GET /items/{item_id}" in x.items


def test_event_timestamp_is_the_recording_time(builder) -> None:  # type: ignore[no-untyped-def]
    call = builder.function("A", "b", "a.py", 1)
    builder.events[-1]["timestamp"] = 1700000000.5
    builder.ret(call)
    assert extract(from_data(builder.doc())).recording["recorded_at"] == 1700000000.5


def _digests_agree(data: dict[str, Any]) -> None:
    from tracetool.diagram import bound_digest, recording_digest
    from tracetool.index.extract import extract_bound, release_bound

    expected = recording_digest(from_data(copy.deepcopy(data)))
    _, bound = extract_bound(from_data(copy.deepcopy(data)))
    try:
        assert bound_digest(bound) == expected
    finally:
        release_bound(bound)


@pytest.mark.parametrize(
    "path", sorted(CORPUS.rglob("*.appmap.json"))[:40], ids=lambda p: p.name[:40]
)
def test_indexer_digest_is_the_recording_digest(path: Path) -> None:
    """The indexer's digest, from the tree extract walked, equals `recording_digest`."""
    _digests_agree(orjson.loads(path.read_bytes()))


def test_indexer_digest_with_sql_in_http_calls() -> None:
    """SQL on an HTTP call counts as the unnamed query object in both (bind's sql_names=False),
    though extract names that call's code object by its route or URL."""
    data = shop.users_show()
    for event in data["events"]:
        if "http_server_request" in event or "sql_query" in event:
            event["sql_query"] = {"sql": "", "database_type": "sqlite"}
    _digests_agree(data)


@pytest.mark.parametrize(
    "events",
    [
        [],
        [{}, {"timestamp": None}, {"timestamp": "1"}, {"timestamp": [1]}],
        [{"id": 1}, {"timestamp": "x"}, {"timestamp": 3}, {"timestamp": 4.5}],
        [{"timestamp": True}],
        [{"timestamp": 2.5}, 7],
        [{}, 7],
        [7],
        [{"timestamp": 10**400}],
    ],
)
def test_first_timestamp_with_and_without_the_accelerator(events: list[Any]) -> None:
    """The C scan (`_speedups.first_timestamp`) answers as the Python one, raising alike."""
    from tracetool.index import rows

    def answer(func: Any) -> Any:
        try:
            return func(events)
        except Exception as exc:
            return repr(exc)

    assert answer(rows.first_timestamp) == answer(rows.python_first_timestamp)
