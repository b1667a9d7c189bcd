"""The single definition of captured runtime data: what is visited, what never is."""

from __future__ import annotations

from typing import Any

from tracetool.transform import captured
from tracetool.transform.captured import captured_values, rewrite_event, rewrite_metadata


def _function_call() -> dict[str, Any]:
    return {
        "id": 1,
        "event": "call",
        "thread_id": 1,
        "defined_class": "app.User",
        "method_id": "save",
        "path": "app/user.py",
        "lineno": 3,
        "static": False,
        "labels": ["db"],
        "receiver": {"class": "app.User", "value": "<User 1>", "object_id": 9},
        "parameters": [
            {
                "name": "data",
                "class": "dict",
                "value": "{...}",
                "properties": [
                    {"name": "email", "class": "str", "value": "e"},
                    {"name": "tags", "class": "list", "items": [{"class": "str", "value": "t"}]},
                ],
            }
        ],
    }


def test_function_call_values_in_document_order() -> None:
    assert captured_values(_function_call()) == [
        ("value", "<User 1>"),
        ("value", "{...}"),
        ("value", "e"),
        ("value", "t"),
    ]


def test_every_captured_field_of_every_event_kind() -> None:
    events = [
        {
            "event": "call",
            "http_server_request": {
                "request_method": "GET",
                "path_info": "/u/1",
                "normalized_path_info": "/u/{id}",
                "protocol": "HTTP/1.1",
                "headers": {"Cookie": "c"},
            },
            "message": [{"name": "q", "class": "str", "value": "m"}],
        },
        {"event": "call", "http_server_request": {"request_method": "GET", "path_info": "/x/2"}},
        {
            "event": "return",
            "http_server_response": {
                "status_code": 200,
                "mime_type": "text/html",
                "headers": {"Set-Cookie": "s"},
                "return_value": {"class": "str", "value": "body"},
            },
        },
        {
            "event": "call",
            "http_client_request": {
                "request_method": "GET",
                "url": "http://h/1",
                "headers": {"A": "a"},
            },
        },
        {"event": "return", "http_client_response": {"status_code": 200, "headers": [["B", "b"]]}},
        {
            "event": "call",
            "sql_query": {
                "database_type": "pg",
                "sql": "q1",
                "explain_sql": "q2",
                "server_version": "15",
            },
        },
        {
            "event": "return",
            "return_value": {"class": "int", "value": 5},
            "exceptions": [{"class": "E", "message": "boom", "path": "a.py", "lineno": 2}],
        },
    ]
    found = [kv for event in events for kv in captured_values(event)]
    assert found == [
        ("routed_path", "/u/1"),
        ("header", "c"),
        ("value", "m"),
        ("path", "/x/2"),
        ("header", "s"),
        ("value", "body"),
        ("url", "http://h/1"),
        ("header", "a"),
        ("header", "b"),
        ("sql", "q1"),
        ("sql", "q2"),
        ("value", 5),
        ("message", "boom"),
    ]


def test_schema_is_never_offered_to_the_rewriter() -> None:
    event = _function_call()
    offered: list[Any] = []

    def poison(kind: str, value: Any, context: Any) -> Any:
        offered.append(value)
        return "X"

    rewrite_event(event, poison)
    for key in ("defined_class", "method_id", "path", "lineno", "static", "labels", "id"):
        assert event[key] == _function_call()[key]
    data = event["parameters"][0]
    assert (data["name"], data["class"]) == ("data", "dict")
    assert data["properties"][0]["name"] == "email"
    assert data["properties"][1]["items"][0] == {"class": "str", "value": "X"}
    assert event["receiver"] == {"class": "app.User", "value": "X", "object_id": 9}


def test_sql_rewriter_gets_the_database_type_and_headers_their_name() -> None:
    contexts = []
    rewrite_event(
        {
            "sql_query": {"sql": "s", "database_type": "sqlite"},
            "http_client_request": {"headers": {"N": "v"}},
        },
        lambda kind, value, context: contexts.append((kind, context)) or value,
    )
    assert contexts == [("sql", "sqlite"), ("header", "N")]


def test_metadata_messages_are_captured_the_rest_is_schema() -> None:
    metadata = {
        "name": "test x",
        "labels": ["l"],
        "exception": {"class": "E", "message": "m1"},
        "test_failure": {"message": "m2", "location": "t.py:3"},
        "git": {"repository": "r"},
    }
    seen = []
    rewrite_metadata(metadata, lambda kind, value, context: seen.append((kind, value)) or "X")
    assert seen == [("message", "m1"), ("message", "m2")]
    assert metadata["test_failure"] == {"message": "X", "location": "t.py:3"}
    assert metadata["name"] == "test x"


def test_trimmed_kinds_are_values_and_messages() -> None:
    assert captured.TRIMMED_KINDS == {captured.VALUE, captured.MESSAGE}
    assert set(captured.KINDS) >= captured.TRIMMED_KINDS


def test_deeply_nested_parameter_is_walked_completely_without_recursion() -> None:
    node: dict[str, Any] = {"value": "leaf"}
    for i in range(5000):
        node = {"value": f"v{i}", "properties": [node], "items": [{"value": f"i{i}"}]}
    seen: list[Any] = []
    rewrite_event({"receiver": node}, lambda k, v, c: seen.append(v) or v)
    assert len(seen) == 10001
    assert seen[:3] == ["v4999", "v4998", "v4997"]  # pre-order: properties before items
    assert seen[-1] == "i4999"
