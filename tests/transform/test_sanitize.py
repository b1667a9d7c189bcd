"""`sanitize`: one or more tests per numbered spec rule (rules 9 and 11 also in test_cli.py)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from tests.transform.conftest import needs_sql, param
from tracetool import __version__
from tracetool.trace import from_data
from tracetool.transform.sanitize import SanitizeOptions, sanitize, sanitize_bytes

UUID = "123e4567-e89b-12d3-a456-426614174000"


def _run(doc: dict[str, Any], *allow: str, raw: bytes | None = None) -> tuple[dict[str, Any], Any]:
    out, report = sanitize_bytes(
        raw if raw is not None else orjson.dumps(doc), SanitizeOptions(frozenset(allow)), "s.json"
    )
    assert out is not None
    return orjson.loads(out), report


def _http(builder, path: str, template: str | None = None, **headers: str) -> int:
    req: dict[str, Any] = {"request_method": "GET", "path_info": path, "protocol": "HTTP/1.1"}
    if template:
        req["normalized_path_info"] = template
    if headers:
        req["headers"] = headers
    return builder.call(http_server_request=req)


# --- rule 1: numbering, identity across parameter / return value / header ---------------------


def test_rule1_tokens_in_order_of_first_appearance_same_value_same_token(builder) -> None:
    http = _http(builder, "/x", "/x", Authorization="s3cr3t-key")
    call = builder.function("app.Auth", "check", "app/auth.py", 3)
    builder.events[-1]["parameters"] = [param("key", "'s3cr3t-key'"), param("user", "alice")]
    builder.ret(call, return_value=param(None, "alice"))
    builder.ret(http, http_server_response={"status_code": 200, "headers": {"X-Key": "s3cr3t-key"}})
    out, report = _run(builder.doc())
    req, fn, ret, resp = out["events"]
    # path_info "/x" (routed) is v1, the header value v2
    assert req["http_server_request"]["path_info"] == "<v1>"
    assert req["http_server_request"]["headers"]["Authorization"] == "<v2>"
    assert [p["value"] for p in fn["parameters"]] == ["<v2>", "<v3>"]
    assert ret["return_value"]["value"] == "<v3>"
    assert resp["http_server_response"]["headers"]["X-Key"] == "<v2>"
    assert report.values_tokenized == 3


# --- rule 2: kind annotations ----------------------------------------------------------------


def test_rule2_kind_annotations(builder) -> None:
    call = builder.function("A", "f", "a.py", 1)
    values = [UUID, "2024-05-01T10:00:00Z", "deadbeef42", "17", "jo@x.org", "plain"]
    builder.events[-1]["parameters"] = [param(f"p{i}", v) for i, v in enumerate(values)]
    builder.ret(call)
    out, _ = _run(builder.doc())
    assert [p["value"] for p in out["events"][0]["parameters"]] == [
        "<uuid:v1>",
        "<iso8601:v2>",
        "<hex:v3>",
        "<int:v4>",
        "<email:v5>",
        "<v6>",
    ]


# --- rule 3: a namespace per file ------------------------------------------------------------


def test_rule3_each_file_has_its_own_namespace(builder) -> None:
    def doc_with(*values: str) -> dict[str, Any]:
        data = copy.deepcopy(builder.doc())
        data["events"] = [
            {
                "id": 1,
                "event": "call",
                "thread_id": 1,
                "method_id": "f",
                "parameters": [param("a", v) for v in values],
            },
            {"id": 2, "event": "return", "thread_id": 1, "parent_id": 1},
        ]
        return data

    a, _ = _run(doc_with("alpha", "beta"))
    b, _ = _run(doc_with("beta", "alpha"))
    assert [p["value"] for p in a["events"][0]["parameters"]] == ["<v1>", "<v2>"]
    assert [p["value"] for p in b["events"][0]["parameters"]] == ["<v1>", "<v2>"]  # no correlation


# --- rule 4: normalization first -------------------------------------------------------------


def test_rule4_normalized_before_masking(builder) -> None:
    outer = builder.function("A", "outer", "a.py", 1)
    builder.function("A", "inner", "a.py", 5)  # never returns
    builder.ret(outer)
    data = builder.doc()
    for event in data["events"]:
        event["id"] += 100
        if "parent_id" in event:
            event["parent_id"] += 100
    data["eventUpdates"] = {"102": {**data["events"][1], "parameters": [param("p", "from-update")]}}
    out, _ = _run(data)
    assert "eventUpdates" not in out
    assert [(e["id"], e["event"], e.get("parent_id")) for e in out["events"]] == [
        (1, "call", None),
        (2, "call", None),
        (3, "return", 2),  # synthetic
        (4, "return", 1),
    ]
    assert out["events"][1]["parameters"] == [param("p", "<v1>")]


# --- rule 5: only captured fields --------------------------------------------------------------


def test_rule5_schema_untouched(builder) -> None:
    http = _http(builder, "/orders/9", "/orders/{id}", Accept="text/html")
    call = builder.function("shop.Orders", "show", "shop/orders.py", 40)
    builder.events[-1].update(
        labels=["mvc.controller"],
        receiver=param("self", "<Orders>", "shop.Orders"),
    )
    builder.ret(call, return_value=param(None, "x", "shop.Order"))
    builder.ret(http, http_server_response={"status_code": 200, "mime_type": "text/html"})
    data = builder.doc()
    data["classMap"] = [
        {
            "name": "shop",
            "type": "package",
            "children": [
                {
                    "name": "Orders",
                    "type": "class",
                    "children": [
                        {
                            "name": "show",
                            "type": "function",
                            "location": "shop/orders.py:40",
                            "static": False,
                            "labels": ["mvc.controller"],
                        }
                    ],
                }
            ],
        }
    ]
    data["metadata"].update(
        labels=["slow"], app="shop", recorder={"name": "pytest", "type": "tests"}
    )
    out, _ = _run(data)
    assert out["classMap"] == data["classMap"]
    for key in ("labels", "app", "recorder", "name", "client"):
        assert out["metadata"][key] == data["metadata"][key]
    req = out["events"][0]["http_server_request"]
    assert (req["request_method"], req["normalized_path_info"], req["protocol"]) == (
        "GET",
        "/orders/{id}",
        "HTTP/1.1",
    )
    assert list(req["headers"]) == ["Accept"]
    fn = out["events"][1]
    for key in ("defined_class", "method_id", "path", "lineno", "static", "labels"):
        assert fn[key] == data["events"][1][key]
    assert fn["receiver"] == {
        "name": "self",
        "class": "shop.Orders",
        "value": "<v3>",
        "object_id": 7,
    }
    assert out["events"][2]["return_value"]["class"] == "shop.Order"
    assert out["events"][3]["http_server_response"] == {
        "status_code": 200,
        "mime_type": "text/html",
    }
    assert [e.get("elapsed") for e in out["events"]] == [e.get("elapsed") for e in data["events"]]


def test_git_credentials_are_stripped_during_normalization(builder) -> None:
    data = builder.doc()
    data["metadata"]["git"] = {
        "repository": "https://deploy:ghp_abc123@github.com/o/r.git",
        "branch": "main",
    }
    out, _ = _run(data)
    assert out["metadata"]["git"] == {"repository": "https://github.com/o/r.git", "branch": "main"}


# --- rule 6: SQL --------------------------------------------------------------------------------


@needs_sql
def test_rule6_sql_parameterized_and_unreliable_sql_tokenized(builder) -> None:
    good = builder.call(
        sql_query={
            "database_type": "postgres",
            "sql": "SELECT * FROM users WHERE email = 'a@b.c' AND id = 42 -- k3y",
        }
    )
    builder.ret(good)
    bad = builder.call(
        sql_query={"database_type": "postgres", "sql": "SELECT 'unterminated s3cret"}
    )
    builder.ret(bad)
    again = builder.call(
        sql_query={"database_type": "postgres", "sql": "SELECT 'unterminated s3cret"}
    )
    builder.ret(again)
    out, report = _run(builder.doc())
    assert out["events"][0]["sql_query"] == {
        "database_type": "postgres",
        "sql": "SELECT * FROM users WHERE email = ? AND id = ?",
    }
    assert out["events"][2]["sql_query"]["sql"] == "<sql:v1>"
    assert out["events"][4]["sql_query"]["sql"] == "<sql:v1>"
    assert report.counts["sql_parameterized"] == 1 and report.counts["sql_tokenized"] == 2


@needs_sql
@pytest.mark.parametrize(
    ("database_type", "sql", "expected"),
    [
        # issue 19: SQLite reads "…" in a value position as a string
        (
            "sqlite",
            'SELECT * FROM u WHERE email = "alice@example.com"',
            "SELECT * FROM u WHERE email = ?",
        ),
        ("sqlite", 'SELECT "alice@example.com" FROM u', "<sql:v1>"),  # string or column?
        # text that is not SQL is not "reliably parameterized"
        ("redis", "AUTH sup3rpassw0rd", "<sql:v1>"),
        ("postgres", "SET my.api_key = sk_live_abc123", "<sql:v1>"),
        ("postgres", "garbage k3y-zz9 here", "<sql:v1>"),
    ],
)
def test_rule6_sqlite_strings_and_text_that_is_not_sql(
    builder, database_type: str, sql: str, expected: str
) -> None:
    q = builder.call(sql_query={"database_type": database_type, "sql": sql})
    builder.ret(q)
    out, _report = _run(builder.doc())
    assert out["events"][0]["sql_query"]["sql"] == expected


@needs_sql
def test_rule6_a_bare_string_sql_query_is_sql(builder) -> None:
    q = builder.call(sql_query="SELECT * FROM u WHERE pw = 'hunter2'")
    builder.ret(q)
    out, _report = _run(builder.doc())
    assert out["events"][0]["sql_query"] == "SELECT * FROM u WHERE pw = ?"


# --- rule 7: URLs and paths -------------------------------------------------------------------


def test_rule7_client_url_normalized_to_route_template(builder) -> None:
    call = builder.call(
        http_client_request={
            "request_method": "GET",
            "url": "https://bob:hunter2@api.example.com:8443/v1/users/42/orders/"
            + UUID
            + "/items?token=abc#frag",
        }
    )
    builder.ret(call, http_client_response={"status_code": 200})
    out, report = _run(builder.doc())
    assert out["events"][0]["http_client_request"]["url"] == (
        "https://api.example.com:8443/v1/users/:int/orders/:uuid/items"
    )
    assert report.counts["urls_normalized"] == 1


def test_rule7_server_path_without_template_normalized_alphabetic_kept(builder) -> None:
    http = _http(builder, "/accounts/1234/reset/a8f3k2j4x9m1?sig=zz")
    builder.ret(http, http_server_response={"status_code": 302})
    out, _ = _run(builder.doc())
    assert out["events"][0]["http_server_request"]["path_info"] == "/accounts/:int/reset/:value"
    assert "normalized_path_info" not in out["events"][0]["http_server_request"]


def test_rule7_server_path_with_template_fully_tokenized(builder) -> None:
    http = _http(builder, "/accounts/1234/reset", "/accounts/{id}/reset")
    builder.ret(http, http_server_response={"status_code": 302})
    out, _ = _run(builder.doc())
    req = out["events"][0]["http_server_request"]
    assert req["path_info"] == "<v1>"
    assert req["normalized_path_info"] == "/accounts/{id}/reset"


# --- rule 8: allowlist --------------------------------------------------------------------------


def test_rule8_builtin_and_user_allowlist_exact_whole_value(builder) -> None:
    call = builder.function("A", "f", "a.py", 1)
    values = ["true", "false", "null", "nil", "None", "admin", "admin ", "ADMIN", "'admin'"]
    builder.events[-1]["parameters"] = [param(f"p{i}", v) for i, v in enumerate(values)]
    builder.ret(call, return_value={"class": "NoneType", "value": None})
    out, _ = _run(builder.doc(), "admin")
    assert [p["value"] for p in out["events"][0]["parameters"]] == [
        "true",
        "false",
        "null",
        "nil",
        "None",
        "admin",
        "<v1>",
        "<v2>",
        "'admin'",
    ]
    assert out["events"][1]["return_value"]["value"] is None
    assert out["metadata"]["sanitized"]["allow"] == ["admin"]


# --- rule 10: skip and re-application ---------------------------------------------------------


def _allow_doc(builder) -> dict[str, Any]:
    call = builder.function("A", "f", "a.py", 1)
    builder.events[-1]["parameters"] = [
        param("a", "alpha"),
        param("b", "beta"),
        param("c", "gamma"),
    ]
    builder.ret(call)
    return builder.doc()


def _marker(doc: dict[str, Any]) -> dict[str, Any]:
    """The sanitized marker without its digest (checked by the tests below)."""
    marker = dict(doc["metadata"]["sanitized"])
    assert isinstance(marker.pop("digest"), str)
    return marker


def test_rule10_same_version_same_options_skipped(builder) -> None:
    first, _ = _run(_allow_doc(builder), "alpha")
    out, report = sanitize_bytes(orjson.dumps(first), SanitizeOptions(frozenset({"alpha"})))
    assert out is None and report.status == "skipped"


def test_rule10_reapplication_tightens_and_warns(builder) -> None:
    first, _ = _run(_allow_doc(builder), "alpha", "beta")
    assert [p["value"] for p in first["events"][0]["parameters"]] == ["alpha", "beta", "<v1>"]
    assert _marker(first) == {"version": __version__, "allow": ["alpha", "beta"], "tokens": 1}
    # second run: drops beta (tightens), newly allows gamma (already masked: stays, warning)
    second, report = _run(first, "alpha", "gamma")
    assert [p["value"] for p in second["events"][0]["parameters"]] == ["alpha", "<v2>", "<v1>"]
    assert _marker(second) == {"version": __version__, "allow": ["alpha"], "tokens": 2}
    assert report.values_tokenized == 1
    assert (
        len(report.warnings) == 1
        and "'gamma'" in report.warnings[0]
        and "stays masked" in report.warnings[0]
    )
    # the marker now holds what every run allowed: rerunning with {alpha} is a no-op skip
    out, again = sanitize_bytes(orjson.dumps(second), SanitizeOptions(frozenset({"alpha"})))
    assert out is None and again.status == "skipped"


def test_rule10_a_marked_file_that_still_holds_values_is_sanitized_again(builder) -> None:
    """Issue 19: a marker is trusted only while the file is as sanitize left it."""
    first, _ = _run(_allow_doc(builder))
    # a marker copied onto a recording that was never sanitized
    forged = _allow_doc(builder)
    forged["metadata"]["sanitized"] = first["metadata"]["sanitized"]
    out, report = sanitize_bytes(orjson.dumps(forged), SanitizeOptions())
    assert out is not None and report.status == "sanitized"
    assert "not as sanitize left it" in report.warnings[0]
    values = [p["value"] for p in orjson.loads(out)["events"][0]["parameters"]]
    assert values == ["<v1>", "<v2>", "<v3>"]
    # a sanitized file edited afterwards: the new value is masked, the tokens stay
    first["events"][0]["parameters"][1]["value"] = "s3cr3t-added"
    out, report = sanitize_bytes(orjson.dumps(first), SanitizeOptions())
    assert out is not None and b"s3cr3t" not in out and report.values_tokenized == 1
    # a marker without a digest (hand-written) is not trusted either
    del first["metadata"]["sanitized"]["digest"]
    out, report = sanitize_bytes(orjson.dumps(first), SanitizeOptions())
    assert out is not None and b"s3cr3t" not in out
    # and the result of a run is skipped by the next one: the digest matches
    again, report = sanitize_bytes(out, SanitizeOptions())
    assert again is None and report.status == "skipped"


def test_rule10_other_version_reapplies_keeping_tokens(builder) -> None:
    first, _ = _run(_allow_doc(builder))
    first["metadata"]["sanitized"]["version"] = "0.0.1"
    second, report = _run(first)
    assert second["events"] == first["events"]
    assert report.values_tokenized == 0 and not report.warnings


# --- rule 11: report ----------------------------------------------------------------------------


def test_rule11_report_counts_distinct_values_and_bytes(builder) -> None:
    data = _allow_doc(builder)
    raw = orjson.dumps(data)
    out, report = sanitize_bytes(raw)
    assert out is not None
    assert (report.values_tokenized, report.bytes_before, report.bytes_after) == (
        3,
        len(raw),
        len(out),
    )


# --- other captured data --------------------------------------------------------------------------


def test_exceptions_logs_nested_values_and_metadata_messages_masked(builder) -> None:
    call = builder.function("A", "f", "a.py", 1)
    builder.events[-1]["parameters"] = [
        param(
            "data",
            "{...}",
            "dict",
            properties=[
                {"name": "pw", "class": "str", "value": "hunter2"},
                {"name": "xs", "class": "list", "items": [{"class": "str", "value": "deep"}]},
            ],
        )
    ]
    builder.ret(
        call,
        exceptions=[
            {"class": "KeyError", "message": "no key hunter2", "path": "a.py", "lineno": 2}
        ],
    )
    log = builder.call(message=[param("message", "user jo@x.org logged in")])
    builder.ret(log)
    data = builder.doc()
    data["metadata"]["test_failure"] = {"message": "assert 'hunter2' == 'x'", "location": "t.py:9"}
    out, _ = _run(data)
    props = out["events"][0]["parameters"][0]["properties"]
    assert props[0]["value"] == "<v3>" and props[1]["items"][0]["value"] == "<v4>"
    assert out["events"][1]["exceptions"][0] == {
        "class": "KeyError",
        "message": "<v5>",
        "path": "a.py",
        "lineno": 2,
    }
    assert out["events"][2]["message"][0]["value"] == "<v6>"
    assert out["metadata"]["test_failure"] == {"message": "<v1>", "location": "t.py:9"}


def test_pure_form_does_not_modify_its_input(builder) -> None:
    data = _allow_doc(builder)
    doc = from_data(copy.deepcopy(data))
    result, report = sanitize(doc)
    assert doc.data == data
    assert [p["value"] for p in result.events[0]["parameters"]] == ["<v1>", "<v2>", "<v3>"]
    assert report.status == "sanitized"


@pytest.mark.parametrize("indent", [False, True])
def test_indented_input_and_event_order_agnostic_keys(builder, indent: bool) -> None:
    data = _allow_doc(builder)
    reordered = {"events": data["events"], "classMap": [], "metadata": data["metadata"]}
    raw = orjson.dumps(reordered, option=orjson.OPT_INDENT_2 if indent else 0)
    out, _ = _run({}, raw=raw)
    assert list(out) == ["events", "classMap", "metadata"]
    assert out["metadata"]["sanitized"]["tokens"] == 3


def test_sql_module_failure_masks_the_statement_whole(builder, monkeypatch) -> None:
    import sys
    import types

    from tracetool.transform import sanitize as module

    fake = types.ModuleType("tracetool.sql")

    def parameterize(sql: str, database_type: Any = None) -> tuple[str, bool]:
        raise RuntimeError("parser bug")

    fake.parameterize = parameterize  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tracetool.sql", fake)
    module._parameterize.cache_clear()
    q = builder.call(sql_query={"database_type": "sqlite", "sql": "SELECT 'k3y-zz9'"})
    builder.ret(q)
    try:
        out, report = _run(builder.doc())
    finally:
        module._parameterize.cache_clear()
    assert out["events"][0]["sql_query"]["sql"] == "<sql:v1>"
    assert report.counts["sql_tokenized"] == 1
