"""The streaming reader: same checks as trace.load, same result as trace.normalize."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from tests.conftest import corpus_recordings
from tracetool.errors import TraceFormatError
from tracetool.trace import from_data, normalize, parse
from tracetool.trace import rawdoc as stream


def _normalized_by_core(data: dict[str, Any]) -> list[dict[str, Any]]:
    doc = from_data(copy.deepcopy(data))
    normalize(doc)
    return doc.events


def _normalized_by_stream(data: dict[str, Any]) -> list[dict[str, Any]]:
    return list(stream.split(orjson.dumps(data)).normalized_events())


@pytest.mark.parametrize("path", corpus_recordings(), ids=lambda p: p.name)
def test_streamed_normalization_equals_core_normalize_on_corpus(path, monkeypatch) -> None:
    data = orjson.loads(path.read_bytes())
    expected = _normalized_by_core(data)
    assert _normalized_by_stream(data) == expected
    # indented (event by event) and in many small batches: the same events
    doc = stream.split(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    assert list(doc.normalized_events()) == expected
    monkeypatch.setattr(stream, "_BATCH_BYTES", 2000)
    monkeypatch.setattr(stream, "_MIN_BATCH_BYTES", 1)
    assert _normalized_by_stream(data) == expected


def test_streamed_normalization_handles_every_repair(builder) -> None:
    outer = builder.function("A", "outer", "a.py", 1)
    builder.function("A", "inner", "a.py", 5)  # never returns
    builder.ret(outer)
    builder.function("A", "f", "a.py", 9)
    # a return without parent_id, matched by signature; then one that matches nothing
    builder.events.append({"id": 50, "event": "return", "thread_id": 1, "method_id": "f"})
    builder.events.append({"id": 51, "event": "return", "thread_id": 1, "parent_id": 999})
    http = builder.call(
        http_server_request={"request_method": "GET", "path_info": ["/a", "b"]},
        thread=2,
    )
    builder.ret(http, thread=2, http_server_response={"status": 200})
    data = builder.doc()
    data["events"].insert(3, 42)  # not an object: dropped
    data["eventUpdates"] = {str(outer): {**data["events"][0], "receiver": {"value": "upd"}}}
    expected = _normalized_by_core(data)
    got = _normalized_by_stream(data)
    assert got == expected
    assert got[0]["receiver"] == {"value": "upd"}
    assert [e["id"] for e in got] == list(range(1, len(got) + 1))
    server = next(e for e in got if "http_server_request" in e)
    assert server["http_server_request"]["path_info"] == "/a,b"


def test_assemble_keeps_key_order_and_untouched_values_byte_for_byte() -> None:
    raw = b'{"events": [ {"id": 1,  "event": "call"} ], "zeta": {"a" :1}, "metadata": {"n": 1}}'
    doc = stream.split(raw, "x.trace.json")
    out = doc.assemble({"metadata": {"n": 2}, "added": True})
    assert (
        out
        == b'{"events":[ {"id": 1,  "event": "call"} ],"zeta":{"a" :1},"metadata":{"n":2},"added":true}'
    )
    assert doc.assemble({"zeta": None}).startswith(b'{"events":')
    assert b"zeta" not in doc.assemble({"zeta": None})


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "empty file"),
        (b"  \n", "empty file"),
        (b"{not json", "not valid JSON"),
        (b'{"events": [1,', "not valid JSON"),
        (b"[1, 2]", "top level is an array"),
        (b'{"foo": 1}', "no events, classMap or metadata"),
        (b'{"events": {}}', "events is an object, expected an array"),
        (b'{"metadata": []}', "metadata is an array, expected an object"),
        (b'{"classMap": 3}', "classMap is a number, expected an array"),
    ],
)
def test_split_rejects_what_is_not_a_trace_document(raw: bytes, message: str) -> None:
    with pytest.raises(TraceFormatError, match=message) as info:
        stream.split(raw, "bad.trace.json")
    assert str(info.value).startswith("bad.trace.json: ")
    assert "\n" not in str(info.value)


def test_split_accepts_what_parse_accepts() -> None:
    for raw in (b'{"metadata": {}}', b'{"events": null, "classMap": null}', b'{"classMap": []}'):
        parse(raw)
        doc = stream.split(raw)
        assert list(doc.normalized_events()) == []


def test_balanced_documents_skip_balancing(builder, monkeypatch) -> None:
    outer = builder.function("A", "outer", "a.py", 1)
    inner = builder.function("A", "inner", "a.py", 5)
    builder.ret(inner)
    builder.ret(outer)
    data = builder.doc()

    def boom(*args, **kwargs):
        raise AssertionError("balance() must not run for a normalized document")

    monkeypatch.setattr(stream, "balance", boom)
    assert _normalized_by_stream(data) == _normalized_by_core(data)
    data["events"][1]["id"] = 7  # ids not 1..N but balanced: renumbered without balance()
    data["events"][2]["parent_id"] = 7
    data["events"][3]["id"] = 70
    assert _normalized_by_stream(data) == _normalized_by_core(data)
    data["events"].pop(2)  # inner never returns: balance() must run
    with pytest.raises(AssertionError, match="must not run"):
        _normalized_by_stream(data)
