"""`trim`: spec rules, marker, repeated runs, and the pure in-memory form."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from tests.transform.conftest import param
from tracetool import __version__
from tracetool.errors import UsageError
from tracetool.trace import from_data
from tracetool.transform.trim import TrimOptions, trim, trim_bytes

LONG = "x" * 300


def _doc(builder) -> dict[str, Any]:
    call = builder.function("app.Svc", "run", "app/svc.py", 10)
    ev = builder.events[-1]
    ev["receiver"] = param("self", "<Svc " + "r" * 200 + ">", "app.Svc")
    ev["parameters"] = [
        param("short", "ok"),
        param(
            "data",
            "{" + "d" * 200 + "}",
            "dict",
            properties=[
                {"name": "a", "class": "str", "value": "a" * 150},
                {"name": "n", "class": "list", "items": [{"class": "str", "value": "i" * 130}]},
            ],
        ),
    ]
    builder.ret(
        call,
        return_value=param(None, LONG),
        exceptions=[{"class": "E", "message": "m" * 400, "path": "app/svc.py", "lineno": 12}],
    )
    log = builder.function("logging.Logger", "info", "logging/__init__.py", 1470)
    builder.events[-1]["parameters"] = [param("msg", "log " + "l" * 200)]
    builder.ret(log)
    http = builder.call(
        http_server_request={
            "request_method": "GET",
            "path_info": "/p/" + "9" * 200,
            "headers": {"Cookie": "c" * 300},
        },
        message=[param("q", "q" * 200)],
    )
    builder.ret(http, http_server_response={"status_code": 200, "headers": {"X": "h" * 300}})
    sql = builder.call(sql_query={"database_type": "sqlite", "sql": "SELECT " + "1," * 200 + "1"})
    builder.ret(sql)
    doc = builder.doc()
    doc["metadata"]["test_failure"] = {"message": "f" * 500, "location": "t.py:1"}
    doc["classMap"] = [{"name": "app", "type": "package", "children": []}]
    return doc


def _trimmed(doc: dict[str, Any], cap: int = 120) -> tuple[dict[str, Any], Any]:
    out, report = trim_bytes(orjson.dumps(doc), TrimOptions(cap), "t.trace.json")
    assert out is not None
    return orjson.loads(out), report


def test_plain_strings_capped_with_ellipsis_to_exactly_max_length(builder) -> None:
    out, report = _trimmed(_doc(builder))
    ret = out["events"][1]
    assert ret["return_value"]["value"] == "x" * 119 + "…"
    assert len(ret["return_value"]["value"]) == 120
    assert ret["exceptions"][0]["message"] == "m" * 119 + "…"
    assert out["events"][0]["receiver"]["value"].endswith("…")
    assert out["events"][0]["parameters"][0]["value"] == "ok"  # short: untouched
    assert out["events"][2]["parameters"][0]["value"] == "log " + "l" * 115 + "…"  # log message
    assert out["metadata"]["test_failure"]["message"] == "f" * 119 + "…"
    assert out["metadata"]["test_failure"]["location"] == "t.py:1"
    assert report.values_trimmed == 9


def test_structured_values_are_budgeted_per_field(builder) -> None:
    out, _ = _trimmed(_doc(builder), cap=50)
    data = out["events"][0]["parameters"][1]
    assert data["value"] == "{" + "d" * 48 + "…"
    assert data["properties"][0]["value"] == "a" * 49 + "…"
    assert data["properties"][1]["items"][0]["value"] == "i" * 49 + "…"
    assert [p["name"] for p in data["properties"]] == ["a", "n"]


def test_headers_paths_and_sql_are_not_trimmed_and_everything_else_is_kept(builder) -> None:
    doc = _doc(builder)
    out, _ = _trimmed(doc)
    assert len(out["events"]) == len(doc["events"])
    http = out["events"][4]
    assert http["http_server_request"] == doc["events"][4]["http_server_request"]
    assert http["message"][0]["value"] == "q" * 119 + "…"  # request params are parameters
    assert out["events"][5]["http_server_response"] == doc["events"][5]["http_server_response"]
    assert out["events"][6]["sql_query"] == doc["events"][6]["sql_query"]
    assert out["classMap"] == doc["classMap"]
    # everything but the trimmed strings is equal
    expected = copy.deepcopy(doc)
    for ev_out, ev_in in zip(out["events"], expected["events"]):
        assert set(ev_out) == set(ev_in)
        for key in ("id", "event", "thread_id", "parent_id", "defined_class", "method_id", "path"):
            assert ev_out.get(key) == ev_in.get(key)


def test_marker_records_version_and_cap(builder) -> None:
    out, report = _trimmed(_doc(builder), cap=80)
    assert out["metadata"]["trimmed"] == {"version": __version__, "max_length": 80}
    assert report.status == "trimmed" and report.max_length == 80


def test_same_cap_same_version_is_skipped(builder) -> None:
    first, _ = _trimmed(_doc(builder))
    out, report = trim_bytes(orjson.dumps(first), TrimOptions(120))
    assert out is None and report.status == "skipped"


def test_other_version_same_cap_is_reapplied_idempotently(builder) -> None:
    first, _ = _trimmed(_doc(builder))
    first["metadata"]["trimmed"]["version"] = "0.0.1"
    again, report = _trimmed(first)
    assert report.status == "trimmed" and report.values_trimmed == 0
    assert again["events"] == first["events"]
    assert again["metadata"]["trimmed"] == {"version": __version__, "max_length": 120}


def test_smaller_cap_truncates_further_and_is_recorded(builder) -> None:
    first, _ = _trimmed(_doc(builder), cap=120)
    second, report = _trimmed(first, cap=40)
    assert second["events"][1]["return_value"]["value"] == "x" * 39 + "…"
    assert second["metadata"]["trimmed"]["max_length"] == 40
    assert not report.warnings


def test_larger_cap_warns_values_not_restored_and_marker_keeps_smallest(builder) -> None:
    first, _ = _trimmed(_doc(builder), cap=40)
    second, report = _trimmed(first, cap=200)
    assert second["events"][1]["return_value"]["value"] == "x" * 39 + "…"
    assert second["metadata"]["trimmed"]["max_length"] == 40
    assert len(report.warnings) == 1
    assert "cannot restore" in report.warnings[0] and "40" in report.warnings[0]


def test_event_updates_are_trimmed_too(builder) -> None:
    doc = _doc(builder)
    doc["eventUpdates"] = {"2": {**doc["events"][1], "return_value": param(None, "u" * 500)}}
    out, _ = _trimmed(doc)
    assert out["eventUpdates"]["2"]["return_value"]["value"] == "u" * 119 + "…"


def test_non_string_values_are_capped_leaf_by_leaf(builder) -> None:
    call = builder.function("A", "f", "a.py", 1)
    builder.events[-1]["parameters"] = [param("l", ["s" * 200, 5, {"k": "v" * 200}], "list")]
    builder.ret(call)
    out, _ = _trimmed(builder.doc(), cap=10)
    assert out["events"][0]["parameters"][0]["value"] == ["s" * 9 + "…", 5, {"k": "v" * 9 + "…"}]


def test_unicode_is_cut_by_characters_not_bytes(builder) -> None:
    call = builder.function("A", "f", "a.py", 1)
    builder.events[-1]["parameters"] = [param("s", "é" * 30)]
    builder.ret(call)
    out, _ = _trimmed(builder.doc(), cap=10)
    assert out["events"][0]["parameters"][0]["value"] == "é" * 9 + "…"


def test_pure_form_does_not_modify_its_input(builder) -> None:
    data = _doc(builder)
    doc = from_data(copy.deepcopy(data))
    result, report = trim(doc, TrimOptions(30))
    assert doc.data == data
    assert result.events[1]["return_value"]["value"] == "x" * 29 + "…"
    assert report.bytes_after < report.bytes_before


@pytest.mark.parametrize("cap", [0, -5])
def test_cap_must_be_positive(cap: int) -> None:
    with pytest.raises(UsageError):
        TrimOptions(cap)


def test_cap_of_one_keeps_only_the_ellipsis(builder) -> None:
    out, _ = _trimmed(_doc(builder), cap=1)
    assert out["events"][1]["return_value"]["value"] == "…"
    assert out["events"][0]["parameters"][0]["value"] == "…"
