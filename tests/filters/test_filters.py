"""The filter state: decoding, round trips, merge rules, and AppMap's filter goldens (corpus D)."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from tests.conftest import CORPUS, DocBuilder
from tracetool.errors import UsageError
from tracetool.filters import (
    FilterState,
    apply_filter,
    decode,
    encode,
    is_local_path,
    merge,
    to_json,
)
from tracetool.trace import from_data, load
from tracetool.trace.slim import load_slim

MODELS = CORPUS / "packages/models/tests/unit/fixtures"
PETCLINIC = (
    MODELS
    / "org_springframework_samples_petclinic_web_VisitControllerTests_testShowVisits.appmap.json"
)
LOAD_PET = "function:org/springframework/samples/petclinic/web/VisitController#loadPetWithVisit"
STATS = CORPUS / "packages/cli/tests/unit/fixtures/stats/appmap"
MICROPOSTS = STATS / "Microposts_interface_micropost_interface.appmap.json"
PRUNE_GOLDEN_FILTER = {
    "hideName": [
        "function:logger/Logger::LogDevice#write",
        "function:activerecord/ActiveRecord::Relation#records",
        "function:actionpack/ActionDispatch::Request::Session#[]",
    ],
    "limitRootEvents": False,
    "hideMediaRequests": False,
}

pytestmark = pytest.mark.skipif(not MODELS.is_dir(), reason="shared corpus not found")


def _ids(doc: Any) -> list[int]:
    return [e["id"] for e in doc.events]


# ---------------------------------------------------------------- decoding


SAMPLE = {
    "hideName": ["function:a/B#c"],
    "hideTree": ["package:x"],
    "context": ["class:a/B"],
    "contextDepth": 2,
    "limitRootEvents": False,
    "hideElapsedTimeUnder": 5,
}


@pytest.mark.parametrize(
    "form",
    [
        lambda raw: raw.decode(),
        lambda raw: base64.b64encode(raw).decode(),
        lambda raw: base64.b64encode(raw).decode().rstrip("="),
        lambda raw: base64.urlsafe_b64encode(raw).decode(),
        lambda raw: base64.urlsafe_b64encode(raw).decode().rstrip("="),
        lambda raw: quote(raw.decode()),
        lambda raw: "  " + raw.decode() + "\n",
    ],
    ids=["json", "b64", "b64-nopad", "b64url", "b64url-nopad", "percent", "spaces"],
)
def test_every_encoding_decodes_to_the_same_state(form: Any) -> None:
    raw = orjson.dumps(SAMPLE)
    state = decode(form(raw))
    assert state == decode(SAMPLE)
    assert state.hide_tree == ("package:x",) and state.context_depth == 2
    assert state.hide_elapsed_time_under == 5 and not state.limit_root_events


def test_editor_recording_state_decodes_its_filters() -> None:
    copied = {
        "currentView": "viewSequence",
        "selectedObject": "class:app/models/User",
        "filters": {
            "hideMediaRequests": False,
            "hideName": ["package:logger"],
            "hideElapsedTimeUnder": False,
            "bogus": True,
        },
    }
    state = decode(base64.urlsafe_b64encode(json.dumps(copied).encode()).decode().rstrip("="))
    assert state.hide_name == ("package:logger",) and not state.hide_media_requests
    assert state.hide_elapsed_time_under is None
    assert state.unknown == ("bogus",)


def test_unknown_keys_are_reported_not_dropped_silently() -> None:
    state = decode('{"hideNmae": ["x"], "limitRootEvents": false}')
    assert state.unknown == ("hideNmae",)
    assert state.hide_name == () and not state.limit_root_events


def test_aliases_and_false_values() -> None:
    state = decode(
        {"hideExternalPaths": ["vendor", "site-packages"], "hideNames": ["a"], "hideTree": False}
    )
    assert state.hide_external and state.dependency_folders == ("vendor", "site-packages")
    assert state.hide_name == ("a",) and state.hide_tree == ()
    assert decode({"hideExternal": True}).dependency_folders == ("vendor", "node_modules")


@pytest.mark.parametrize(
    "bad",
    [
        "not json at all!",
        "[1, 2]",
        '{"hideName": 3}',
        '{"limitRootEvents": "yes"}',
        '{"contextDepth": -1}',
        '{"hideElapsedTimeUnder": "soon"}',
        "",
    ],
)
def test_bad_filters_fail_with_one_line(bad: str) -> None:
    with pytest.raises(UsageError) as info:
        decode(bad)
    assert "\n" not in str(info.value) and str(info.value).startswith("--filter")


def test_serialization_is_lossless_and_minimal() -> None:
    assert to_json(FilterState()) == {}
    state = decode(SAMPLE)
    assert to_json(state) == {
        "limitRootEvents": False,
        "hideElapsedTimeUnder": 5,
        "hideName": ["function:a/B#c"],
        "hideTree": ["package:x"],
        "context": ["class:a/B"],
        "contextDepth": 2,
    }
    assert decode(to_json(state)) == state
    token = encode(state)
    assert "=" not in token and "+" not in token and "/" not in token
    assert decode(token) == state


def test_merge_rules() -> None:
    a = decode(
        {
            "hideName": ["b", "a"],
            "hideElapsedTimeUnder": 10,
            "limitRootEvents": False,
            "hideTree": ["t1"],
            "context": ["c1"],
        }
    )
    b = decode(
        {
            "hideName": ["c", "a"],
            "hideElapsedTimeUnder": 3,
            "limitRootEvents": True,
            "hideMediaRequests": False,
            "hideTree": ["t2"],
            "contextDepth": 3,
        }
    )
    m = merge(a, b)
    assert m.hide_name == ("a", "b", "c")
    assert m.hide_elapsed_time_under == 3
    assert m.limit_root_events is False  # the first state that sets it wins
    assert m.hide_media_requests is False
    assert m.hide_tree == ("t1", "t2") and m.context == ("c1",) and m.context_depth == 3
    assert merge(FilterState(), FilterState()) == FilterState()


# ---------------------------------------------------------------- AppMap goldens (corpus D)


@pytest.mark.parametrize(
    ("depth", "golden"),
    [
        (1, "appMapFilter/loadPetWithVisit_depth_1.appmap.json"),
        (3, "appMapFilter/loadPetWithVisit.appmap.json"),
    ],
)
def test_context_depth_goldens(depth: int, golden: str) -> None:
    out = apply_filter(load(PETCLINIC), decode({"context": [LOAD_PET], "contextDepth": depth}))
    expected = orjson.loads((MODELS / golden).read_bytes())
    assert _ids(out) == [e["id"] for e in expected["events"]]


def test_sql_context_golden() -> None:
    source = load(MODELS / "list_microposts_compact.appmap.json")
    query = 'query:DELETE FROM "microposts" WHERE "microposts"."id" = ?'
    out = apply_filter(source, decode({"context": [query]}))
    expected = orjson.loads(
        (MODELS / "appMapFilter/listMicropostsCompactAppMap_sql_context.appmap.json").read_bytes()
    )
    assert _ids(out) == [e["id"] for e in expected["events"]]
    assert len(source.events) == 54  # the input is untouched


def test_root_objects_numbers_from_appmap_filter_spec() -> None:
    doc = load(PETCLINIC)
    assert (
        len(apply_filter(doc, decode({"rootObjects": [LOAD_PET], "limitRootEvents": False})).events)
        == 14
    )
    cls = "class:org/springframework/samples/petclinic/web/VisitController"
    assert (
        len(apply_filter(doc, decode({"rootObjects": [cls], "limitRootEvents": False})).events)
        == 32
    )
    assert apply_filter(doc, decode({"rootObjects": ["class:nope"]})).events == []


def test_prune_filter_golden_on_slim_and_full_documents() -> None:
    for doc in (load(MICROPOSTS), load_slim(MICROPOSTS)):
        assert len(doc.events) == 3526
        assert len(apply_filter(doc, decode(PRUNE_GOLDEN_FILTER)).events) == 2184


def test_filtered_document_stays_consistent() -> None:
    out = apply_filter(load(MICROPOSTS), decode(PRUNE_GOLDEN_FILTER))
    calls = {e["id"] for e in out.events if e["event"] == "call"}
    assert all(e["parent_id"] in calls for e in out.events if e["event"] == "return")
    names = json.dumps(out.class_map)
    assert "LogDevice" not in names  # code objects without events left the classMap


# ---------------------------------------------------------------- each step on small documents


def _app(builder: DocBuilder) -> dict[str, Any]:
    """GET /page → Controller#show → [Helper#fmt (labeled), vendor Lib#x, /abs Abs#y, SQL]."""
    b = builder
    b.class_map = [
        {
            "name": "app",
            "type": "package",
            "children": [
                {
                    "name": "Controller",
                    "type": "class",
                    "children": [
                        {
                            "name": "show",
                            "type": "function",
                            "location": "app/controller.py:1",
                            "static": False,
                        }
                    ],
                },
                {
                    "name": "Helper",
                    "type": "class",
                    "children": [
                        {
                            "name": "fmt",
                            "type": "function",
                            "location": "app/helper.py:2",
                            "static": False,
                            "labels": ["format"],
                        }
                    ],
                },
            ],
        },
        {
            "name": "vendor/lib",
            "type": "package",
            "children": [
                {
                    "name": "Lib",
                    "type": "class",
                    "children": [
                        {
                            "name": "x",
                            "type": "function",
                            "location": "vendor/lib/lib.py:3",
                            "static": False,
                        }
                    ],
                }
            ],
        },
        {
            "name": "abs",
            "type": "package",
            "children": [
                {
                    "name": "Abs",
                    "type": "class",
                    "children": [
                        {
                            "name": "y",
                            "type": "function",
                            "location": "/usr/lib/abs.py:4",
                            "static": False,
                        }
                    ],
                }
            ],
        },
    ]
    setup = b.function("Setup", "boot", "app/setup.py", 9)
    b.ret(setup)
    req = b.call(http_server_request={"request_method": "GET", "path_info": "/page"})
    show = b.function("Controller", "show", "app/controller.py", 1)
    fmt = b.function("Helper", "fmt", "app/helper.py", 2)
    b.ret(fmt, elapsed=0.0001)
    lib = b.function("Lib", "x", "vendor/lib/lib.py", 3)
    b.ret(lib)
    ab = b.function("Abs", "y", "/usr/lib/abs.py", 4)
    b.ret(ab)
    q = b.call(sql_query={"sql": "SELECT 1", "database_type": "sqlite"})
    b.ret(q)
    b.ret(show, elapsed=0.02)
    b.ret(req, elapsed=0.03, http_server_response={"status_code": 200})
    css = b.call(http_server_request={"request_method": "GET", "path_info": "/app.css"})
    b.ret(css, http_server_response={"status_code": 200})
    img = b.call(http_server_request={"request_method": "POST", "path_info": "/upload"})
    b.ret(img, http_server_response={"status_code": 200, "headers": {"Content-Type": "image/png"}})
    return b.doc()


def _names(doc: Any) -> list[str]:
    out = []
    for e in doc.events:
        if e["event"] != "call":
            continue
        if "method_id" in e:
            out.append(e["method_id"])
        elif "http_server_request" in e:
            out.append(e["http_server_request"]["path_info"])
        else:
            out.append("sql")
    return out


def test_default_filter_limits_roots_and_hides_media(builder: DocBuilder) -> None:
    doc = from_data(_app(builder))
    assert _names(apply_filter(doc, FilterState())) == ["/page", "show", "fmt", "x", "y", "sql"]


def test_each_declutter_step(builder: DocBuilder) -> None:
    doc = from_data(_app(builder))
    assert _names(apply_filter(doc, decode({"hideUnlabeled": True}))) == ["/page", "fmt", "sql"]
    assert _names(apply_filter(doc, decode({"hideExternal": True}))) == [
        "/page",
        "show",
        "fmt",
        "sql",
    ]
    assert _names(apply_filter(doc, decode({"hideElapsedTimeUnder": 10}))) == ["/page", "show"]
    assert _names(apply_filter(doc, decode({"hideName": ["class:app/Controller"]}))) == [
        "/page",
        "fmt",
        "x",
        "y",
        "sql",
    ]
    assert _names(apply_filter(doc, decode({"hideName": ["label:form*"]}))) == [
        "/page",
        "show",
        "x",
        "y",
        "sql",
    ]
    # hideTree keeps the matching call and hides what is below it
    assert _names(apply_filter(doc, decode({"hideTree": ["function:app/Controller#show"]}))) == [
        "/page",
        "show",
    ]
    assert _names(apply_filter(doc, decode({"hideName": ["/^function:(abs|vendor)/"]}))) == [
        "/page",
        "show",
        "fmt",
        "sql",
    ]
    assert _names(apply_filter(doc, decode({"hideName": ["package:vendor*"]}))) == [
        "/page",
        "show",
        "fmt",
        "y",
        "sql",
    ]
    everything = decode({"limitRootEvents": False, "hideMediaRequests": False})
    assert _names(apply_filter(doc, everything))[0] == "boot"
    assert len(_names(apply_filter(doc, everything))) == 9


def test_context_keeps_root_and_near_ancestors(builder: DocBuilder) -> None:
    doc = from_data(_app(builder))
    out = apply_filter(doc, decode({"context": ["function:app/Helper#fmt"], "contextDepth": 0}))
    assert _names(out) == ["/page", "fmt"]


def test_local_paths() -> None:
    folders = {"vendor", "node_modules"}
    assert is_local_path("app/models/user.rb:3", folders)
    assert not is_local_path("vendor/bundle/x.rb:3", folders)
    assert not is_local_path("/usr/lib/python3/x.py:1", folders)
    assert not is_local_path("<internal:kernel>:1", folders)
    assert not is_local_path("C:\\code\\x.py:1", folders)
    assert not is_local_path("JSON::Ext::Generator::State#generate", folders)
    assert not is_local_path(None, folders)


def test_minimal_calls_bind_as_their_code_objects() -> None:
    """`bind_calls` of `MinimalEvent`s (request contents skipped, so all server requests, and
    all client requests, bind alike: one lookup each) gives what `code_object_for` gives."""
    import msgspec

    from tracetool.filters.apply import BindState, bind_calls
    from tracetool.trace.codeobjects import ClassMap
    from tracetool.trace.slim import MinimalEvent

    texts = [
        b'{"event":"call","id":1,"defined_class":"A","method_id":"f","path":"a.rb","lineno":3}',
        b'{"event":"call","id":2,"http_client_request":{"request_method":"GET","url":"http://x/y"}}',
        b'{"event":"call","id":3,"http_client_request":{"request_method":"POST","url":"http://z"}}',
        b'{"event":"call","id":4,"http_server_request":{"request_method":"GET","path_info":"/a"}}',
        b'{"event":"call","id":5,"sql_query":{"sql":"SELECT 1"}}',
        b'{"event":"call","id":6,"message":[]}',
        b'{"event":"call","id":7,"http_client_request":{"url":"http://q"},"sql_query":{}}',
        b'{"event":"call","id":8,"http_server_request":{},"http_client_request":{}}',
    ]
    calls = [msgspec.json.decode(text, type=MinimalEvent) for text in texts]
    for sql_names in (False, True):
        cmap = ClassMap.from_json([])
        expected = [cmap.code_object_for(call) for call in calls]
        state = BindState(cmap, sql_names=sql_names)
        bound = bind_calls(calls + calls, cmap, state)
        if not sql_names:  # every SQL call binds to the one unnamed query
            expected[4] = expected[6] = state.unnamed
        assert [co.fqid for co in bound] == [co.fqid for co in expected + expected]
