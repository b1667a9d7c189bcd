"""Captured runtime values as AppMap parameter objects.

`describe(value, name=None)` returns `{name?, class, value, object_id, size?, properties?}`:
- `class` is the dotted type name (`builtins.str`, `shop.models.Product`);
- `value` is a repr capped at `MAX_VALUE` characters. A longer repr ends with a visible marker
  (`… (+N chars)`); big containers are rendered from their first items only (`, … +N items]`), so
  one huge object never costs more than a bounded amount of time or bytes;
- a repr that raises (or returns a non-string) becomes the placeholder `<Class object: repr
  failed (Error)>` — the app never sees the error;
- `size` is the length of lists, tuples, dicts, sets and frozensets; `properties` lists the first
  keys of a dict with string keys (`[{name, class}]`), as AppMap does for message bodies.

`encode(value)` is the hot-path form used by code recording: the parameter object's JSON members,
ready to be joined into the document when it is written; `compact(value)` is the same as a tuple
`(class, value, object_id, size)`. Stdlib and orjson only; Python 3.9+.
"""

from __future__ import annotations

from typing import Any

import orjson

MAX_VALUE = 100  # characters of a captured repr (AppMap: display strings ≤ 100 characters)
MAX_ITEMS = 10  # container items rendered before the truncation marker
MAX_PROPERTIES = 20  # dict keys listed in `properties`
MAX_DEPTH = 3  # nesting rendered inside containers

_SIZED = (list, tuple, dict, set, frozenset)
_SCALARS = (int, float, bool, type(None), complex)
_class_names: dict[type, str] = {}


def class_name(value: Any) -> str:
    """`module.QualName` of the value's type (cached per type)."""
    tp = type(value)
    name = _class_names.get(tp)
    if name is None:
        try:
            name = f"{tp.__module__}.{tp.__qualname__}"
        except Exception:  # a broken metaclass must not break the app
            name = "builtins.object"
        if len(_class_names) > 20_000:  # dynamically created types: keep the cache bounded
            _class_names.clear()
        _class_names[tp] = name
    return name


def cap(text: str, limit: int = MAX_VALUE) -> str:
    """`text`, cut at `limit` characters with a visible marker."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} chars)"


def _failed(value: Any, exc: BaseException) -> str:
    return f"<{class_name(value)} object: repr failed ({type(exc).__name__})>"


def _render(value: Any, depth: int, budget: int) -> str:
    """A bounded repr: containers show their first items, strings their first characters."""
    tp = type(value)
    if tp is str or tp is bytes or tp is bytearray:
        if len(value) <= budget:
            return repr(value)
        # repr of the shown part only: a 1 GB string costs as much as a 100-character one
        shown = repr(value[:budget])[: budget + 2]
        unit = "chars" if tp is str else "bytes"
        return f"{shown}… (+{len(value) - budget} {unit})"
    if tp in _SCALARS:
        return repr(value)
    if tp is list or tp is tuple or tp is set or tp is frozenset or tp is dict:
        if depth >= MAX_DEPTH and value:
            return f"{tp.__name__}(… {len(value)} items)"
        return _render_container(value, tp, depth, budget)
    return repr(value)


def _render_container(value: Any, tp: type, depth: int, budget: int) -> str:
    n = len(value)
    if tp is dict:
        opening, closing = "{", "}"
    elif tp is list:
        opening, closing = "[", "]"
    elif tp is tuple:
        opening, closing = "(", ",)" if n == 1 else ")"
    elif n == 0:
        return f"{tp.__name__}()"
    else:
        opening, closing = ("{", "}") if tp is set else ("frozenset({", "})")
    parts: list[str] = []
    used = len(opening)
    shown = 0
    items = iter(value.items()) if tp is dict else iter(value)
    for item in items:
        if shown >= MAX_ITEMS or used > budget:
            break
        if tp is dict:
            k, v = item
            text = f"{_render(k, depth + 1, budget)}: {_render(v, depth + 1, budget)}"
        else:
            text = _render(item, depth + 1, budget)
        parts.append(text)
        used += len(text) + 2
        shown += 1
    body = ", ".join(parts)
    if shown < n:
        marker = f"… +{n - shown} items"
        body = f"{body}, {marker}" if body else marker
        return f"{opening}{body}{closing.lstrip(',')}"
    return f"{opening}{body}{closing}"


def safe_repr(value: Any, limit: int = MAX_VALUE) -> str:
    """The capped display string of `value`; never raises."""
    try:
        text = _render(value, 0, limit)
        if type(text) is not str:
            raise TypeError("__repr__ returned non-string")
    except Exception as exc:
        return _failed(value, exc)
    if "… (+" in text[limit:]:
        return text  # a long string or bytes value, already cut with its own marker
    return cap(text, limit)


_PLAIN_NAMES = {
    int: "builtins.int",
    bool: "builtins.bool",
    float: "builtins.float",
    type(None): "builtins.NoneType",
}


def compact(value: Any) -> tuple[str, str, int, int | None]:
    """`(class, value, object_id, size)` — the cheap form stored while recording."""
    tp = type(value)
    plain = _PLAIN_NAMES.get(tp)
    if plain is not None:  # the common case, inlined
        try:
            text = repr(value)
        except ValueError as exc:  # an int too large to convert
            text = _failed(value, exc)
        return (plain, text if len(text) <= MAX_VALUE else cap(text), id(value), None)
    if tp is str and len(value) <= MAX_VALUE:
        return ("builtins.str", repr(value), id(value), None)
    size = len(value) if isinstance(value, _SIZED) else None
    return (class_name(value), safe_repr(value), id(value), size)


_heads: dict[type, bytes] = {}
_default_repr: set[type] = set()  # types whose repr is object.__repr__: "<mod.T object at 0x…>"
_by_identity: dict[tuple[type, int], bytes] = {}


def _head(tp: type, value: Any) -> bytes:
    head = b'"class":' + orjson.dumps(class_name(value)) + b',"value":'
    if len(_heads) > 20_000:
        _heads.clear()
        _default_repr.clear()
    _heads[tp] = head
    if getattr(tp, "__repr__", None) is object.__repr__:
        _default_repr.add(tp)
    return head


def encode(value: Any, prefix: bytes = b"{") -> bytes:
    """`value`'s parameter object as JSON: `prefix` (`{`, or `{"name":…,"kind":…,`), then
    `"class":…,"value":…,"object_id":…[,"size":…]}`.

    The hot-path form: code recording stores these few bytes per value, so writing a recording
    is mostly joining them.
    """
    tp = type(value)
    head = _heads.get(tp) or _head(tp, value)
    if tp in _PLAIN_NAMES:
        try:
            text = repr(value)
        except ValueError as exc:  # an int too large to convert
            text = _failed(value, exc)
        if len(text) > MAX_VALUE:
            text = cap(text)
        return b'%b%b%b,"object_id":%d}' % (prefix, head, orjson.dumps(text), id(value))
    if tp is str and len(value) <= MAX_VALUE:
        return b'%b%b%b,"object_id":%d}' % (prefix, head, orjson.dumps(repr(value)), id(value))
    if tp in _default_repr:
        # the default repr depends only on the type and the address: the usual receiver (the
        # same `self` again and again) is encoded once
        key = (tp, id(value))
        done = _by_identity.get(key)
        if done is None:
            if len(_by_identity) > 50_000:
                _by_identity.clear()
            done = _by_identity[key] = b'%b%b,"object_id":%d}' % (
                head,
                orjson.dumps(safe_repr(value)),
                id(value),
            )
        return prefix + done
    text = safe_repr(value)
    if isinstance(value, _SIZED):
        return b'%b%b%b,"object_id":%d,"size":%d}' % (
            prefix,
            head,
            orjson.dumps(text),
            id(value),
            len(value),
        )
    return b'%b%b%b,"object_id":%d}' % (prefix, head, orjson.dumps(text), id(value))


def expand(packed: tuple[str, str, int, int | None], name: str | None = None) -> dict[str, Any]:
    """The parameter-object dict of a `compact()` tuple."""
    out: dict[str, Any] = {} if name is None else {"name": name}
    out["class"] = packed[0]
    out["value"] = packed[1]
    out["object_id"] = packed[2]
    if packed[3] is not None:
        out["size"] = packed[3]
    return out


def describe(value: Any, name: str | None = None) -> dict[str, Any]:
    """The AppMap parameter object for `value` (see module doc)."""
    out = expand(compact(value), name)
    if type(value) is dict and value:
        props: list[dict[str, str]] = []
        for key, item in value.items():
            if len(props) >= MAX_PROPERTIES:
                break
            if type(key) is str:
                props.append({"name": key, "class": class_name(item)})
        if props:
            out["properties"] = props
    return out
