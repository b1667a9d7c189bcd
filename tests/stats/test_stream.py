"""tracetool.trace.stream: one pass over events, whole-file or streamed; pairing; extraction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import DocBuilder, corpus_recordings
from tracetool.errors import TraceFormatError
from tracetool.trace import build_call_tree, load
from tracetool.trace.extract import extract_events
from tracetool.trace.stream import TraceStream, iter_pairs, open_stream, read_small, run_pass


def _events(path: Path, threshold: int | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    opened = open_stream(path, threshold=threshold)
    return list(opened.events()), opened.header


@pytest.mark.parametrize("recording", corpus_recordings(), ids=lambda p: p.name[:50])
def test_streamed_and_whole_readers_agree(recording: Path) -> None:
    whole, whole_header = _events(recording, None)
    streamed, streamed_header = _events(recording, 0)
    assert streamed == whole
    assert streamed_header.get("classMap") == whole_header.get("classMap")
    assert streamed_header.get("metadata") == whole_header.get("metadata")


def test_event_updates_are_applied_in_both_readers(tmp_path: Path, corpus: Path) -> None:
    recording = next(p for p in corpus_recordings() if b"eventUpdates" in p.read_bytes())
    doc = load(recording)
    updates = doc.data["eventUpdates"]
    for threshold in (None, 0):
        events = list(open_stream(recording, threshold=threshold).events())
        for key, update in updates.items():
            assert update in events, key


def test_header_key_that_also_appears_nested(tmp_path: Path) -> None:
    doc = {
        "metadata": {"name": "x", "classMap": "nested decoy"},
        "events": [{"id": 1, "event": "call", "thread_id": 1, "message": [{"classMap": 1}]}],
        "classMap": [{"name": "app", "type": "package"}],
    }
    path = tmp_path / "a.trace.json"
    path.write_bytes(json.dumps(doc, indent=1).encode())
    opened = open_stream(path, threshold=0)
    assert opened.class_map == [{"name": "app", "type": "package"}]
    assert list(opened.events()) == doc["events"]


_EVENTS = orjson.dumps(
    [
        {"id": 1, "event": "call", "thread_id": 1, "defined_class": "A", "method_id": "b"},
        {"id": 2, "event": "return", "thread_id": 1, "parent_id": 1},
    ]
).decode()
_OTHER = '[{"id":9,"event":"call","thread_id":1,"defined_class":"Z","method_id":"z"}]'
_CM = '[{"name":"app","type":"package"}]'
_UPDATE = '{"2":{"id":2,"event":"return","thread_id":1,"parent_id":1,"x":1}}'
# layout -> (document, how many times `run_pass` runs its pass: 2 when the members after the
# events array change what `events_first` read, 1 when the usual reader then fails to open it)
_LAYOUTS = {
    "events last": (f'{{"version":"1","classMap":{_CM},"events":{_EVENTS}}}', 1),
    "members after": (f'{{"classMap":{_CM},"events":{_EVENTS},"tail":{{"events":1}}}}', 1),
    "spaced": (f'{{ "classMap" : {_CM} ,\n "events" :\n {_EVENTS} \n}}\n', 1),
    "classMap after": (f'{{"metadata":{{}},"events":{_EVENTS},"classMap":{_CM}}}', 2),
    "updates after": (f'{{"classMap":{_CM},"events":{_EVENTS},"eventUpdates":{_UPDATE}}}', 2),
    "updates before": (f'{{"eventUpdates":{_UPDATE},"classMap":{_CM},"events":{_EVENTS}}}', 1),
    "events twice": (f'{{"classMap":{_CM},"events":{_OTHER},"x":1,"events":{_EVENTS}}}', 2),
    "nested first": (f'{{"metadata":{{"events":[1]}},"classMap":{_CM},"events":{_EVENTS}}}', 1),
    "bad classMap after": (f'{{"events":{_EVENTS},"classMap":3}}', 1),
    # (an item that is not an object: the fallback reader reads on, the key scan decides)
    "fallback": (f'{{"classMap":{_CM},"events":[1,{_EVENTS[1:]}}}', 1),
    "fallback, classMap after": (f'{{"events":[1,{_EVENTS[1:]},"classMap":{_CM}}}', 2),
    "bad tail": (f'{{"classMap":{_CM},"events":{_EVENTS},"x":}}', 2),
}


@pytest.mark.parametrize("layout", sorted(_LAYOUTS))
def test_events_first_reads_as_the_key_scan(layout: str, tmp_path: Path) -> None:
    """`run_pass` opens a streamed recording without scanning for its keys and runs again the
    usual way when a member after the events array changes what was read: the same result."""
    text, passes = _LAYOUTS[layout]
    path = tmp_path / "a.appmap.json"
    path.write_text(text)
    runs: list[TraceStream] = []

    def read(stream: TraceStream) -> Any:
        runs.append(stream)
        heads = [h.to_dict() for block, _ in stream.raw_head_blocks() for h in block]
        return heads, stream.class_map, stream.updates

    def outcome(run: Any) -> Any:
        try:
            return run()
        except TraceFormatError as exc:
            return str(exc)

    expected = outcome(lambda: read(open_stream(path, threshold=0, heads=True)))
    runs.clear()
    assert outcome(lambda: run_pass(path, read, threshold=0, heads=True)) == expected
    assert len(runs) == passes
    assert bool(runs[0].provisional) != (layout == "nested first")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"   ", "empty file"),
        (b"[]", "top level is an array, not an object"),
        (b'{"foo": {}}', "no events, classMap or metadata"),
        (b'{"classMap": 3, "events": []}', "classMap is a number, expected an array"),
    ],
)
def test_streamed_reader_errors(content: bytes, message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.trace.json"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError, match=message):
        list(open_stream(path, threshold=0).events())


def test_truncated_stream_fails_while_reading(tmp_path: Path) -> None:
    builder = DocBuilder()
    for _ in range(50):
        builder.ret(builder.function("A", "b", "a.rb", 1))
    raw = orjson.dumps(builder.doc())
    path = tmp_path / "cut.trace.json"
    path.write_bytes(raw[: len(raw) - 200])
    opened = open_stream(path, threshold=0)
    with pytest.raises(TraceFormatError, match="cut.trace.json: not valid JSON"):
        list(opened.events())


def _pairs(events: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    return [(c["id"], r and r.get("id")) for c, r in iter_pairs(events)]


def test_pairing_follows_parent_ids_and_thread_stacks() -> None:
    b = DocBuilder()
    outer = b.function("A", "outer", "a.rb", 1)
    inner = b.function("A", "inner", "a.rb", 2)
    lost = b.function("A", "lost", "a.rb", 3)  # never returns: closed when `inner` returns
    inner_ret = b.ret(inner)
    b.events.append({"id": 99, "event": "return", "thread_id": 1})  # no parent_id: innermost
    other = b.call(thread=2, method_id="x")  # never returns
    b.ret(lost)  # its call was already closed: dropped
    b.ret(12345)  # unknown call: dropped
    assert _pairs(b.events) == [(inner, inner_ret), (outer, 99), (lost, None), (other, None)]


def test_pairing_agrees_with_the_call_tree_on_the_corpus() -> None:
    for recording in corpus_recordings():
        events = list(open_stream(recording).events())
        ours = {(c.get("id"), r.get("id")) for c, r in iter_pairs(events) if r is not None}
        tree = build_call_tree(events)
        theirs = {(n.call.get("id"), n.ret.get("id")) for n in tree if n.ret is not None}
        assert ours == theirs, recording


def test_extract_events_finds_exactly_the_http_events() -> None:
    for recording in corpus_recordings():
        raw = read_small(recording)
        assert raw is not None
        found = extract_events(raw, "http_server_request", "http_server_response")
        data = orjson.loads(raw)
        if "eventUpdates" in data:
            assert found is None
            continue
        assert found is not None, recording
        events = data.get("events", [])
        assert found["http_server_request"] == [e for e in events if "http_server_request" in e]
        assert found["http_server_response"] == [e for e in events if "http_server_response" in e]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"events": [{"id": 1, "event": "call", "http_server_request": {"path_info": "/a"}}',
        b'{"eventUpdates": {}, "events": []}',
        b"[1]",
    ],
)
def test_extract_events_declines_what_it_cannot_read_plainly(raw: bytes) -> None:
    assert extract_events(raw, "http_server_request") is None


def test_extract_events_ignores_look_alikes_in_strings() -> None:
    tricky = {
        "metadata": {"name": 'the "http_server_request": { key'},
        "events": [
            {"id": 1, "event": "call", "message": [{"value": '{"http_server_request": 1}'}]},
            {
                "id": 2,
                "event": "call",
                "receiver": {"value": "ends with {"},
                "http_server_request": {"path_info": "/ü{x}", "headers": {"A": "}{"}},
            },
            {"id": 3, "event": "return", "parent_id": 2, "http_server_response": {"status": 200}},
        ],
    }
    for raw in (orjson.dumps(tricky), json.dumps(tricky, indent=2, ensure_ascii=False).encode()):
        found = extract_events(raw, "http_server_request", "http_server_response")
        assert found is not None
        assert found["http_server_request"] == [tricky["events"][1]]
        assert found["http_server_response"] == [tricky["events"][2]]


def test_extract_events_grows_its_window_for_big_events() -> None:
    big = {
        "id": 1,
        "event": "call",
        "message": [{"value": "x" * 100_000}],
        "http_server_request": {},
    }
    raw = orjson.dumps({"events": [big]})
    found = extract_events(raw, "http_server_request")
    assert found == {"http_server_request": [big]}


@pytest.mark.parametrize("twice", [False, True], ids=["tail", "tail with events again"])
def test_block_reader_reads_to_a_long_tail_of_members(
    twice: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Members after the events that hold many `}]` and `},{` (a class map written after the
    events, indented) are read plainly by the block reader, to the array's end; an `events`
    member among them is the one read (the last), as before."""
    from tracetool.trace import stream

    builder = DocBuilder()
    for n in range(40):
        builder.ret(builder.function(f"C{n}", "m", "a.py", n))
    doc = builder.doc()
    events = doc.pop("events")
    doc["classMap"] = [
        {"name": f"p{n}", "type": "package", "children": [{"name": "C", "type": "class"}]}
        for n in range(300)
    ]
    if twice:
        doc["events"] = events[:2]
    tail = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    path = tmp_path / "a.appmap.json"
    path.write_bytes(b'{"events":' + orjson.dumps(events) + b"," + tail[1:])
    monkeypatch.setattr(stream, "_CHUNK", 1 << 16)  # (the events and the tail: one read)
    opened = open_stream(path, threshold=0)
    whole = open_stream(path)  # (read whole)
    if not twice:  # the fallback reader is not needed
        monkeypatch.setattr(stream.TraceStream, "_ijson_blocks", None)
    assert list(opened.events()) == list(whole.events())
    assert opened.class_map == whole.class_map and len(opened.class_map) == 300
    assert opened.after is not None
