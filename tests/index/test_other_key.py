"""`overhead._event_other_key` reads a call's key from its dict exactly as stats' `_other_key`
reads it from the call's `EventHead` (`_head`): the pairing's key of every call that is not a
plain function or SQL call (HTTP calls, messages, odd shapes)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import corpus_recordings
from tracetool.index.overhead import _event_other_key
from tracetool.stats._collect import _other_key
from tracetool.trace import parse
from tracetool.trace.stream import _head

_HOSTILE: list[dict[str, Any]] = [
    {},
    {"message": [{"name": "x"}]},
    {"message": [], "method_id": "m"},
    {"defined_class": "A.B", "message": 1},
    {"defined_class": None},
    {"defined_class": 0},
    {"http_server_request": None},
    {"http_server_request": {}},
    {"http_server_request": []},
    {"http_server_request": "GET /"},
    {"http_server_request": {"request_method": "get", "path_info": "/a"}},
    {"http_server_request": {"request_method": None, "normalized_path_info": "/a/{id}"}},
    {"http_server_request": {"request_method": ["G", 1], "path_info": 2**80}},
    {"http_server_request": {"request_method": "GET", "path_info": float("nan")}},
    {"http_server_request": {"path_info": "/é"}, "http_client_request": {"url": "u"}},
    {"http_client_request": {"url": "http://h/x", "request_method": "POST"}},
    {"http_client_request": {"url": None}, "defined_class": "C"},
    {"http_client_request": 3, "sql_query": "SELECT 1"},
    {"sql_query": {"sql": "SELECT 1", "database_type": None}},
    {"sql_query": {}, "http_server_request": {"path_info": "/"}},
    {"sql_query": None, "message": "m"},
    {"sql_query": "SELECT 1"},
    {"event": "call", "id": 1, "thread_id": 2, "elapsed_instrumentation": 0.5, "lineno": 3},
]


@pytest.mark.parametrize("call", _HOSTILE)
def test_hostile_calls(call: dict[str, Any]) -> None:
    assert _event_other_key(call) == _other_key(_head(call))


def test_corpus_calls() -> None:
    """Every call of the shared corpus (Ruby, Java, JS, Python agents)."""
    n = 0
    for path in corpus_recordings():
        for event in parse(path.read_bytes(), str(path)).events:
            if event.get("event") == "call":
                assert _event_other_key(event) == _other_key(_head(event)), path
                n += 1
    assert n > 1000
