"""The C passes of the streamed prune (`_speedups.c`, section prune: `prune_scan`, `prune_join`)
against their Python originals (`_Plan.add`, `_kept_texts`): the same result and bytes, or both
None (pruned whole), or the same error, on recordings whose events hold what the C scan does not
read plainly (duplicate fields, float, bool, huge or escaped ids, escaped keys and `event`
values, request fields of the wrong type, items that are not objects, deep nesting...), and the
functions themselves on wrong arguments."""

from __future__ import annotations

import random
import re
from array import array
from pathlib import Path
from typing import Any

import orjson
import pytest

from tracetool import accel
from tracetool.transform import prune_streamed
from tracetool.transform.prune import prune_file

pytestmark = pytest.mark.skipif(
    accel.function("prune_scan") is None, reason="C accelerator not built (or disabled)"
)

CLASS_MAP = [
    {
        "name": "app",
        "type": "package",
        "children": [
            {
                "name": "Widget",
                "type": "class",
                "children": [
                    {"name": f"m{i}", "type": "function", "location": f"app/widget.rb:{i}"}
                    for i in range(1, 6)
                ],
            }
        ],
    }
]


def _call(i: int, thread: Any = 1, method: int = 1, extra: str = "") -> str:
    payload = '"' + "p" * (20 * method) + '"'  # (bigger calls for later methods)
    return (
        f'{{"id":{i},"event":"call","thread_id":{orjson.dumps(thread).decode()},'
        f'"defined_class":"Widget","method_id":"m{method}","path":"app/widget.rb",'
        f'"lineno":{method},"static":false,"parameters":[{{"value":[{payload}]}}]{extra}}}'
    )


def _return(i: int, parent: Any, thread: Any = 1, extra: str = "") -> str:
    parent_text = "" if parent is None else f',"parent_id":{orjson.dumps(parent).decode()}'
    return (
        f'{{"id":{i},"event":"return","thread_id":{orjson.dumps(thread).decode()}'
        f'{parent_text},"return_value":{{"value":"{"r" * 30}"}}{extra}}}'
    )


def _base() -> list[str]:
    """Two threads, nested calls of five functions, an SQL call and an HTTP request."""
    events: list[str] = []
    next_id = 1
    for round_ in range(6):
        for thread in (1, 2):
            root = next_id
            events.append(
                f'{{"id":{root},"event":"call","thread_id":{thread},'
                '"http_server_request":{"request_method":"GET","path_info":"/w/1"},'
                '"message":[{"name":"id","value":"1"}]}'
            )
            next_id += 1
            for method in (1, 2, 3, 4, 5):
                call = next_id
                events.append(_call(call, thread, method))
                inner = next_id + 1
                events.append(
                    f'{{"id":{inner},"event":"call","thread_id":{thread},'
                    '"sql_query":{"sql":"SELECT 1","database_type":"sqlite"}}'
                )
                events.append(_return(inner + 1, inner, thread))
                events.append(_return(inner + 2, call, thread))
                next_id += 4
            events.append(
                f'{{"id":{next_id},"event":"return","thread_id":{thread},"parent_id":{root},'
                '"http_server_response":{"status_code":200}}'
            )
            next_id += 1
        del round_
    return events


def _write(path: Path, events: list[str], pretty: bool = False) -> Path:
    head = b'{"version":"1.12","metadata":{"name":"t"},"classMap":' + orjson.dumps(CLASS_MAP)
    sep = ",\n  " if pretty else ","
    body = ("[\n  " if pretty else "[") + sep.join(events) + ("\n]" if pretty else "]")
    path.write_bytes(head + b',"events":' + body.encode() + b"}")
    return path


def _outcome(path: Path, size: int, use_c: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as m:
        if not use_c:
            m.setattr(prune_streamed, "_SCAN", None)
            m.setattr(prune_streamed, "_JOIN", None)
        try:
            result = prune_streamed.prune_streamed(path, size, threshold=0)
        except Exception as exc:  # the same error both ways
            return ("error", type(exc).__name__)
        if result is None:
            return None
        return (result.summary(), b"".join(result.chunks()))


def _check(path: Path, monkeypatch: pytest.MonkeyPatch, *, block: int = 0) -> list[Any]:
    """C and Python agree at several targets; a streamed result is the whole prune's."""
    size = path.stat().st_size
    outcomes = []
    for target in (size // 3, size // 2, size * 9 // 10, size + 10):
        with monkeypatch.context() as m:
            m.setattr(prune_streamed, "BLOCK", block)
            c = _outcome(path, target, True, monkeypatch)
            python = _outcome(path, target, False, monkeypatch)
        if c is None and python is not None and python[0] == "error":
            # a file the block reader stops on: the C pass hands it to the whole prune, whose
            # verdict the Python pass's fallback reader gave
            with pytest.raises(Exception) as whole_error:
                prune_file(path, size=target)
            assert ("error", type(whole_error.value).__name__) == python
            c = python
        assert c == python, (path.name, target)
        if c is not None and c[0] != "error":
            whole = prune_file(path, size=target)
            assert c == (whole.summary(), b"".join(whole.chunks())), (path.name, target)
        outcomes.append(c)
    return outcomes


def _variant(events: list[str], index: int, old: str, new: str) -> list[str]:
    changed = list(events)
    assert old in changed[index], (old, changed[index])
    changed[index] = changed[index].replace(old, new, 1)
    return changed


def test_plain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "plain.appmap.json", _base())
    outcomes = _check(path, monkeypatch)
    assert all(o is not None and o[0] != "error" for o in outcomes)
    assert outcomes[0][0]["removed"]  # (something was pruned)
    for block in (1, 3, 7):
        _check(path, monkeypatch, block=block)


def test_pretty_printed_blocks_are_decoded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whitespace between events: `prune_join` declines and the block is decoded instead."""
    path = _write(tmp_path / "pretty.appmap.json", _base(), pretty=True)
    assert all(o is not None for o in _check(path, monkeypatch))


def _hostile(events: list[str]) -> dict[str, list[str]]:
    call = 1  # the first function call (index 1); its return is index 4
    variants = {
        "duplicate_id": _variant(events, call, '"id":2,', '"id":99,"id":2,'),
        "duplicate_method": _variant(
            events, call, '"method_id":"m1"', '"method_id":"m9","method_id":"m1"'
        ),
        "float_id": _variant(events, call, '"id":2,', '"id":2.0,'),
        "float_parent": _variant(events, 4, '"parent_id":2', '"parent_id":2.0'),
        "bool_thread": [e.replace('"thread_id":1,', '"thread_id":true,') for e in events[:20]]
        + events[20:],
        "huge_id": _variant(events, call, '"id":2,', '"id":123456789012345678901234567890,'),
        "huge_parent": _variant(
            events, 4, '"parent_id":2', '"parent_id":123456789012345678901234567890'
        ),
        "string_ids": [re.sub(r'"(id|parent_id)":(\d+)', r'"\1":"i\\"d\2"', e) for e in events],
        "malformed": [e.replace('"id":', '"id":"i\\"d') for e in events],
        "escaped_thread": [e.replace('"thread_id":2', '"thread_id":"t\\u00e9"') for e in events],
        "escaped_event": _variant(events, call, '"event":"call"', '"event":"c\\u0061ll"'),
        "escaped_return": _variant(events, 4, '"event":"return"', '"event":"r\\u0065turn"'),
        "escaped_key": _variant(events, call, '"method_id"', '"m\\u0065thod_id"'),
        "escaped_method": _variant(events, call, '"method_id":"m1"', '"method_id":"\\u006d1"'),
        "lineno_float": _variant(events, call, '"lineno":1,', '"lineno":1.0,'),
        "static_zero": _variant(events, call, '"static":false', '"static":0'),
        "null_fields": _variant(
            events,
            call,
            '"defined_class":"Widget"',
            '"defined_class":null,"sql_query":null,"http_server_request":null,"message":null',
        ),
        "empty_markers": _variant(
            events, 2, '"sql_query":{"sql":"SELECT 1","database_type":"sqlite"}', '"sql_query":{}'
        ),
        "message_call": _variant(
            events, call, '"static":false', '"static":false,"message":[{"value":1}]'
        ),
        "message_only": _variant(
            events, call, '"defined_class":"Widget","method_id":"m1",', '"message":"hello",'
        ),
        "no_method": _variant(events, call, '"method_id":"m1",', ""),
        "event_number": _variant(events, call, '"event":"call"', '"event":5'),
        "event_missing": _variant(events, call, '"event":"call",', ""),
        "other_event": _variant(events, call, '"event":"call"', '"event":"log"'),
        "no_parent": [e.replace(',"parent_id":', ',"parent_idx":') for e in events],
        "unknown_parent": _variant(events, 4, '"parent_id":2', '"parent_id":9999'),
        "late_return": events[:4] + events[5:] + [events[4]],
        "missing_returns": [e for i, e in enumerate(events) if i % 7 != 4],
        "deep_nesting": _variant(
            events, call, '"parameters":', '"deep":' + "[" * 400 + "]" * 400 + ',"parameters":'
        ),
        "unicode": _variant(
            events, call, '"path":"app/widget.rb"', '"path":"app/w\u00efdget\u2603.rb"'
        ),
        "whitespace_inside": _variant(
            events, call, '"id":2,"event":"call"', ' "id" : 2 , "event" :\t"call" '
        ),
        # what the Python path's block decode refuses: the recording is pruned whole (None)
        "sql_string": _variant(
            events,
            2,
            '"sql_query":{"sql":"SELECT 1","database_type":"sqlite"}',
            '"sql_query":"SELECT 1"',
        ),
        "server_list": _variant(
            events, 0, '"http_server_request":{', '"http_server_request":[1],"x":{'
        ),
        "client_true": _variant(
            events, call, '"static":false', '"static":false,"http_client_request":true'
        ),
        "not_an_object": [*events[:3], "5", *events[3:]],
        "list_thread": _variant(events, call, '"thread_id":1', '"thread_id":[1]'),
        "object_parent": _variant(events, 4, '"parent_id":2', '"parent_id":{"a":1}'),
    }
    return variants


@pytest.mark.parametrize("name", sorted(_hostile(_base())))
def test_hostile(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _hostile(_base())[name]
    path = _write(tmp_path / f"{name}.appmap.json", events)
    outcomes = _check(path, monkeypatch)
    if name in ("sql_string", "server_list", "client_true", "not_an_object", "late_return"):
        assert outcomes == [None] * len(outcomes)  # pruned whole
    if name in ("list_thread", "object_parent"):
        assert all(o == ("error", "TraceFormatError") for o in outcomes), outcomes
    _check(path, monkeypatch, block=2)


def test_join_declines_and_refuses() -> None:
    join = accel.function("prune_join")
    lengths, marks = array("I", [1, 2, 1]), array("I", [1, 0, 2])
    keep = bytes([0, 1, 1])
    assert join(memoryview(b"a,bc,d"), lengths, marks, 0, 3, keep) == b"a,d"
    assert join(b"a,bc,d", lengths, marks, 1, 2, keep) is None  # the lengths do not add up
    assert join(b"bc,d", lengths, marks, 1, 2, keep) == b"d"
    assert join(b"bc", lengths, marks, 1, 1, keep) == b""
    assert join(b"", lengths, marks, 0, 0, keep) is None
    with pytest.raises(IndexError):
        join(b"a,bc,d", lengths, marks, 1, 3, keep)
    with pytest.raises(IndexError):
        join(b"a,bc,d", lengths, marks, -1, 3, keep)
    with pytest.raises(IndexError):
        join(b"a,bc,d", lengths, marks, 0, 3, bytes([1, 1]))  # mark 2 beyond keep
    with pytest.raises(IndexError):
        join(b"a,bc,d", lengths, marks, 2**62, 2**62, keep)
    with pytest.raises(TypeError):
        join(b"a,bc,d", array("H", [1, 2, 1]), marks, 0, 3, keep)
    with pytest.raises(TypeError):
        join(b"a,bc,d", [1, 2, 1], marks, 0, 3, keep)
    with pytest.raises(TypeError):
        join("a,bc,d", lengths, marks, 0, 3, keep)
    with pytest.raises(OverflowError):
        join(b"a,bc,d", lengths, marks, 2**70, 3, keep)


def test_scan_refuses_wrong_arguments() -> None:
    new, scan, totals = (accel.function(n) for n in ("prune_new", "prune_scan", "prune_totals"))
    state = new()
    with pytest.raises(TypeError):
        scan(state, ("{}",), None)
    with pytest.raises(ValueError):
        scan(object(), [b"{}"], None)
    with pytest.raises(TypeError):
        scan(state, ["{}"], None)  # a str is no buffer
    with pytest.raises(TypeError):  # resolve gives no 5-tuple
        scan(state, [b'{"event":"call","id":1}'], lambda text: (1, 2))
    with pytest.raises(OverflowError):
        scan(state, [b'{"event":"call","id":1}'], lambda text: ("call", 1, 1, None, -1))
    with pytest.raises(TypeError):  # a mark that is no int
        scan(state, [b'{"event":"call","id":1}'], lambda text: ("call", 1, 1, None, "m"))
    with pytest.raises(ZeroDivisionError):  # resolve's own error goes through
        scan(state, [b'{"event":"call","id":1}'], lambda text: 1 / 0)
    assert scan(state, [b'{"event":"call","id":1}'], lambda text: None) is None
    assert scan(state, [b"[1]"], lambda text: None) is None

    state = new()
    seen: list[bytes] = []

    def resolve(text: Any) -> tuple[Any, ...]:
        seen.append(bytes(text))
        return ("call", 7, 1, None, 3)

    calls = [b'{"event":"call","id":1,"method_id":"a"}', b'{"event":"call","id":2,"method_id":"a"}']
    marks, lengths = scan(state, [*calls, b'{"event":"return","parent_id":2}'], resolve)
    assert list(array("I", marks)) == [3, 3, 3]
    assert list(array("I", lengths)) == [len(t) for t in calls] + [32]
    assert len(seen) == 1  # the second call binds by the text of the first
    late, sums = totals(state)
    assert not late
    assert sums[3] == (2, sum(len(t) + 1 for t in calls) + 33, 3)
    # a duplicate field: read by resolve, whose values count (id 7 here)
    marks, _ = scan(
        state, [b'{"event":"call","id":5,"id":6}', b'{"event":"return","parent_id":7}'], resolve
    )
    assert list(array("I", marks)) == [3, 3]


def _junk(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value full of what a skipper can trip on: quotes, backslash runs, brackets and
    field names inside strings, nesting."""
    pieces = ["\\", "\\\\", '"', "{", "}", "[", "]", ",", ":", "a", " ", "é", '"method_id":"x"']
    roll = rng.random()
    if depth < 6 and roll < 0.3:
        return [_junk(rng, depth + 1) for _ in range(rng.randrange(4))]
    if depth < 6 and roll < 0.6:
        return {_junk_text(rng, pieces): _junk(rng, depth + 1) for _ in range(rng.randrange(4))}
    if roll < 0.7:
        return rng.choice([None, True, False, 0, -1.5e3, 12345678901234])
    return _junk_text(rng, pieces)


def _junk_text(rng: random.Random, pieces: list[str]) -> str:
    return "".join(rng.choice(pieces) * rng.randrange(1, 70) for _ in range(rng.randrange(6)))


def test_scan_skips_containers_as_json_reads_them() -> None:
    """Events whose fields follow (and precede) big tricky containers: each call's fields are
    read where they are (a call read wrongly binds by another call's text, or is no call)."""
    new, scan = accel.function("prune_new"), accel.function("prune_scan")
    rng = random.Random(18)
    texts, expected = [], []
    for i in range(4000):
        method = rng.randrange(40)
        fields: list[tuple[str, Any]] = [
            ("event", "call"),
            ("id", i),
            ("thread_id", i),
            ("method_id", f"m{method}"),
            ("path", "p.rb"),
        ]
        for name in ("parameters", "receiver", "zz"):
            fields.insert(rng.randrange(len(fields) + 1), (name, _junk(rng)))
        text = b"{" + b",".join(orjson.dumps(k) + b":" + orjson.dumps(v) for k, v in fields) + b"}"
        texts.append(text)
        expected.append(method + 1)

    def resolve(text: Any) -> tuple[Any, ...]:
        event = orjson.loads(bytes(text))
        return ("call", event["id"], event["thread_id"], None, int(event["method_id"][1:]) + 1)

    state = new()
    marks, lengths = scan(state, texts, resolve)
    assert list(array("I", marks)) == expected
    assert list(array("I", lengths)) == [len(t) for t in texts]


def test_junk_recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nested calls on three threads with tricky values around every field: C and Python agree
    (pairs, binding and the bytes copied)."""
    rng = random.Random(7)
    events: list[bytes] = []
    stacks: dict[int, list[int]] = {1: [], 2: [], 3: []}
    for i in range(1, 1500):
        thread = rng.choice((1, 2, 3))
        stack = stacks[thread]
        fields: list[tuple[str, Any]]
        if stack and rng.random() < 0.5:
            fields = [("event", "return"), ("id", i), ("thread_id", thread)]
            fields.append(("parent_id", stack.pop()))
            fields.insert(rng.randrange(len(fields) + 1), ("return_value", _junk(rng)))
        else:
            stack.append(i)
            fields = [("event", "call"), ("id", i), ("thread_id", thread)]
            fields += [("defined_class", "Widget"), ("method_id", f"m{rng.randrange(1, 6)}")]
            fields += [("path", "app/widget.rb"), ("static", False)]
            for name in ("parameters", "receiver"):
                fields.insert(rng.randrange(len(fields) + 1), (name, _junk(rng)))
        rng.shuffle(fields)
        pairs = (orjson.dumps(k) + b":" + orjson.dumps(v) for k, v in fields)
        events.append(b"{" + b",".join(pairs) + b"}")
    path = _write(tmp_path / "junk.appmap.json", [e.decode() for e in events])
    outcomes = _check(path, monkeypatch)
    assert all(o is not None and o[0] != "error" for o in outcomes)
