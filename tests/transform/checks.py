"""Assertions of the sanitize guarantee, shared by the planted-secret, corpus and example-app tests."""

from __future__ import annotations

import copy
import re
from typing import Any

import orjson

from tracetool.trace import ClassMap, build_call_tree, from_data, normalize, parse
from tracetool.trace import events as ev
from tracetool.transform import captured
from tracetool.transform.sanitize import SanitizeOptions, sanitize_bytes
from tracetool.transform.tokens import BUILTIN_ALLOW, TOKEN

WINDOW = 6
_NUMERIC_SEGMENT = re.compile(r"/[0-9]+(?=/|$)")
_QUOTED_LITERAL = re.compile(r"'[^']*'")


def sanitized(data: dict[str, Any], *allow: str) -> tuple[bytes, dict[str, Any]]:
    out, report = sanitize_bytes(orjson.dumps(data), SanitizeOptions(frozenset(allow)), "t")
    assert out is not None and report.status == "sanitized"
    return out, orjson.loads(out)


def strings(obj: Any) -> list[str]:
    """Every string (keys included) in a JSON value, iteratively."""
    found, stack = [], [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, dict):
            found.extend(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            found.append(repr(node))
    return found


def _windows(secret: str) -> set[str]:
    return {secret[i : i + WINDOW] for i in range(len(secret) - WINDOW + 1)}


def assert_no_secret_survives(out: bytes, secrets: list[str]) -> None:
    text = out.decode("utf-8")
    flat = "\x00".join(strings(orjson.loads(out)))
    for secret in secrets:
        for piece in _windows(secret):
            assert piece not in text, f"{piece!r} of secret {secret!r} survives in the bytes"
            assert piece not in flat, f"{piece!r} of secret {secret!r} survives in a value"


def _blank(data: dict[str, Any]) -> dict[str, Any]:
    """The document with every captured field replaced by one constant: what must not change."""
    blank = copy.deepcopy(data)

    def constant(kind: str, value: Any, context: Any) -> Any:
        return {} if kind == captured.ENTRY else "X"  # an unknown key may itself be masked

    for event in blank["events"]:
        captured.rewrite_event(event, constant)
    metadata = blank.get("metadata", {})
    captured.rewrite_metadata(metadata, constant)
    metadata.pop("sanitized", None)
    if isinstance(metadata.get("git"), dict):
        metadata["git"].pop("repository", None)
    if not metadata:  # sanitize adds metadata (for its marker) where there was none
        blank.pop("metadata", None)
    return blank


def _normalized(data: dict[str, Any]) -> dict[str, Any]:
    doc = from_data(copy.deepcopy(data))
    normalize(doc)
    return doc.data


def _structure(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Pre-order (depth, kind, code object for functions) of the call tree."""
    doc = parse(orjson.dumps(data))
    cmap = ClassMap.from_json(doc.class_map)
    shape = []
    for node in build_call_tree(doc.events):
        kind = ev.kind(node.call)
        fqid = cmap.code_object_for(node.call).fqid if kind == ev.FUNCTION else None
        route = ev.normalized_path_info(node.call) if kind == ev.HTTP_SERVER else None
        shape.append((node.depth, kind, fqid, route, ev.status_code(node.ret)))
    return shape


def _diagram_shape(data: dict[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Actors and the pre-order (depth, node type, callee, function name, status) of the diagram."""
    from tracetool.diagram import build_diagram

    diagram = build_diagram(parse(orjson.dumps(data)))
    shape: list[tuple[Any, ...]] = []
    stack = [(a, 0) for a in reversed(diagram.root_actions)]
    while stack:
        action, depth = stack.pop()
        name = action.name if action.node_type == 3 else None
        callee = action.callee.id if action.callee else None
        shape.append((depth, action.node_type, callee, name, getattr(action, "status", None)))
        stack.extend((c, depth + 1) for c in reversed(action.children))
    return [a.id for a in diagram.actors], shape


def assert_schema_and_structure_kept(original: dict[str, Any], result: dict[str, Any]) -> None:
    expected = _normalized(original)
    assert _blank(result) == _blank(expected)
    assert result.get("classMap") == original.get("classMap")
    assert _structure(result) == _structure(expected)
    # issue 7: the sanitized recording still produces the same sequence-diagram structure
    assert _diagram_shape(result) == _diagram_shape(expected)


def assert_every_value_masked(result: dict[str, Any], allow: frozenset[str] = frozenset()) -> None:
    kept = BUILTIN_ALLOW | allow

    def check(kind: str, value: Any, context: Any) -> Any:
        if kind in (
            captured.VALUE,
            captured.MESSAGE,
            captured.HEADER,
            captured.ROUTED_PATH,
            captured.OTHER,
            captured.ENTRY,
        ):
            for text in strings(value):
                inner = text[1:-1] if len(text) >= 2 and text[0] == text[-1] in "'\"" else text
                assert TOKEN.fullmatch(text) or text in kept or inner in kept or not inner, (
                    kind,
                    text,
                )
        elif kind in (captured.PATH, captured.URL) and isinstance(value, str):
            assert not _NUMERIC_SEGMENT.search(value), value
            assert "?" not in value and "#" not in value, value
        elif kind == captured.SQL and isinstance(value, str):
            assert TOKEN.fullmatch(value) or not _QUOTED_LITERAL.search(value), value
        return value

    for event in result["events"]:
        captured.rewrite_event(event, check)
    captured.rewrite_metadata(result.get("metadata", {}), check)
