"""Binding event heads to code objects (`tracetool.filters.apply._bind_heads`), HTTP requests
remembered by their fields, binds every call of a recording to the code object the loop bound it
to before (every call the function cache does not resolve bound afresh), and makes the same
classMap: the shared corpus, generated recordings, and random calls whose request fields are
strings, nulls, numbers, booleans, lists or absent."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec

from tests.conftest import corpus_recordings, make_corpus
from tracetool import accel
from tracetool.filters import apply
from tracetool.filters.apply import BindState
from tracetool.trace.slim import SlimCall, load_slim
from tracetool.trace.stream import UNSET, EventHead


def _as_before(calls: list[Any], cmap: Any, state: BindState) -> list[Any]:
    """`_bind_heads` as it was (every call the function cache does not resolve bound afresh)."""
    unnamed, functions = state.unnamed, state.functions
    out = []
    for call in calls:
        sql = call.sql_query is not UNSET
        if unnamed is not None and sql:
            out.append(unnamed)
            continue
        method = call.method_id
        if method is not None and method is not UNSET and call.http_server_request is UNSET:
            key = (
                method,
                call.path,
                call.lineno,
                call.defined_class,
                call.static,
                sql or call.http_client_request is not UNSET,
            )
            co = functions.get(key)
            if co is None:
                co = functions[key] = cmap.code_object_for(call.to_dict())
            out.append(co)
            continue
        out.append(cmap.code_object_for(call.to_dict()))
    return out


def _bound(calls: list[Any], class_map: Any, how: str, sql_names: bool) -> Any:
    """What binding decided: each call's code object (by fqid, and which calls share one) and
    every code object of the classMap afterwards, in creation order."""
    cmap = accel.class_map(class_map)
    state = BindState(cmap, sql_names)
    try:
        if how == "before":
            cos = _as_before(calls, cmap, state)
        else:
            cos = apply._bind_heads(calls, cmap, state)
    except Exception as exc:
        return type(exc)
    first: dict[int, int] = {}
    shared = [first.setdefault(id(co), i) for i, co in enumerate(cos)]
    return [co.fqid for co in cos], shared, [(o.fqid, o.labels) for o in cmap.objects()]


def _same(calls: list[Any], class_map: Any) -> None:
    for sql_names in (False, True):
        assert _bound(calls, class_map, "now", sql_names) == _bound(
            calls, class_map, "before", sql_names
        )


_HEAD_FIELDS = set(EventHead.__struct_fields__)


def _heads(events: list[dict[str, Any]]) -> list[EventHead]:
    return [
        EventHead(**{k: v for k, v in e.items() if k in _HEAD_FIELDS})
        for e in events
        if isinstance(e, dict) and e.get("event") == "call"
    ]


def _recording_calls(path: Path) -> tuple[list[Any], list[Any], Any]:
    doc = load_slim(path, extras=False, structs=True)
    slim = [e for e in doc.events if isinstance(e, SlimCall)]
    events = msgspec.json.decode(path.read_bytes()).get("events") or []
    return slim, _heads(events), doc.class_map


def test_shared_corpus(corpus: Path) -> None:
    recordings = corpus_recordings()
    assert recordings
    for path in recordings:
        try:
            slim, heads, class_map = _recording_calls(path)
        except Exception:
            continue  # (malformed on purpose)
        _same(slim, class_map)
        _same(heads, class_map)


def test_generated_corpus(tmp_path: Path) -> None:
    for path in make_corpus(tmp_path, 3, 1.5, 5, "--ext", ".appmap.json"):
        slim, heads, class_map = _recording_calls(path)
        _same(slim, class_map)
        _same(heads, class_map)


_VALUES = [None, "GET", "get", "POST", "/a", "/a/1", "/a/{id}", "/b/2", 1, True, 1.0, ["x"], ""]
_URLS = [None, "https://a.test/x", "https://a.test/y?q=1", "http://b.test", 1, True, ["u"]]


def _random_call(rng: random.Random, i: int) -> EventHead:
    fields: dict[str, Any] = {"id": i, "event": "call", "thread_id": 1}
    kind = rng.randrange(5)
    if kind == 0 or rng.random() < 0.2:
        fields.update(
            defined_class=rng.choice(["A", "B", "a.C"]),
            method_id=rng.choice(["m", "n", None]),
            path=rng.choice(["a.rb", None]),
            lineno=rng.choice([1, 2, None]),
            static=rng.choice([True, False]),
        )
    if kind == 1:
        request = {
            k: rng.choice(_VALUES)
            for k in ("request_method", "path_info", "normalized_path_info")
            if rng.random() < 0.8
        }
        fields["http_server_request"] = rng.choice([request, request, None, "text"])
    if kind == 2:
        request = {"request_method": rng.choice(_VALUES), "url": rng.choice(_URLS)}
        fields["http_client_request"] = rng.choice([request, request, None])
    if kind == 3:
        fields["sql_query"] = {"sql": rng.choice(["SELECT 1", "SELECT 2"])}
    return EventHead(**fields)


def test_random_calls() -> None:
    rng = random.Random(7)
    for _ in range(60):
        calls = [_random_call(rng, i) for i in range(rng.randrange(1, 80))]
        _same(calls, [])


def test_c_loop_as_python(monkeypatch: Any) -> None:
    """`_bind_heads`' loop in C (`_speedups.bind_heads`) binds as the Python loop does: calls
    of both head classes mixed in one list, key fields that are unhashable (the same
    TypeError), huge ints, NaN, non-string method names; the function cache filled alike."""
    if apply._BIND_HEADS is None:
        return  # (no accelerator: the Python loop is the one tested above)
    rng = random.Random(3)
    odd: list[Any] = [["a.rb"], 10**40, float("nan"), -1, b"x", ("t",), {"k": 1}]
    for _ in range(80):
        calls: list[Any] = []
        for i in range(rng.randrange(1, 60)):
            call = _random_call(rng, i)
            if rng.random() < 0.15:
                field = rng.choice(["path", "lineno", "defined_class", "static", "method_id"])
                call = msgspec.structs.replace(call, **{field: rng.choice(odd)})
            if rng.random() < 0.3:
                fields = msgspec.structs.asdict(call)
                del fields["event"], fields["parent_id"], fields["elapsed_instrumentation"]
                call = SlimCall(**fields)
            calls.append(call)
        for sql_names in (False, True):
            fast = _bound(calls, [], "now", sql_names)
            with monkeypatch.context() as m:
                m.setattr(apply, "_BIND_HEADS", None)
                slow = _bound(calls, [], "now", sql_names)
            assert fast == slow
            assert fast == _bound(calls, [], "before", sql_names)


_KEY_PARTS: dict[str, list[Any]] = {
    # equal by == across types (1, True, 1.0), strings of each width, long and near-equal ones
    "method_id": ["m", "n", "m\u00e9", "m\U0001f600", "a_rather_long_method_name_x", 7],
    "path": ["a.rb", "a.rc", "app/models/long/file.rb", "app/models/long/file.rc", None, "\u0434"],
    "lineno": [1, 2, True, 1.0, None, 10**30, -(2**63), 2**62],
    "defined_class": ["A", "B", "a.C", "\u00c4", None, "Abcdefgh", "Abcdefgi"],
    "static": [True, False, None, 1, 0],
}


def test_memo_across_batches(monkeypatch: Any) -> None:
    """The C loop's memo of the function cache (`BindState.memo`) answers as the cache does,
    batch after batch of one state: keys equal by == though of other types (`1`, `True` and
    `1.0` as lineno, `1` as static: left to the dict, which shares their entry), strings of
    every width, long ones that differ in their last byte, ints past a C long."""
    if apply._BIND_HEADS is None:
        return
    rng = random.Random(11)
    for _ in range(40):
        batches: list[list[Any]] = []
        for _ in range(rng.randrange(1, 5)):
            batch: list[Any] = []
            for i in range(rng.randrange(1, 40)):
                fields: dict[str, Any] = {k: rng.choice(v) for k, v in _KEY_PARTS.items()}
                if rng.random() < 0.2:
                    del fields[rng.choice(list(fields))]  # (read UNSET)
                if rng.random() < 0.1:
                    fields["http_client_request"] = {"request_method": "GET", "url": "u"}
                head = EventHead(id=i, event="call", thread_id=1, **fields)
                if rng.random() < 0.5:
                    fields = msgspec.structs.asdict(head)
                    del fields["event"], fields["parent_id"], fields["elapsed_instrumentation"]
                    head = SlimCall(**fields)
                batch.append(head)
            batches.append(batch)
        outcomes = []
        for c_loop in (True, False):
            with monkeypatch.context() as m:
                if not c_loop:
                    m.setattr(apply, "_BIND_HEADS", None)
                cmap = accel.class_map([])
                state = BindState(cmap, True)
                cos = [co for batch in batches for co in apply._bind_heads(batch, cmap, state)]
            first: dict[int, int] = {}
            shared = [first.setdefault(id(co), i) for i, co in enumerate(cos)]
            outcomes.append(([co.fqid for co in cos], shared, sorted(map(repr, state.functions))))
        assert outcomes[0] == outcomes[1]
