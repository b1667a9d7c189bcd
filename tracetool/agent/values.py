"""Captured runtime values as AppMap parameter objects — rendered without running app code.

Recording must never change what the app does, so a captured value is rendered by the agent
itself, never by the value's own `__repr__`/`__str__`/`__len__`/`__iter__` (a lazy Django
QuerySet runs its query when repr'd, a model's `__str__` may follow a foreign key, a generator is
consumed by iteration). What is shown:
- builtins — `str`, `bytes`, `bytearray`, `int`, `float`, `complex`, `bool`, `None` — and the
  builtin containers `list`, `tuple`, `dict`, `set`, `frozenset` (and their subclasses, read
  through the builtin methods, so an overridden `__iter__` is not called) holding such values;
- a known-pure set: `uuid.UUID`, `datetime` `date`/`datetime`/`time`/`timedelta`/`timezone`,
  `decimal.Decimal`, `fractions.Fraction`, `pathlib` paths, `range`, compiled regexes, plain
  functions, classes and modules (each only while its class keeps the standard `__repr__`);
  enums (`<Color.RED: 1>`), dataclasses (`Point(x=1, y=2)`, fields read from the instance, never
  through a descriptor) and namedtuples — their contents rendered by these same rules;
- `str`/`int`/`float` subclasses by their builtin value;
- anything else as `<module.Class object at 0x…>` — the class and the object id, plus `size`
  only for the builtin containers;
- classes listed under `safe_repr:` in trace.yml (or with such a base class) by their own `repr()`
  (an opt-in: the app says it is harmless). A repr that raises (or returns a non-string) becomes
  `<Class object: repr failed (Error)>` — the app never sees the error.

`describe(value, name=None)` returns `{name?, class, value, object_id, size?, properties?}`:
`class` is the dotted type name (`builtins.str`, `shop.models.Product`); `value` is at most
`MAX_VALUE` characters *including* the visible truncation marker (`… (+N chars)`; containers
show their first items, `, … +N items]`), so one huge object costs a bounded amount of time and
bytes; `size` is the length of builtin containers; `properties` lists the first keys of a dict
with string keys (`[{name, class}]`), as AppMap does for message bodies.

`encode(value)` is the hot-path form used by code recording: the parameter object's JSON members,
ready to be joined into the document when it is written; `compact(value)` is the same as a tuple
`(class, value, object_id, size)`. `exception_message(exc)` is an exception's message by the same
rules. Stdlib and orjson only; Python 3.9+.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional

import orjson

MAX_VALUE = 100  # characters of a captured value, marker included (AppMap's schema: ≤ 100)
MAX_ITEMS = 10  # container items rendered before the truncation marker
MAX_PROPERTIES = 20  # dict keys listed in `properties`
MAX_DEPTH = 3  # nesting rendered inside containers

_CONTAINERS = (dict, list, tuple, set, frozenset)
_SCALARS = (int, float, bool, type(None), complex)
_class_names: dict[type, str] = {}


def class_name(value: Any) -> str:
    """`module.QualName` of the value's type (cached per type)."""
    tp = type(value)
    name = _class_names.get(tp)
    if name is None:
        name = _type_name(tp)
        if len(_class_names) > 20_000:  # dynamically created types: keep the cache bounded
            _class_names.clear()
        _class_names[tp] = name
    return name


def _type_name(tp: type) -> str:
    try:
        return f"{tp.__module__}.{tp.__qualname__}"
    except Exception:  # a broken metaclass must not break the app
        return "builtins.object"


def _marker(cut: int, unit: str) -> str:
    return f"… (+{cut} {unit})"


def cap(text: str, limit: int = MAX_VALUE, unit: str = "chars") -> str:
    """`text`, at most `limit` characters: a longer one is cut and ends with a visible marker
    (`… (+N chars)`, counted in the limit; N is what was cut)."""
    n = len(text)
    if n <= limit:
        return text
    keep = limit - len(_marker(n - limit, unit))
    keep = max(0, limit - len(_marker(n - keep, unit)))
    return text[:keep] + _marker(n - keep, unit)


def _failed(value: Any, exc: BaseException) -> str:
    return f"<{class_name(value)} object: repr failed ({type(exc).__name__})>"


def _opaque_text(value: Any) -> str:
    return f"<{class_name(value)} object at {id(value):#x}>"


# -- what a type is rendered as ----------------------------------------------------------------
# A kind is (render(value, depth, budget) -> str, base container type or None). Kinds are decided
# once per type (`_classify`) from the type's MRO and class dicts only — no app code runs.

Render = Callable[[Any, int, int], str]

# known-pure types by (module, qualname): the standard repr of these is safe; a subclass keeps
# the kind only while it does not override `__repr__`
_PURE = {
    ("uuid", "UUID"),
    ("datetime", "date"),
    ("datetime", "datetime"),
    ("datetime", "time"),
    ("datetime", "timedelta"),
    ("datetime", "timezone"),
    ("decimal", "Decimal"),
    ("fractions", "Fraction"),
    ("pathlib", "PurePath"),
    ("pathlib._local", "PurePath"),
    ("ipaddress", "IPv4Address"),
    ("ipaddress", "IPv6Address"),
    ("re", "Pattern"),
    ("logging", "Logger"),
    ("builtins", "range"),
    ("builtins", "function"),
    ("builtins", "builtin_function_or_method"),
    ("builtins", "module"),
    ("builtins", "type"),
}

_opt_in: Optional[frozenset[str]] = None  # trace.yml `safe_repr:` (loaded on first use)
_kinds: dict[type, tuple[Render, Optional[type]]] = {}


def configure(safe_repr: Any = None) -> None:
    """Use these class names as the `safe_repr:` opt-ins (None: read trace.yml on next use)."""
    global _opt_in
    _opt_in = None if safe_repr is None else frozenset(safe_repr)
    _kinds.clear()
    _heads.clear()
    _opaque_heads.clear()
    _by_identity.clear()


def _opted_in() -> frozenset[str]:
    global _opt_in
    if _opt_in is None:
        try:
            from tracetool.agent.config import active_config

            _opt_in = frozenset(active_config().safe_repr)
        except Exception:
            _opt_in = frozenset()
    return _opt_in


def _call_repr(value: Any, depth: int, budget: int) -> str:
    text = repr(value)
    if type(text) is not str:
        raise TypeError("__repr__ returned non-string")
    return text


def _opaque(value: Any, depth: int, budget: int) -> str:
    return _opaque_text(value)


def _str_value(value: Any, depth: int, budget: int) -> str:
    return _render(str.__str__(value), depth, budget)  # the builtin copy: no __str__/__repr__


def _int_value(value: Any, depth: int, budget: int) -> str:
    return int.__repr__(value)


def _float_value(value: Any, depth: int, budget: int) -> str:
    return float.__repr__(value)


def _enum_value(value: Any, depth: int, budget: int) -> str:
    inner = value.__dict__
    name = inner.get("_name_")
    shown = _render(inner.get("_value_"), depth + 1, budget) if depth < MAX_DEPTH else "…"
    return f"<{type(value).__name__}.{name}: {shown}>"


def _named_fields(
    value: Any, names: tuple[str, ...], items: list[Any], depth: int, budget: int
) -> str:
    parts: list[str] = []
    used = 0
    for name, item in zip(names, items):
        if used > budget:
            parts.append("…")
            break
        text = f"{name}={_render(item, depth + 1, budget) if depth < MAX_DEPTH else '…'}"
        parts.append(text)
        used += len(text) + 2
    return f"{type(value).__name__}({', '.join(parts)})"


def _namedtuple_kind(names: tuple[str, ...]) -> Render:
    def render(value: Any, depth: int, budget: int) -> str:
        return _named_fields(value, names, list(tuple.__iter__(value)), depth, budget)

    return render


_MISSING = object()


def _dataclass_kind(tp: type, names: tuple[str, ...]) -> Render:
    # Fields are read from the instance dict (or a __slots__ member), never through another
    # descriptor: an ORM-mapped dataclass's unloaded relationship would run a query.
    getters: list[Any] = []
    for name in names:
        attr = None
        for klass in tp.__mro__:
            if name in klass.__dict__:
                attr = klass.__dict__[name]
                break
        getters.append(attr if type(attr).__name__ == "member_descriptor" else None)

    def render(value: Any, depth: int, budget: int) -> str:
        own = getattr(value, "__dict__", None) if getters and None in getters else None
        items: list[Any] = []
        for name, member in zip(names, getters):
            if member is not None:
                item = member.__get__(value, tp)
            elif type(own) is dict:
                item = own.get(name, _MISSING)
            else:
                item = _MISSING
            if item is _MISSING:
                return _opaque_text(value)  # not loaded / not plain data: show nothing of it
            items.append(item)
        return _named_fields(value, names, items, depth, budget)

    return render


def _classify(tp: type) -> tuple[Render, Optional[type]]:
    """The kind of `tp` (cached; see module doc)."""
    try:
        kind = _decide(tp)
    except Exception:
        kind = (_opaque, None)
    if len(_kinds) > 20_000:
        _kinds.clear()
    _kinds[tp] = kind
    return kind


def _decide(tp: type) -> tuple[Render, Optional[type]]:
    mro = tp.__mro__
    opted = _opted_in()
    if opted and any(_type_name(k) in opted for k in mro):
        return (_call_repr, None)
    for base in _CONTAINERS:
        if base in mro:
            if base is tuple:
                fields = tp.__dict__.get("_fields")
                if type(fields) is tuple and all(type(f) is str for f in fields):
                    return (_namedtuple_kind(fields), None)
            return (_container_kind(base), base)
    if str in mro:
        return (_str_value, None)
    enum_module = sys.modules.get("enum")  # (no enum module loaded: no enums exist)
    if enum_module is not None and enum_module.Enum in mro:
        return (_enum_value, None)
    if int in mro:
        return (_int_value, None)
    if float in mro:
        return (_float_value, None)
    repr_func = _class_attr(tp, "__repr__")
    for klass in mro:
        if (getattr(klass, "__module__", None), getattr(klass, "__qualname__", None)) in _PURE:
            if repr_func is _class_attr(klass, "__repr__"):
                return (_call_repr, None)
            break
    for klass in mro:
        fields = klass.__dict__.get("__dataclass_fields__")
        if type(fields) is dict:
            names = tuple(
                name
                for name, f in fields.items()
                if getattr(f, "repr", False)
                and getattr(getattr(f, "_field_type", None), "name", "") == "_FIELD"
            )
            return (_dataclass_kind(tp, names), None)
    return (_opaque, None)


def _class_attr(tp: type, name: str) -> Any:
    for klass in tp.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def _container_kind(base: Any) -> Render:
    def render(value: Any, depth: int, budget: int) -> str:
        n = base.__len__(value)
        if depth >= MAX_DEPTH and n:
            return f"{base.__name__}(… {n} items)"
        return _render_container(value, base, depth, budget)

    return render


def _render(value: Any, depth: int, budget: int) -> str:
    """A bounded rendering: containers show their first items, strings their first characters."""
    tp = type(value)
    if tp is str or tp is bytes or tp is bytearray:
        if len(value) <= budget - 3:
            return repr(value)
        return _cut_repr(value, budget, "chars" if tp is str else "bytes")
    if tp in _SCALARS:
        return repr(value)
    if tp is list or tp is tuple or tp is set or tp is frozenset or tp is dict:
        if depth >= MAX_DEPTH and value:
            return f"{tp.__name__}(… {len(value)} items)"
        return _render_container(value, tp, depth, budget)
    kind = _kinds.get(tp) or _classify(tp)
    return kind[0](value, depth, budget)


def _cut_repr(value: Any, budget: int, unit: str) -> str:
    """The repr of a long str/bytes value in at most `budget` characters, marker included; only
    the shown part is repr'd (a 1 GB string costs as much as a 100-character one)."""
    n = len(value)
    keep = max(0, budget - 2 - len(_marker(n, unit)))
    text = repr(value[:keep])
    if keep == n:
        return text
    if len(text) + len(_marker(n - keep, unit)) > budget:  # escapes made the repr longer
        text = text[: max(0, budget - len(_marker(n - keep, unit)))]
    return text + _marker(n - keep, unit)


def _render_container(value: Any, tp: Any, depth: int, budget: int) -> str:
    # `tp` is the builtin base type: its own methods read the storage (no overridden
    # __len__/__iter__/items of a subclass runs)
    n = tp.__len__(value)
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
    items = iter(dict.items(value)) if tp is dict else tp.__iter__(value)
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
    """The display string of `value` (at most `limit` characters); never raises."""
    try:
        text = _render(value, 0, limit)
    except Exception as exc:
        return _failed(value, exc)
    return cap(text, limit)


def _size(value: Any) -> Optional[int]:
    """The length of a builtin container (through the builtin method), else None."""
    tp = type(value)
    if tp is list or tp is tuple or tp is dict or tp is set or tp is frozenset:
        return len(value)
    if tp is str or tp in _SCALARS:
        return None
    base: Any = (_kinds.get(tp) or _classify(tp))[1]
    return None if base is None else base.__len__(value)


def exception_message(exc: BaseException, limit: int = 1000) -> str:
    """An exception's message, without running app code: `str(exc)` when the class keeps a
    builtin `__str__` and its arguments are builtin values (or the class is opted in), else the
    arguments rendered safely."""
    tp = type(exc)
    try:
        args = exc.args
        if type(args) is not tuple:
            args = ()
        kind = _kinds.get(tp) or _classify(tp)
        builtin_str = type(_class_attr(tp, "__str__")).__name__ == "wrapper_descriptor"
        if kind[0] is _call_repr or (builtin_str and all(type(a) in _PLAIN_TYPES for a in args)):
            text = str(exc)
        elif len(args) == 1 and isinstance(args[0], str):
            text = str.__str__(args[0])
        elif not args:
            text = ""
        else:
            text = _render(args if len(args) > 1 else args[0], 0, limit)
    except Exception as err:
        return f"<str() failed ({type(err).__name__})>"
    return cap(text, limit)


_PLAIN_TYPES = frozenset({str, bytes, int, float, bool, type(None), complex})


def is_plain(value: Any) -> bool:
    """Whether `value` is a builtin scalar, or a tuple/dict of them (`%` formats it without
    running app code)."""
    tp = type(value)
    if tp in _PLAIN_TYPES:
        return True
    if tp is tuple:
        return all(type(v) in _PLAIN_TYPES for v in value)
    if tp is dict:
        return all(type(v) in _PLAIN_TYPES for v in value.values())
    return False


_PLAIN_NAMES = {
    int: "builtins.int",
    bool: "builtins.bool",
    float: "builtins.float",
    type(None): "builtins.NoneType",
}


def compact(value: Any) -> tuple[str, str, int, Optional[int]]:
    """`(class, value, object_id, size)` — the cheap form stored while recording."""
    tp = type(value)
    plain = _PLAIN_NAMES.get(tp)
    if plain is not None:  # the common case, inlined
        try:
            text = repr(value)
        except ValueError as exc:  # an int too large to convert
            text = _failed(value, exc)
        return (plain, text if len(text) <= MAX_VALUE else cap(text), id(value), None)
    if tp is str and len(value) <= _SHORT:
        return ("builtins.str", _short_str(value), id(value), None)
    try:
        size = _size(value)
    except Exception:
        size = None
    return (class_name(value), safe_repr(value), id(value), size)


_SHORT = MAX_VALUE - 2  # a str this short has a repr that fits unless it needs escapes


def _short_str(value: str) -> str:
    text = repr(value)
    return text if len(text) <= MAX_VALUE else safe_repr(value)


_heads: dict[type, bytes] = {}
_opaque_heads: dict[type, bytes] = {}  # `"class":…,"value":"<mod.T object at 0x` per type
_by_identity: dict[int, tuple[type, bytes]] = {}  # id -> (type, encoded opaque value)


def _head(tp: type, value: Any) -> bytes:
    head = b'"class":' + orjson.dumps(class_name(value)) + b',"value":'
    if len(_heads) > 20_000:
        _heads.clear()
        _opaque_heads.clear()
        _by_identity.clear()
    _heads[tp] = head
    return head


def _opaque_head(tp: type, value: Any) -> Optional[bytes]:
    """The fixed part of an opaque value's JSON, or None when `tp` is rendered otherwise."""
    kind = _kinds.get(tp) or _classify(tp)
    if kind[0] is not _opaque:
        return None
    text = orjson.dumps(f"<{class_name(value)} object at 0x")[:-1]  # (no closing quote)
    done = _opaque_heads[tp] = (_heads.get(tp) or _head(tp, value)) + text
    return done


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
    if tp is str and len(value) <= _SHORT:
        text = repr(value)
        if len(text) > MAX_VALUE:  # escapes
            text = safe_repr(value)
        return b'%b%b%b,"object_id":%d}' % (prefix, head, orjson.dumps(text), id(value))
    ident = id(value)
    if tp is list or tp is dict or tp is tuple or tp is set or tp is frozenset:
        return b'%b%b%b,"object_id":%d,"size":%d}' % (
            prefix,
            head,
            orjson.dumps(safe_repr(value)),
            ident,
            len(value),
        )
    done = _by_identity.get(ident)
    if done is not None and done[0] is tp:
        return prefix + done[1]  # the usual receiver: the same `self` again and again
    opaque = _opaque_heads.get(tp) or _opaque_head(tp, value)
    if opaque is not None:
        # most app objects: class and address only, no app code runs
        encoded = b'%b%x>","object_id":%d}' % (opaque, ident, ident)
        if len(_by_identity) > 50_000:
            _by_identity.clear()
        _by_identity[ident] = (tp, encoded)
        return prefix + encoded
    text = safe_repr(value)
    try:
        size = _size(value)
    except Exception:
        size = None
    if size is not None:
        return b'%b%b%b,"object_id":%d,"size":%d}' % (
            prefix,
            head,
            orjson.dumps(text),
            id(value),
            size,
        )
    return b'%b%b%b,"object_id":%d}' % (prefix, head, orjson.dumps(text), id(value))


def expand(
    packed: tuple[str, str, int, Optional[int]], name: Optional[str] = None
) -> dict[str, Any]:
    """The parameter-object dict of a `compact()` tuple."""
    out: dict[str, Any] = {} if name is None else {"name": name}
    out["class"] = packed[0]
    out["value"] = packed[1]
    out["object_id"] = packed[2]
    if packed[3] is not None:
        out["size"] = packed[3]
    return out


def describe(value: Any, name: Optional[str] = None) -> dict[str, Any]:
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
