"""What the index's extraction keeps by value across calls and recordings reads the same as
what it would compute each time: HTTP requests' routes and rows (`extract._server_facts`,
`_client_facts`), log rows made in C, and canonical dependencies appended once
(`Canonical._depend`). Each is compared with the uncached path, with and without the C walk."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import corpus_recordings, make_corpus
from tests.diagram.test_speedups_diagram import _events
from tests.index.test_speedups_extract import _document, _extract, _same
from tracetool.index import canonical as canonical_module
from tracetool.trace.document import from_data

X = pytest.importorskip("tracetool.index.extract")

SERVER_REQUESTS: list[Any] = [
    {"request_method": "GET", "path_info": "/users/1", "normalized_path_info": "/users/:id"},
    {"request_method": "get ", "path_info": "/users/2"},
    {"request_method": "POST", "path_info": "/users/42?x=1#f"},
    {"request_method": None, "path_info": None},
    {"path_info": "/books/ab12cd34ef/pages/7"},
    {"request_method": "GET", "path_info": ["/a", "b"]},
    {"request_method": 5, "path_info": "/n"},
    {"request_method": "PUT", "normalized_path_info": "/b/{pk}", "path_info": "x" * 2100},
    {"request_method": "GET", "normalized_path_info": "", "path_info": "/users/1"},
    {"request_method": "DELETE", "path_info": "/caf\u00e9/1", "headers": {"a": "b"}},
    {},
    None,
    "GET /x",
]
CLIENT_REQUESTS: list[Any] = [
    {"request_method": "POST", "url": "http://svc:81/x"},
    {"request_method": "get", "url": "http://user:pw@127.0.0.1:33025/quote/1?q=2"},
    {"request_method": "GET", "url": "relative/path"},
    {"request_method": None, "url": None},
    {"url": "https://api.example.com:8443/v1/items/3"},
    {"request_method": "GET", "url": 7},
    {"request_method": ["GET"], "url": "http://svc/x"},
    {},
    None,
]
RESPONSES: list[Any] = [{"status_code": 200}, {"status": "404"}, {"status_code": "x"}, None]


def _http_document(rng: random.Random) -> dict[str, Any]:
    events = _events(rng, rng.randint(5, 40))
    for event in events:
        if not isinstance(event, dict):
            continue
        if event.get("event") == "call":
            roll = rng.random()
            if roll < 0.25:
                event["http_server_request"] = rng.choice(SERVER_REQUESTS)
                event["message"] = rng.choice([None, [{"name": "b"}, {"name": "a"}], "x"])
            elif roll < 0.45:
                event["http_client_request"] = rng.choice(CLIENT_REQUESTS)
                if rng.random() < 0.1:
                    event["http_server_request"] = rng.choice(SERVER_REQUESTS)
        elif rng.random() < 0.5:
            event[rng.choice(["http_server_response", "http_client_response"])] = rng.choice(
                RESPONSES
            )
    return _document(events)


def _uncached(monkeypatch: pytest.MonkeyPatch, data: dict[str, Any]) -> None:
    """Extracting `data` with and without the HTTP facts gives the same, with either walk."""
    walk = X._WALK
    for accelerated in (True, False) if walk is not None else (False,):
        monkeypatch.setattr(X, "_WALK", walk if accelerated else None)
        cached = _extract(data, 1)
        with monkeypatch.context() as patch:
            patch.setattr(X, "_server_facts", lambda call: None)
            patch.setattr(X, "_client_facts", lambda call: None)
            assert _extract(data, 1) == cached
    monkeypatch.setattr(X, "_WALK", walk)


def test_http_facts_read_as_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(44)
    for _ in range(60):
        _uncached(monkeypatch, _http_document(rng))


def test_http_facts_survive_a_full_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full cache is emptied: what follows reads the same."""
    monkeypatch.setattr(X, "_FACTS_MAX", 2)
    rng = random.Random(45)
    for _ in range(20):
        _uncached(monkeypatch, _http_document(rng))


@pytest.mark.skipif(X._WALK is None, reason="tracetool._speedups is not built")
def test_http_calls_c_and_python(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(46)
    for _ in range(40):
        data = _http_document(rng)
        _same(data, monkeypatch)
        _same(data, monkeypatch, batches=3)


class _Dict(dict):  # type: ignore[type-arg]
    """A parameter object of a class of its own (no decoder makes one)."""


LOGGER = {"defined_class": "logging.Logger", "method_id": "info", "path": "l.py", "lineno": 1}
LOG_PARAMETERS: list[Any] = [
    [{"name": "self", "value": "x"}, {"name": "msg", "value": "hello"}],
    [{"name": "cls"}, {"value": "no name"}],
    [{"name": "msg", "value": "m" * 2500}],
    [{"name": "msg", "value": "\u00e9t\u00e9 \u2603 " * 400}],
    [{"name": "msg", "value": None}, {"name": "other", "value": "later"}],
    [{"name": ["list"], "value": [1, {"a": 2}]}],
    [{"name": 5, "value": 12.5}],
    ["odd", 3, {"name": "msg", "value": True}],
    [_Dict(name="msg", value="from a subclass")],
    [{"name": "self"}],
    [],
    None,
    "text",
    {"name": "msg", "value": "a dict"},
    0,
]


@pytest.mark.skipif(X._WALK is None, reason="tracetool._speedups is not built")
def test_log_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Log rows (made in C for parameter lists) of messages of every shape."""
    rng = random.Random(47)
    for _ in range(40):
        events = _events(rng, rng.randint(5, 40))
        for event in events:
            if isinstance(event, dict) and event.get("event") == "call" and rng.random() < 0.5:
                event.update(LOGGER)
                if rng.random() < 0.3:
                    event["method_id"] = rng.choice(["warn", "error", None, ""])
                if rng.random() < 0.9:
                    event["parameters"] = rng.choice(LOG_PARAMETERS)
        _same(_document(events), monkeypatch)


def _recordings(tmp_path: Path) -> list[dict[str, Any]]:
    found = [orjson.loads(path.read_bytes()) for path in corpus_recordings()]
    for path in make_corpus(tmp_path, 4, 2.0, 13, "--ext", ".appmap.json"):
        found.append(orjson.loads(path.read_bytes()))
    return found


def test_dependencies_appended_once(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The canonical forms are those of every dependency appended (`result` makes them
    unique), with either walk."""
    walk = X._WALK

    def always(values: list[Any], seen: Any, caller: Any, callee: Any) -> None:
        values.append({"caller": caller, "callee": callee})

    for data in _recordings(tmp_path):
        monkeypatch.setattr(X, "_WALK", None)
        with monkeypatch.context() as patch:
            patch.setattr(canonical_module, "_depend", always)
            expected = X.extract(from_data(orjson.loads(orjson.dumps(data)))).canonical
        for accelerated in (False, True) if walk is not None else (False,):
            monkeypatch.setattr(X, "_WALK", walk if accelerated else None)
            found = X.extract(from_data(orjson.loads(orjson.dumps(data)))).canonical
            assert found == expected
    monkeypatch.setattr(X, "_WALK", walk)


SQL_QUERIES: list[Any] = [
    {"sql": "SELECT * FROM users WHERE id = 1", "database_type": "sqlite"},
    {"sql": "SELECT * FROM users WHERE id = 1", "database_type": ""},
    {"sql": "SELECT * FROM users WHERE id = 1", "database_type": None},
    {"sql": "SELECT * FROM users WHERE id = 1"},
    {"sql": "SELECT * FROM users WHERE id = 2", "database_type": 5},
    {"sql": "SELECT * FROM users WHERE id = 2", "database_type": ["postgres"]},
    {"sql": "SELECT * FROM users WHERE id = 2", "database_type": "postgres"},
    {"sql": "UPDATE t SET a = 1", "database_type": 0},
    {"sql": 5, "database_type": "mysql"},
    {"sql": None},
    "SELECT 3",
    None,
]


def test_query_items_read_the_key_database_type() -> None:
    """A query's item (kept per worker by its SQL key) names the database type of the key,
    which is what `ev.database_type` reads of every call with that key."""
    from tracetool.trace import events as ev

    for query in SQL_QUERIES:
        call = {"sql_query": query}
        assert X._sql_key(call)[1] == ev.database_type(call)


@pytest.mark.skipif(X._WALK is None, reason="tracetool._speedups is not built")
def test_sql_calls_c_and_python(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(48)
    for n in range(30):
        if n % 3 == 0:
            monkeypatch.setattr(X, "_FACTS_MAX", 1 + n % 4)
        events = _events(rng, rng.randint(5, 40))
        for event in events:
            if isinstance(event, dict) and event.get("event") == "call" and rng.random() < 0.5:
                event["sql_query"] = rng.choice(SQL_QUERIES)
        _same(_document(events), monkeypatch)
        _same(_document(events), monkeypatch, batches=3)


class _List(list):  # type: ignore[type-arg]
    """A list of a class of its own (no decoder makes one)."""


def _deep(depth: int) -> list[Any]:
    params: list[Any] = [{"name": "leaf"}]
    for level in range(depth):
        params = [{"name": f"n{level % 7}", "properties": params}, {"name": None}]
    return params


NESTED_PARAMETERS: list[Any] = [
    [{"name": "a", "properties": [{"name": "b", "properties": [{"name": "c"}]}, "x"]}],
    [{"name": "a", "properties": [{"name": "b"}]}, {"name": "d", "properties": {"name": "e"}}],
    [{"name": 5, "properties": [{"name": ["l"]}, {"name": 1.5}]}, {"properties": "text"}],
    [{"name": "a", "properties": [_Dict(name="sub")]}],
    [{"name": "a", "properties": _List([{"name": "in a list subclass"}])}],
    [_Dict(name="top")],
    [{"name": "a", "properties": []}, {"name": "a", "properties": 0}],
    [{"name": "\u00e9t\u00e9", "properties": [{"name": "\u2603"}]}],
    _deep(100),  # (the test copies documents with copy.deepcopy, recursively)
]


@pytest.mark.skipif(X._WALK is None, reason="tracetool._speedups is not built")
def test_nested_parameter_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """The canonical `parameters` of functions called with nested parameters of every shape
    (gathered in C when every list is a list and every object a dict)."""
    rng = random.Random(49)
    for _ in range(30):
        events = _events(rng, rng.randint(5, 30))
        for event in events:
            if isinstance(event, dict) and event.get("event") == "call" and rng.random() < 0.6:
                event["parameters"] = rng.choice(NESTED_PARAMETERS)
        _same(_document(events), monkeypatch)
