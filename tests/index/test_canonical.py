"""Canonical forms and the bound classMap against AppMap's golden index files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, DocBuilder
from tracetool.index import ALGORITHMS, extract
from tracetool.trace import from_data, load

GOLDEN = (
    CORPUS
    / "packages/cli/tests/unit/fixtures/compare/.appmap/change-report/all-succeeded/base/minitest"
)
NAME = "Users_login_login_with_valid_information_followed_by_logout"
# AppMap names a `query` code object by the raw SQL, we by its normalized form (DESIGN.md §3);
# this is the one query of the golden recording whose raw text has a literal.
RAW_QUERY = 'SELECT 1 AS one FROM "microposts" WHERE "microposts"."user_id" = ? LIMIT ?'
OUR_QUERY = 'SELECT ? AS one FROM "microposts" WHERE "microposts"."user_id" = ? LIMIT ?'


@pytest.fixture(scope="module")
def golden_extract(corpus: Path) -> Any:
    return extract(load(GOLDEN / f"{NAME}.appmap.json"))


def _golden(alg: str) -> Any:
    return json.loads((GOLDEN / NAME / f"canonical.{alg}.json").read_text())


@pytest.mark.parametrize(
    "alg",
    [
        "classes",
        "packages",
        "packageDependencies",
        "httpServerRequests",
        "httpClientRequests",
        "labels",
        "sqlNormalized",
        "sqlTables",
        "exceptions",
    ],
)
def test_canonical_form_equals_appmap_golden(golden_extract: Any, alg: str) -> None:
    assert golden_extract.canonical[alg] == _golden(alg)


def test_class_dependencies_equal_golden_up_to_query_naming(golden_extract: Any) -> None:
    ours = golden_extract.canonical["classDependencies"]
    expected = [
        {k: (OUR_QUERY if v == RAW_QUERY else v) for k, v in dep.items()}
        for dep in _golden("classDependencies")
    ]
    assert sorted(map(json.dumps, ours)) == sorted(map(json.dumps, expected))
    assert len(ours) == 65


def _flat(class_map: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    stack = [(node, "") for node in reversed(class_map)]
    while stack:
        node, prefix = stack.pop()
        key = f"{prefix}/{node['type']}:{node['name']}"
        attrs = {k: v for k, v in node.items() if k != "children"}
        if "labels" in attrs:
            attrs["labels"] = sorted(attrs["labels"])
        out.append((key, json.dumps(attrs, sort_keys=True)))
        stack.extend((child, key) for child in reversed(node.get("children", [])))
    return out


def test_bound_class_map_equals_golden_up_to_query_naming(golden_extract: Any) -> None:
    golden = json.loads((GOLDEN / NAME / "classMap.json").read_text())
    expected = [
        (key.replace(RAW_QUERY, OUR_QUERY), attrs.replace(RAW_QUERY, OUR_QUERY))
        for key, attrs in _flat(golden)
    ]
    ours = _flat(golden_extract.class_map)
    escaped = (json.dumps(RAW_QUERY)[1:-1], json.dumps(OUR_QUERY)[1:-1])
    expected = [(k, a.replace(*escaped)) for k, a in expected]
    assert sorted(ours) == sorted(expected)
    # Same order too, apart from where that one renamed query sorts among the queries.
    assert [k for k, _ in ours if "/query:" not in k] == [
        k for k, _ in expected if "/query:" not in k
    ]


def test_every_algorithm_is_computed(golden_extract: Any) -> None:
    assert set(golden_extract.canonical) == set(ALGORITHMS)
    assert len(ALGORITHMS) == 11


def test_exceptions_parameters_and_client_requests(builder: DocBuilder) -> None:
    builder.class_map = [
        {
            "name": "app",
            "type": "package",
            "children": [
                {
                    "name": "Svc",
                    "type": "class",
                    "children": [
                        {
                            "name": "run",
                            "type": "function",
                            "location": "app/svc.py:3",
                            "static": False,
                            "labels": ["job.perform"],
                        }
                    ],
                }
            ],
        }
    ]
    req = builder.call(
        http_server_request={
            "request_method": "POST",
            "path_info": "/jobs/9",
            "normalized_path_info": "/jobs/{id}",
        },
        message=[
            {"name": "id", "class": "int", "value": "9"},
            {
                "name": "body",
                "class": "dict",
                "value": "{}",
                "properties": [{"name": "when", "class": "str"}],
            },
        ],
    )
    run = builder.call(
        defined_class="app.Svc",
        method_id="run",
        path="app/svc.py",
        lineno=3,
        static=False,
        parameters=[{"name": "force", "class": "bool"}],
    )
    client = builder.call(
        http_client_request={"request_method": "GET", "url": "https://api.example.com/v1/items"}
    )
    builder.ret(client, http_client_response={"status_code": 503})
    builder.ret(
        run, exceptions=[{"class": "Boom", "message": "no", "path": "app/svc.py", "lineno": 8}]
    )
    builder.ret(req, http_server_response={"status_code": 500})
    canonical = extract(from_data(builder.doc())).canonical
    assert canonical["exceptions"] == [
        {
            "class": "Boom",
            "message": "no",
            "stack": ["app/svc.py:8", "app/svc.py:3"],
            "location": "app/svc.py:8",
        }
    ]
    assert canonical["parameters"] == ["body", "force", "id", "when"]
    assert canonical["httpServerRequests"] == [
        {"route": "POST /jobs/{id}", "parameters": "(body,id)", "status": 500}
    ]
    assert canonical["httpClientRequests"] == [
        {"route": "GET https://api.example.com/v1/items", "parameters": "()", "status": 503}
    ]
    assert canonical["labels"] == ["job.perform"]
    assert canonical["classDependencies"] == [
        {"caller": "POST /jobs/{id}", "callee": "app/Svc"},
        {"caller": "app/Svc", "callee": "GET https://api.example.com/v1/items"},
    ]
    assert canonical["packageDependencies"] == [
        {"caller": "HTTP server requests", "callee": "app"},
        {"caller": "app", "callee": "https://api.example.com"},
    ]


def test_only_events_inside_http_requests_count_when_there_are_any(builder: DocBuilder) -> None:
    setup = builder.function("Fixtures", "load", "tests/fixtures.py", 1)
    builder.ret(setup)
    req = builder.call(http_server_request={"request_method": "GET", "path_info": "/"})
    inner = builder.function("Home", "show", "app/home.py", 2)
    builder.ret(inner)
    builder.ret(req, http_server_response={"status_code": 200})
    canonical = extract(from_data(builder.doc())).canonical
    assert canonical["classes"] == ["Home"]


def _bound_maps(
    paths: list[Path], monkeypatch: pytest.MonkeyPatch
) -> list[tuple[list[Any], list[Any]]]:
    """(Python, C) bound classMaps of each recording, made from the same code objects."""
    import importlib

    from tracetool.index import canonical

    extract_module = importlib.import_module("tracetool.index.extract")
    made: list[tuple[list[Any], list[Any]]] = []

    def both(cmap: Any, used: Any) -> list[Any]:
        fast = canonical._BOUND_CLASS_MAP(cmap.roots, used, canonical.CodeObject)
        made.append((canonical.python_bound_class_map(cmap, used), fast))
        return fast  # type: ignore[no-any-return]

    monkeypatch.setattr(extract_module, "bound_class_map", both)
    for path in paths:
        extract(load(path))
    return made


def test_accelerated_bound_class_map_is_the_python_one(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The C walk (`_speedups.bound_class_map`) gives the reference's dicts, keys in the same
    order, on the shared corpus and generated recordings (dynamic objects, labels, extras)."""
    from tests.conftest import corpus_recordings, make_corpus
    from tracetool.index import canonical

    if canonical._BOUND_CLASS_MAP is None:
        pytest.skip("tracetool._speedups is not built")
    paths = corpus_recordings() + make_corpus(tmp_path, 20, 2.0, 7)
    made = _bound_maps(paths, monkeypatch)
    assert len(made) == len(paths)
    for python, fast in made:
        assert json.dumps(fast) == json.dumps(python)
    assert any(fast for _, fast in made)


def test_bound_class_map_of_odd_code_objects() -> None:
    """Code objects the classMap format allows but rarely holds: a truthy location and extras
    on a function, labels everywhere, an unused sibling, objects that are not functions."""
    from tracetool.index import canonical
    from tracetool.trace.codeobjects import ClassMap

    cmap = ClassMap.from_json(
        [
            {
                "name": "app",
                "type": "package",
                "labels": ["b", "a"],
                "children": [
                    {
                        "name": "K",
                        "type": "class",
                        "children": [
                            {"name": "f", "type": "function", "static": True, "sql": "x"},
                            {"name": "g", "type": "function", "location": "k.py:2"},
                            {"name": "h", "type": "function", "location": ""},
                        ],
                    }
                ],
            },
            {"name": "unused", "type": "package"},
        ]
    )
    used = {id(co): co for co in cmap.objects() if co.name in ("f", "h")}
    query = cmap.query("SELECT 1")
    used[id(query)] = query
    expected = canonical.python_bound_class_map(cmap, used)
    assert [root["name"] for root in expected] == ["app", "Database"]
    if canonical._BOUND_CLASS_MAP is not None:
        fast = canonical._BOUND_CLASS_MAP(cmap.roots, used, canonical.CodeObject)
        assert json.dumps(fast) == json.dumps(expected)


def test_dependencies_are_kept_once_each() -> None:
    """Many code-object pairs making one class (or package) dependency give it once, as before
    (`result` kept the first of equal values)."""
    from tracetool.index.canonical import Canonical
    from tracetool.trace.codeobjects import ClassMap

    def package(name: str, classes: dict[str, list[str]]) -> dict[str, Any]:
        children = [
            {"name": c, "type": "class", "children": [{"name": f, "type": "function"} for f in fs]}
            for c, fs in classes.items()
        ]
        return {"name": name, "type": "package", "children": children}

    cmap = ClassMap.from_json(
        [package("p", {"A": ["x", "y"], "B": ["x"]}), package("q", {"C": ["x"]})]
    )
    by_id = {co.id: co for co in cmap.objects()}
    ax, ay, bx, cx = by_id["p/A#x"], by_id["p/A#y"], by_id["p/B#x"], by_id["q/C#x"]
    forms = Canonical()
    for callee, caller in ((bx, ax), (bx, ay), (bx, ax), (ax, bx), (ax, cx), (ay, cx)):
        forms.dependency(callee, caller)
    out = forms.result()
    assert out["classDependencies"] == [
        {"caller": "p/A", "callee": "p/B"},
        {"caller": "p/B", "callee": "p/A"},
        {"caller": "q/C", "callee": "p/A"},
    ]
    assert out["packageDependencies"] == [{"caller": "q", "callee": "p"}]


def test_dependencies_pair_string_ids_only() -> None:
    """A dependency is appended once per pair where equal pairs mean equal JSON."""
    from tracetool.index.canonical import _depend

    values: list[Any] = []
    seen: set[Any] = set()
    for caller, callee in (("A", "B"), ("B", "A"), ("A", "B"), (1, "B"), (True, "B"), (1, "B")):
        _depend(values, seen, caller, callee)
    assert values == [
        {"caller": "A", "callee": "B"},
        {"caller": "B", "callee": "A"},
        {"caller": 1, "callee": "B"},
        {"caller": True, "callee": "B"},  # (1 == True, but their JSON differs)
        {"caller": 1, "callee": "B"},  # (`result` keeps one)
    ]
