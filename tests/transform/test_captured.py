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


# --- fail closed: every shape of a captured field is offered (issue 19) --------------------------


def test_a_captured_field_of_an_unexpected_shape_is_offered_whole() -> None:
    events = [
        {"event": "call", "parameters": {"pw": {"class": "str", "value": "p1"}}},
        {"event": "call", "message": {"q": "m1"}, "receiver": ["r1"]},
        {"event": "return", "return_value": "rv1", "exceptions": {"class": "E", "message": "e1"}},
        {"event": "return", "return_value": 42, "exceptions": ["e2", None]},
        {"event": "call", "http_server_request": "GET /x?t=s1"},
        {"event": "call", "http_client_request": {"url": "u", "headers": "Cookie: c1"}},
        {"event": "return", "http_client_response": {"headers": [["A", "a"], "B: b1", ["C"]]}},
        {"event": "call", "sql_query": "SELECT 1"},
    ]
    found = [kv for event in events for kv in captured_values(event)]
    assert found == [
        ("other", {"pw": {"class": "str", "value": "p1"}}),
        ("other", {"q": "m1"}),
        ("value", ["r1"]),
        ("value", "rv1"),
        ("other", {"class": "E", "message": "e1"}),
        ("value", 42),
        ("message", "e2"),
        ("other", "GET /x?t=s1"),
        ("url", "u"),
        ("other", "Cookie: c1"),
        ("header", "a"),
        ("other", "B: b1"),
        ("other", ["C"]),
        ("sql", "SELECT 1"),
    ]


def test_unknown_keys_and_mistyped_schema_keys_are_offered() -> None:
    event = {
        "event": "call",
        "id": 1,
        "note": "n1",  # unknown event key: its value (the key is a field name of the format)
        "method_id": {"x": "s1"},  # a schema key of the wrong type
        "receiver": {"class": {"c": "s2"}, "value": "v", "alice@x.io": "s3", "labels": ["l"]},
        "http_server_request": {"path_info": "/p", "authorization": "Bearer s4", "qs": "s5"},
        "sql_query": {"sql": "q", "database_type": "pg", "params": ["s6"]},
        "exceptions": [{"class": "E", "message": "m", "trace": "s7"}],
    }
    found = captured_values(event)
    assert found == [
        ("other", "n1"),
        ("other", {"x": "s1"}),
        ("other", {"c": "s2"}),
        ("value", "v"),
        ("entry", {"alice@x.io": "s3"}),
        ("path", "/p"),
        ("header", "Bearer s4"),
        ("entry", {"qs": "s5"}),
        ("sql", "q"),
        ("entry", {"params": ["s6"]}),
        ("message", "m"),
        ("entry", {"trace": "s7"}),
    ]


def test_entry_replacements_replace_the_key_too() -> None:
    event = {"receiver": {"class": "C", "value": "v", "alice@x.io": "s3"}}

    def mask(kind: str, value: Any, context: Any) -> Any:
        if kind == captured.ENTRY:
            return {"<k>": "<v>"}
        return value

    rewrite_event(event, mask)
    assert event["receiver"] == {"class": "C", "value": "v", "<k>": "<v>"}


def test_metadata_messages_of_any_shape_are_offered() -> None:
    metadata = {"exception": "boom s1", "test_failure": {"message": ["s2"], "extra": "s3"}}
    seen: list[Any] = []
    rewrite_metadata(metadata, lambda kind, value, context: seen.append((kind, value)) or value)
    assert seen == [("message", "boom s1"), ("message", ["s2"]), ("entry", {"extra": "s3"})]


def test_text_in_a_numeric_schema_key_is_offered() -> None:
    event = {
        "event": "return",
        "elapsed": "s1",
        "return_value": {"class": "str", "value": "v", "object_id": "s2", "size": "s3"},
        "http_server_response": {"status_code": "200 s4"},
        "exceptions": [{"class": "E", "message": "m", "object_id": "s5", "lineno": "s6"}],
    }
    assert [v for _k, v in captured_values(event)] == [
        "s1",
        "v",
        "s2",
        "s3",
        "200 s4",
        "m",
        "s5",
        "s6",
    ]
