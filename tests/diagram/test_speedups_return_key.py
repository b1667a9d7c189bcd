"""The walk's key of a return value with properties, made in C (`return_key_here` in
tracetool/_speedups_diagram.c) for the usual shapes and by `builder._return_key` for the others:
the same diagrams either way (tests/diagram/test_speedups_diagram.py runs the random and mutated
recordings), and the same error for a key that cannot be hashed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.diagram.test_speedups_diagram import SAVE, _write, needs_c
from tracetool.diagram import builder
from tracetool.diagram.builder import DiagramOptions, build_diagram
from tracetool.diagram.service import render_bytes
from tracetool.trace.slim import load_slim


def _recording(tmp_path: Path, values: list[Any]) -> Path:
    events: list[Any] = []
    for i, value in enumerate(values):
        events.append({"id": 2 * i + 1, "event": "call", "thread_id": 1, **SAVE})
        ret = {"id": 2 * i + 2, "event": "return", "thread_id": 1, "parent_id": 2 * i + 1}
        events.append({**ret, "return_value": value, "elapsed": 0.25})
    return _write(tmp_path / "r.appmap.json", events)


def _outcome(path: Path) -> list[Any]:
    """The json diagram of `path` read as structs and as dicts (or the error)."""
    out: list[Any] = []
    for structs in (True, False):
        try:
            doc = load_slim(path, extras=False, structs=structs)
            out.append(render_bytes(build_diagram(doc, DiagramOptions()), "json"))
        except TypeError as exc:
            out.append((TypeError, str(exc)))
    return out


VALUES: list[Any] = [
    {"class": "Hash", "properties": [{"name": "a", "class": "Int"}, "odd", {"name": None}]},
    {"class": "Hash", "properties": [{"name": "a", "class": "Int"}, "odd", {"name": None}]},
    {"class": "Hash", "properties": [{"name": "a", "class": "Str"}]},
    {"class": "Hash", "properties": None},
    {"properties": []},
    {"properties": [{"class": "A"}, {"name": "b", "class": "B", "x": 1}, 1, None, []]},
]


@needs_c
@pytest.mark.parametrize(
    "values",
    [VALUES, [{"properties": [{"name": ["unhashable"], "class": "L"}]}], [{"properties": {}}]],
)
def test_same_with_and_without_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, values: list[Any]
) -> None:
    path = _recording(tmp_path, values)
    fast = _outcome(path)
    monkeypatch.setattr(builder, "_WALK", None)
    assert fast == _outcome(path)
