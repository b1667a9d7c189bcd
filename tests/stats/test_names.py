"""tracetool.stats._names names calls exactly as ClassMap.code_object_for does."""

from __future__ import annotations

from typing import Any

from tests.conftest import corpus_recordings
from tracetool.stats._names import Names
from tracetool.trace import load
from tracetool.trace.codeobjects import ClassMap


def _check(class_map: Any, calls: list[dict[str, Any]], names: Names) -> int:
    expected_map = ClassMap.from_json(class_map)
    recording = names.recording(class_map)
    for call in calls:
        obj = expected_map.code_object_for(call)
        assert recording.function(call) == (obj.fqid, obj.location), call
    recording.close()
    return len(calls)


def test_same_names_as_the_classmap_on_the_corpus() -> None:
    names = Names()  # shared across recordings, as in a worker
    checked = 0
    for path in corpus_recordings():
        doc = load(path)
        calls = [e for e in doc.events if e.get("event") == "call" and "sql_query" not in e]
        checked += _check(doc.class_map, calls, names)
    assert checked > 10_000


def test_awkward_class_maps() -> None:
    class_map = [
        {
            "name": "app",
            "type": "package",
            "children": [
                {
                    "name": "A",
                    "type": "class",
                    "children": [
                        {"name": "f", "type": "function", "location": "a.py:1", "static": True},
                        {"name": "g", "type": "function", "location": "a.py:1", "static": False},
                        {
                            "name": "outer",
                            "type": "function",
                            "location": "a.py:5",
                            "static": False,
                            "children": [
                                {"name": "inner", "type": "function", "location": "a.py:6"}
                            ],
                        },
                        {"name": "B", "type": "class", "children": []},
                    ],
                },
                {"name": "sub", "children": [{"name": "C", "type": "class"}]},
            ],
        },
        "junk",
        {"type": "function", "name": "top", "location": "t.py:9"},
    ]

    def call(
        cls: str, method: str, path: str | None, line: int | None, static: bool
    ) -> dict[str, Any]:
        return {
            "event": "call",
            "defined_class": cls,
            "method_id": method,
            "path": path,
            "lineno": line,
            "static": static,
        }

    calls = [
        call("A", "f", "a.py", 1, True),
        call("A", "g", "a.py", 1, False),
        call("A", "h", "a.py", 1, False),  # location known, name not: dynamic
        call("A", "inner", "a.py", 6, False),  # nested function
        call("x.y.Z", "q", None, None, False),
        call("top", "top", "t.py", 9, False),
        {"event": "call", "http_server_request": {"request_method": "GET", "path_info": "/x"}},
        {"event": "call", "http_client_request": {"request_method": "GET", "url": "http://h/a"}},
        {"event": "call", "message": [{"name": "m"}]},
    ]
    names = Names()
    assert _check(class_map, calls, names) == len(calls)
    assert _check(class_map, calls, names) == len(calls)  # memoized the second time
