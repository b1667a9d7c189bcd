"""Diagrams of events decoded as structs (`load_slim(structs=True)`, what `diagram_of` reads)
are those of the same events decoded as dicts, odd recordings included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import CORPUS
from tracetool.diagram.builder import DiagramOptions, build_diagram
from tracetool.diagram.service import render_bytes
from tracetool.filters import FilterState
from tracetool.trace.slim import SlimCall, SlimReturn, load_slim

CLASS_MAP = [
    {
        "type": "package",
        "name": "app",
        "children": [
            {
                "type": "class",
                "name": "User",
                "children": [
                    {
                        "type": "function",
                        "name": "save",
                        "location": "app/user.rb:3",
                        "static": False,
                        "labels": ["persist"],
                    }
                ],
            }
        ],
    }
]


def _call(i: int, **fields: Any) -> dict[str, Any]:
    base = {"id": i, "event": "call", "thread_id": 1}
    base.update(fields)
    return base


def _ret(i: int, parent: int | None, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": i, "event": "return", "thread_id": 1, "elapsed": 0.5}
    if parent is not None:
        base["parent_id"] = parent
    base.update(fields)
    return base


FN = {"defined_class": "User", "method_id": "save", "path": "app/user.rb", "lineno": 3}
REQUEST = {"request_method": "GET", "path_info": "/users/1", "normalized_path_info": "/users/:id"}

EVENTS = [
    _call(1, http_server_request=REQUEST),
    _call(2, static=False, labels=["a", "b"], **FN),
    _call(3, sql_query={"sql": "SELECT 1", "database_type": "sqlite"}),
    _ret(4, 3),
    _call(5, sql_query=None),  # a null sql_query: `in` still holds, as for a dict
    _ret(6, None, return_value=None, exceptions=[{"class": "Boom"}]),
    _call(7, method_id=None, defined_class="Odd", labels=None),
    _ret(8, 7, return_value={"class": "Hash", "properties": [{"name": "a", "class": "Int"}]}),
    _call(9, http_client_request={"request_method": "POST", "url": "http://svc:81/x"}),
    _ret(10, 9, http_client_response={"status_code": 201}),
    _ret(11, 2, return_value={"class": "User", "value": "#<User>"}),
    _call(12, **FN),  # never returns
    _ret(13, 1, http_server_response={"status_code": 200, "mime_type": "text/html"}),
    {"id": 14, "event": "call", "thread_id": 2, **FN, "static": True},
    {"id": 15, "event": "return", "thread_id": 2, "parent_id": 14, "elapsed": None},
]


def _write(tmp_path: Path, events: list[Any], **extra: Any) -> Path:
    doc = {"version": "1.12", "metadata": {}, "classMap": CLASS_MAP, "events": events, **extra}
    path = tmp_path / "odd.appmap.json"
    path.write_bytes(orjson.dumps(doc))
    return path


def _both(path: Path, filter: FilterState | None = None) -> None:
    for options in (DiagramOptions(), DiagramOptions(loops=False, expand=("package:app",))):
        as_dicts = build_diagram(load_slim(path, extras=False), options, filter)
        as_structs = build_diagram(load_slim(path, extras=False, structs=True), options, filter)
        for fmt in ("json", "plantuml"):
            assert render_bytes(as_structs, fmt) == render_bytes(as_dicts, fmt)


def test_odd_events_as_structs(tmp_path: Path) -> None:
    path = _write(tmp_path, EVENTS)
    events = load_slim(path, structs=True).events
    assert {type(e) for e in events} == {SlimCall, SlimReturn}
    assert "sql_query" in events[4] and events[4].get("sql_query") is None
    assert "labels" not in events[6] and "method_id" in events[6]
    assert events[1].to_dict() == {"event": "call", "id": 2, "thread_id": 1, "static": False,
                                   "labels": ["a", "b"], **FN}  # fmt: skip
    _both(path)
    _both(path, FilterState(hide_name=("class:app/User",)))


def test_event_updates_as_structs(tmp_path: Path) -> None:
    update = _ret(11, 2, return_value={"class": "Admin"})
    path = _write(tmp_path, EVENTS, eventUpdates={"11": update, "4": "not an object"})
    _both(path)
    path = _write(tmp_path, EVENTS, eventUpdates={"11": update})
    assert isinstance(load_slim(path, structs=True).event_updates["11"], SlimReturn)
    _both(path)


@pytest.mark.parametrize(
    "odd",
    [
        {"id": 16, "event": "other", "thread_id": 1},  # neither a call nor a return
        {"id": 16, "thread_id": 1},  # no `event`
        "not an object",
        _call(16, sql_query="SELECT 2"),  # a bare-string sql_query (tolerated)
    ],
)
def test_what_structs_do_not_hold_is_read_as_dicts(tmp_path: Path, odd: Any) -> None:
    path = _write(tmp_path, [*EVENTS, odd])
    assert not any(
        isinstance(e, (SlimCall, SlimReturn)) for e in load_slim(path, structs=True).events
    )
    _both(path)


@pytest.mark.parametrize(
    "rel",
    [
        "packages/models/tests/unit/fixtures/checkout_update_payment.appmap.json",
        "packages/models/tests/unit/fixtures/large_scenario.json",
    ],
)
def test_corpus_as_structs(rel: str) -> None:
    path = CORPUS / rel
    if not path.exists():
        pytest.skip("corpus not present")
    _both(path)
