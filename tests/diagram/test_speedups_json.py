"""The C writer of a diagram's actions (tracetool/_speedups_json.c, `actions_json`) writes
exactly the bytes of the Python path it replaces (`orjson.dumps` of the actions with
`json_default`, as `tracetool.diagram.service.actions_text` cuts them): the diagrams of every
recording of the shared corpus and of generated ones, random action trees with random values
(strings to escape, 64-bit integers, floats of every kind, nested dicts and lists), and trees
nested around orjson's depth limit; what it cannot write the same way it declines (None), and
the Python path then writes it or raises as it always did."""

from __future__ import annotations

import math
import random
import struct
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import corpus_recordings, make_corpus
from tracetool.diagram import service
from tracetool.diagram.builder import DiagramOptions, build_diagram
from tracetool.diagram.model import Action, Actor, Diagram, json_default
from tracetool.diagram.service import json_chunks
from tracetool.trace.slim import load_slim

try:
    from tracetool import _speedups  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - a build without a compiler
    _speedups = None

needs_c = pytest.mark.skipif(
    _speedups is None or service._ACTIONS_JSON is None, reason="tracetool._speedups is not built"
)


def _reference(actions: list[Action]) -> bytes | type[Exception]:
    try:
        return orjson.dumps([actions], option=orjson.OPT_INDENT_2, default=json_default)[5:-6]
    except orjson.JSONEncodeError:
        return orjson.JSONEncodeError


def _check(actions: list[Action], declined_ok: bool = False) -> bool:
    """The C text of `actions` is the reference's, or declined (allowed with `declined_ok`);
    whether it was written."""
    fast = _speedups.actions_json(actions, Action)
    if fast is None:
        assert declined_ok, actions
        return False
    assert fast == _reference(actions)
    return True


def _whole(diagram: Diagram) -> None:
    roots = diagram.root_actions
    for start in range(0, len(roots), 50):
        _check(roots[start : start + 50])


@needs_c
def test_shared_corpus(corpus: Path) -> None:
    recordings = corpus_recordings()
    assert recordings
    for path in recordings:
        try:
            doc = load_slim(path, extras=False)
        except Exception:
            continue  # (malformed on purpose: no diagram either way)
        for options in (DiagramOptions(), DiagramOptions(loops=False, client_routes=True)):
            _whole(build_diagram(doc, options))


@needs_c
def test_generated_corpus(tmp_path: Path) -> None:
    for path in make_corpus(tmp_path, 4, 2.0, 7, "--ext", ".appmap.json"):
        _whole(build_diagram(load_slim(path, extras=False), DiagramOptions()))


@needs_c
def test_written_files_are_the_same_with_and_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_corpus(tmp_path / "in", 1, 1.0, 3, "--ext", ".appmap.json")[0]
    diagram = build_diagram(load_slim(path, extras=False), DiagramOptions())
    fast = b"".join(json_chunks(diagram, batch=7))
    monkeypatch.setattr(service, "_ACTIONS_JSON", None)
    assert fast == b"".join(json_chunks(diagram, batch=7))
    assert fast == service.render_bytes(diagram, "json")


# ---------------------------------------------------------------- random values and trees

_CHARS = ['"', "\\", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f", "é", "€", "😀", "/"]


def _string(rng: random.Random) -> str:
    n = rng.choice([0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100])
    chars = [chr(rng.randint(0x20, 0x7E)) for _ in range(n)]
    for _ in range(rng.choice([0, 0, 0, 1, 3])):
        if chars:
            chars[rng.randrange(len(chars))] = rng.choice(_CHARS)
    return "".join(chars)


def _float(rng: random.Random) -> float:
    kind = rng.randrange(6)
    if kind == 0:  # any bits (NaN and infinities included)
        (value,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        return float(value)
    if kind == 1:  # whole numbers of microseconds and the like
        return round(rng.random() * 10 ** rng.randint(-6, 16), rng.randint(0, 9))
    if kind == 2:  # around the edges of the notations
        edge = rng.choice([1e-5, 1e-4, 1.0, 1e15, 1e16, 1e17, 5e-324, 2.2250738585072014e-308])
        return edge * rng.choice([1, -1]) * rng.choice([1.0, 1 + 1e-15, 1 - 1e-16, 1.5, 0.999])
    if kind == 3:
        return rng.choice([0.0, -0.0, 1.0, -1.0, 0.1, 0.00001, 1e-7, 123456789012345.0])
    if kind == 4:
        return rng.random() * 10 ** rng.randint(-30, 30)
    return rng.uniform(-1e6, 1e6)


class _Str(str):
    pass


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(12 if depth < 4 else 8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice(
            [0, 1, -1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, rng.randint(-(10**6), 10**6)]
        )
    if kind == 3:
        return _float(rng)
    if kind in (4, 5, 6):
        return _string(rng)
    if kind == 7:
        rare = rng.randrange(40)  # (what the C declines, now and then)
        if rare == 0:
            return 2**64
        if rare == 1:
            return "lone \udc80 surrogate"
        if rare == 2:
            return (1, 2)
        if rare == 3:
            return _Str("subclass")
        return _string(rng)
    if kind in (8, 9):
        out: dict[Any, Any] = {}
        for _ in range(rng.randrange(4)):
            out[_string(rng)] = _value(rng, depth + 1)
        if rng.randrange(50) == 0:
            out[1] = "a key that is not a string"
        return out
    return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]


_ACTORS = [Actor("package:app", "app", 0), Actor("http:HTTP server requests", "HTTP", 1)]


def _action(rng: random.Random) -> Action:
    a = Action(rng.choice([1, 2, 3, 3, 3, 4, 5, 6, 7]), _string(rng))
    a.subtree_digest = _string(rng)
    if rng.random() < 0.8:
        a.caller = rng.choice(_ACTORS)
    if rng.random() < 0.8:
        a.callee = rng.choice(_ACTORS)
    a.name = rng.choice([None, _string(rng)])
    a.static = rng.choice([True, False])
    a.route = rng.choice([None, _string(rng)])
    a.status = rng.choice([None, 200, 404, "500", _value(rng)])
    a.query = rng.choice([None, _string(rng)])
    if rng.random() < 0.7:
        a.stable_properties = {"id": _string(rng), "x": _value(rng)}
    if rng.random() < 0.7:
        a.return_value = rng.choice([{}, {"returnValueType": {"name": "X"}}, _value(rng)])
    if rng.random() < 0.8:
        a.elapsed = _float(rng) if rng.random() < 0.9 else rng.randrange(5)
    a.event_ids = [rng.randrange(10**6) for _ in range(rng.randrange(4))]
    a.labels = rng.choice([None, [], [_string(rng)], ["a", "b"]])
    a.count = rng.randrange(5)
    a.diff_mode = rng.choice([None, None, 1, 2, 3])
    a.former_name = rng.choice([None, None, _string(rng)])
    a.former_result = rng.choice([None, None, _string(rng)])
    return a


def _tree(rng: random.Random, size: int) -> list[Action]:
    roots: list[Action] = []
    every: list[Action] = []
    for _ in range(size):
        a = _action(rng)
        if every and rng.random() < 0.8:
            rng.choice(every).children.append(a)
        else:
            roots.append(a)
        every.append(a)
    return roots


@needs_c
def test_random_trees() -> None:
    rng = random.Random(18)
    written = 0
    for _ in range(1500):
        written += _check(_tree(rng, rng.randrange(1, 12)), declined_ok=True)
    assert written > 1000  # (the rare values aside, everything is written in C)


@needs_c
def test_floats() -> None:
    rng = random.Random(5)
    values = [_float(rng) for _ in range(100_000)]
    values += [
        round(rng.random() * 10 ** rng.randint(-6, 15), rng.randint(0, 9)) for _ in range(50_000)
    ]
    values += [
        x * 10**e for x in (1.0, 1.5, 9.999999999999999, 4.849251122277342) for e in range(-25, 25)
    ]
    finite = [v for v in values if math.isfinite(v)]
    for start in range(0, len(finite), 5000):
        a = Action(3, "d")
        a.stable_properties = {"values": finite[start : start + 5000]}
        assert _check([a])
        a.elapsed = finite[start]
        assert _check([a])


@needs_c
def test_depth_limit() -> None:
    """Chains of actions and nested values on both sides of orjson's depth limit: the C text is
    the reference's, or declined (the Python path then raises and its caller falls back)."""
    for depth in [1, 50, 95, 96, 97, 98, 99, 100, 101, 120, 125, 126, 127, 128, 300]:
        root = Action(1)
        a = root
        for _ in range(depth - 1):
            b = Action(3, "d")
            b.caller = b.callee = _ACTORS[0]
            a.children = [b]
            a = b
        written = _check([root], declined_ok=True)
        assert written == (depth <= 98), depth
        nested: Any = "x"
        for _ in range(depth):
            nested = {"k": [nested]} if depth % 2 else [nested]
        leaf = Action(3, "d")
        leaf.stable_properties = {"deep": nested}
        _check([leaf], declined_ok=depth > 50)


@needs_c
def test_declines_what_it_does_not_know() -> None:
    a = Action(3, "d")
    assert _speedups.actions_json([a], Actor) is None  # (not an Action class it knows)

    class Sub(Action):
        __slots__ = ()

    assert _speedups.actions_json([Sub(3, "d")], Action) is None
    assert _speedups.actions_json([Action.bare("d")], Action) is None  # (unset slots)
    assert _speedups.actions_json([a, "not an action"], Action) is None
    b = Action(3, "d")
    b.caller = "an actor without an id"  # type: ignore[assignment]
    assert _speedups.actions_json([b], Action) is None
    c = Action(3, "d")
    c.node_type = True  # type: ignore[assignment]
    assert _speedups.actions_json([c], Action) is None
    d = Action(3, "d")
    d.labels = ("a",)  # type: ignore[assignment]
    assert _speedups.actions_json([d], Action) is None
    e = Action(3, "d")
    e.elapsed = math.nan
    assert _speedups.actions_json([e], Action) is None
    assert _speedups.actions_json([], Action) == b""
    with pytest.raises(TypeError):
        _speedups.actions_json((a,), Action)
