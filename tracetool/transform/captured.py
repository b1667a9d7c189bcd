"""The one definition of which fields of a trace document hold captured runtime data.

Spec ("Trace document"): captured runtime values are parameters, return values, receivers, log
messages, exceptions, HTTP header values, request path info (`path_info`), client request URLs
and SQL statements; code-object names, classes, source paths, labels and normalized route
templates are schema. `trim` and `sanitize` touch captured data only, and both find it here.

The tables below (`EVENT_FIELDS`, the `_Shape`s, `METADATA_FIELDS`) are that definition: each
captured field, the shape it is expected to have, which of its keys are schema (and of which JSON
type) and which hold captured values of which kind. `rewrite_event` / `rewrite_metadata` walk them
and pass every captured value to a callback `fn(kind, value, context)`, storing what it returns
(returning the same object leaves the field untouched).

Kinds:

=============  ==================================================================================
VALUE          `value` of a parameter object — `receiver`, each of `parameters` and `message`
               (request params, log-record arguments), `return_value` of a return or of an HTTP
               response — and the `value` of every nested `properties` / `items` entry, at any
               depth. A non-string `value` (number, list, object) is passed as is. A parameter
               position holding no object (a bare string, number or list) is a VALUE as a whole.
MESSAGE        `message` of each `exceptions` entry, and metadata `exception.message` /
               `test_failure.message` (an exception or failed assertion text).
HEADER         every value of `headers` in `http_server_request`, `http_server_response`,
               `http_client_request`, `http_client_response` (names are schema), and the legacy
               `http_server_request.authorization`.
PATH           `http_server_request.path_info` of a request WITHOUT a route template.
ROUTED_PATH    `http_server_request.path_info` of a request WITH `normalized_path_info`.
URL            `http_client_request.url`.
SQL            `sql_query.sql`, `sql_query.normalized_sql`, `sql_query.explain_sql`, or a
               `sql_query` that is a bare string (context: `sql_query.database_type`, else None).
OTHER          fail-closed: a captured field, or a value inside one, whose shape is not the
               expected one — a list field holding an object (`parameters: {…}`,
               `exceptions: {…}`), a schema key of the wrong type (`class: {…}`), a header list
               entry that is no pair, an unknown key of an event. Passed whole; sanitize masks
               every string in it (object keys included), trim leaves it.
ENTRY          fail-closed: an unknown key inside a captured object (a parameter, request,
               response, SQL query, exception). The value is `{key: value}`; the callback returns
               the entries to put in its place (a dict, possibly empty), or the same object. The
               key may itself be data (an agent that wrote a map of values), so it is offered too.
=============  ==================================================================================

Everything else is schema and is never passed to the callback: event ids, `event`, `thread_id`,
`parent_id`, timings, `defined_class`, `method_id`, `path`, `lineno`, `static`, labels, parameter
`name` / `class` / `object_id` / `size` / `kind`, header names, `request_method`, `protocol`,
`normalized_path_info`, `status_code`, `mime_type`, `database_type`, `server_version`, exception
`class` / `path` / `lineno`, the whole `classMap`, and metadata other than the two messages —
each only while it has its schema type; otherwise it is OTHER. Names, classes, paths and
methods are strings; ids, object ids, sizes, line numbers and statuses are numbers (a string
`object_id` or `status_code` could hold anything, so it is masked), timings and flags are
numbers or booleans.

Fields are visited in document order (an event's keys in the order they were written), which is
what "order of first appearance" means for sanitize's token numbers. Entries of ENTRY kind are
offered after the rest of their object.

Python 3.9 syntax; stdlib only.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

VALUE = "value"
MESSAGE = "message"
HEADER = "header"
PATH = "path"
ROUTED_PATH = "routed_path"
URL = "url"
SQL = "sql"
OTHER = "other"
ENTRY = "entry"

KINDS = (VALUE, MESSAGE, HEADER, PATH, ROUTED_PATH, URL, SQL, OTHER, ENTRY)

# What `trim` shortens (spec: "parameters, return values, receivers, log messages, exceptions").
TRIMMED_KINDS = frozenset((VALUE, MESSAGE))

# (kind, value, context) -> replacement; returning the same object leaves the field untouched.
Rewriter = Callable[[str, Any, Any], Any]

# --- schema types -------------------------------------------------------------------------------
# A schema key keeps its value only while the value has one of these classes (`bool` is its own
# class, so `True` is no int here); anything else is captured data of an unknown shape.
_NONE = type(None)
_STR = frozenset((str, _NONE))
_INT = frozenset((int, _NONE))
_NUMBER = frozenset((int, float, _NONE))
_BOOL = frozenset((bool, _NONE))
_STR_OR_INT = frozenset((str, int, _NONE))
_SCALAR = frozenset((str, int, float, bool, _NONE))
_NUMERIC = frozenset((int, float, bool, _NONE))  # numbers and flags: no text to hide


# --- walkers: each rewrites holder[key] (holder: a dict or a list) -------------------------------

Walker = Callable[..., None]  # (holder, key, fn[, context])


def _leaf(kind: str) -> Walker:
    def walk(holder: Any, key: Any, fn: Rewriter, context: Any = None) -> None:
        old = holder[key]
        new = fn(kind, old, None)
        if new is not old:
            holder[key] = new

    walk.__name__ = f"_leaf_{kind}"
    return walk


_value = _leaf(VALUE)
_message = _leaf(MESSAGE)
_other = _leaf(OTHER)
_url = _leaf(URL)
_sql_text = _leaf(SQL)


def _str_list(holder: Any, key: Any, fn: Rewriter, context: Any = None) -> None:
    """Schema "a list of strings" (labels): kept while it is one, else OTHER."""
    value = holder[key]
    if value is None or (value.__class__ is list and all(v.__class__ is str for v in value)):
        return
    _other(holder, key, fn)


def _mask_entries(obj: dict[str, Any], keys: list, fn: Rewriter) -> None:
    """ENTRY: unknown keys of a captured object, offered with their values."""
    for key in keys:
        entry = {key: obj[key]}
        new = fn(ENTRY, entry, None)
        if new is entry:
            continue
        del obj[key]
        if isinstance(new, dict):
            obj.update(new)
        else:  # a callback that gave one value: it stands for the entry's value
            obj[key] = new


class _Shape:
    """A captured object: its schema keys (with their types) and its captured keys."""

    def __init__(self, name: str, schema: dict[str, Any], fields: dict[str, Walker]) -> None:
        self.name = name
        # one lookup per key: a frozenset of the classes a schema key may have, or a walker
        self.table: dict[str, Any] = {**schema, **fields}

    def walk(self, obj: dict[str, Any], fn: Rewriter, context: Any = None) -> None:
        unknown: Optional[list] = None
        table = self.table
        for key, value in obj.items():  # (walkers only replace values: no resize)
            if key in table:
                spec = table[key]
                if spec.__class__ is frozenset:
                    if value.__class__ not in spec:
                        _other(obj, key, fn)
                else:
                    spec(obj, key, fn, obj)
            else:
                if unknown is None:
                    unknown = []
                unknown.append(key)
        if unknown:
            _mask_entries(obj, unknown, fn)


def _object(shape: _Shape, bare: Walker) -> Walker:
    """A field holding one `shape` object; null is absent, any other non-object goes to `bare`."""

    def walk(holder: Any, key: Any, fn: Rewriter, context: Any = None) -> None:
        obj = holder[key]
        if obj.__class__ is dict:
            shape.walk(obj, fn)
        elif obj is not None:
            bare(holder, key, fn)

    walk.__name__ = f"_object_{shape.name}"
    return walk


def _list_of(item: Walker, bare: Walker = _other) -> Walker:
    """A field holding a list of items; null is absent, any other shape goes to `bare` whole."""

    def walk(holder: Any, key: Any, fn: Rewriter, context: Any = None) -> None:
        items = holder[key]
        if items.__class__ is list:
            for index in range(len(items)):
                item(items, index, fn)
        elif items is not None:
            bare(holder, key, fn)

    return walk


# --- parameter objects (receiver, parameters, message, return_value; nested properties/items) ---

_PARAM_VALUE = "value"
_PARAM_NESTED = "nested"
_PARAM_TABLE: dict[str, Any] = {
    "name": _STR,
    "class": _STR,
    "object_id": _INT,
    "size": _INT,
    "kind": _STR,
    "labels": _str_list,
    "value": _PARAM_VALUE,
    "properties": _PARAM_NESTED,
    "items": _PARAM_NESTED,
}


_FLAT_PARAM_KEYS = frozenset(k for k, spec in _PARAM_TABLE.items() if spec is not _PARAM_NESTED)
# Per key of a flat parameter, the classes that need nothing done (`value`: none, it is always
# offered; `labels`: null only, a list is checked by its walker).
_FLAT_PARAM_FINE = {
    k: spec
    if spec.__class__ is frozenset
    else frozenset((_NONE,))
    if k == "labels"
    else frozenset()
    for k, spec in _PARAM_TABLE.items()
    if k in _FLAT_PARAM_KEYS
}


def _param(holder: Any, key: Any, fn: Rewriter, context: Any = None) -> None:
    """A parameter object: its `value`, then nested `properties` / `items`, in key order.

    Iterative (an explicit stack, pre-order): a hostile document nesting values thousands of
    levels deep is walked completely, never cut off and never a RecursionError. A position
    holding no object is a VALUE as a whole (`return_value: "s3cr3t"`).
    """
    obj = holder[key]
    if obj.__class__ is not dict:
        if obj is not None:
            _value(holder, key, fn)
        return
    table = _PARAM_TABLE
    if obj.keys() <= _FLAT_PARAM_KEYS:  # the common case: no nesting, no unknown key
        fine = _FLAT_PARAM_FINE
        for k, v in obj.items():  # (only values are replaced: no resize)
            if v.__class__ in fine[k]:
                continue
            if k == "value":
                new = fn(VALUE, v, None)
                if new is not v:
                    obj[k] = new
            else:
                spec = table[k]
                if spec.__class__ is frozenset:
                    _other(obj, k, fn)
                else:
                    spec(obj, k, fn)
        return
    stack = [obj]
    while stack:
        node = stack.pop()
        children: Optional[list] = None
        unknown: Optional[list] = None
        for k, v in node.items():  # (only values are replaced here: no resize)
            spec = table.get(k)
            if spec.__class__ is frozenset:
                if v.__class__ not in spec:
                    _other(node, k, fn)
            elif spec is _PARAM_VALUE:
                new = fn(VALUE, v, None)
                if new is not v:
                    node[k] = new
            elif spec is _PARAM_NESTED:
                if v.__class__ is list:
                    for i, child in enumerate(v):
                        if child.__class__ is dict:
                            if children is None:
                                children = []
                            children.append(child)
                        elif child is not None:
                            _value(v, i, fn)
                elif v is not None:
                    _other(node, k, fn)
            elif spec is None:
                if unknown is None:
                    unknown = []
                unknown.append(k)
            else:
                spec(node, k, fn)
        if unknown:
            _mask_entries(node, unknown, fn)
        if children:
            stack.extend(reversed(children))


_params = _list_of(_param)

# --- HTTP -----------------------------------------------------------------------------------------


def _headers(holder: Any, key: Any, fn: Rewriter, context: Any = None) -> None:
    """Header values; a dict (the format) or, tolerated, a list of [name, value] pairs or of
    {name, value} objects. Names are schema; anything else is OTHER."""
    headers = holder[key]
    if headers.__class__ is dict:
        for name, old in headers.items():
            new = fn(HEADER, old, name)
            if new is not old:
                headers[name] = new
    elif headers.__class__ is list:
        for index, pair in enumerate(headers):
            if pair.__class__ is list and len(pair) == 2 and pair[0].__class__ is str:
                new = fn(HEADER, pair[1], pair[0])
                if new is not pair[1]:
                    pair[1] = new
            elif (
                pair.__class__ is dict
                and pair.keys() <= {"name", "value"}
                and pair.get("name").__class__ in _STR
            ):
                if "value" in pair:
                    new = fn(HEADER, pair["value"], pair.get("name"))
                    if new is not pair["value"]:
                        pair["value"] = new
            else:
                _other(headers, index, fn)
    elif headers is not None:
        _other(holder, key, fn)


def _authorization(holder: Any, key: Any, fn: Rewriter, context: Any = None) -> None:
    """The legacy `http_server_request.authorization`: an Authorization header value."""
    old = holder[key]
    new = fn(HEADER, old, "Authorization")
    if new is not old:
        holder[key] = new


def _path_info(holder: Any, key: Any, fn: Rewriter, request: Any = None) -> None:
    routed = isinstance(request, dict) and bool(request.get("normalized_path_info"))
    old = holder[key]
    new = fn(ROUTED_PATH if routed else PATH, old, None)
    if new is not old:
        holder[key] = new


SERVER_REQUEST = _Shape(
    "http_server_request",
    {"request_method": _STR, "normalized_path_info": _STR, "protocol": _STR, "mime_type": _STR},
    {"path_info": _path_info, "headers": _headers, "authorization": _authorization},
)
CLIENT_REQUEST = _Shape(
    "http_client_request",
    {"request_method": _STR, "protocol": _STR, "mime_type": _STR},
    {"url": _url, "headers": _headers},
)
RESPONSE = _Shape(
    "http_response",
    {"status_code": _INT, "status": _INT, "mime_type": _STR, "protocol": _STR},
    {"headers": _headers, "return_value": _param},
)

# --- SQL --------------------------------------------------------------------------------------------


def _sql_field(holder: Any, key: Any, fn: Rewriter, query: Any = None) -> None:
    database_type = query.get("database_type") if isinstance(query, dict) else None
    old = holder[key]
    new = fn(SQL, old, database_type if database_type.__class__ is str else None)
    if new is not old:
        holder[key] = new


SQL_QUERY = _Shape(
    "sql_query",
    {"database_type": _STR, "server_version": _STR_OR_INT, "normalized": _BOOL},
    {"sql": _sql_field, "normalized_sql": _sql_field, "explain_sql": _sql_field},
)

# --- exceptions ---------------------------------------------------------------------------------

EXCEPTION = _Shape(
    "exception",
    {"class": _STR, "object_id": _INT, "path": _STR, "lineno": _INT},
    {"message": _message},
)

# --- the table ----------------------------------------------------------------------------------

# Event key -> how its value is walked. Captured fields only; `_EVENT_SCHEMA` lists the rest.
EVENT_FIELDS: dict[str, Walker] = {
    "receiver": _param,
    "return_value": _param,
    "parameters": _params,
    "message": _params,
    "exceptions": _list_of(_object(EXCEPTION, _message)),
    "http_server_request": _object(SERVER_REQUEST, _other),
    "http_client_request": _object(CLIENT_REQUEST, _other),
    "http_server_response": _object(RESPONSE, _other),
    "http_client_response": _object(RESPONSE, _other),
    "sql_query": _object(SQL_QUERY, _sql_text),
}

# Event keys that are schema, by type; any other key of an event is OTHER (its value masked
# whole by sanitize; the key, a field name of the format, is kept).
_EVENT_SCHEMA: dict[str, Any] = {
    "id": _SCALAR,
    "event": _STR,
    "thread_id": _SCALAR,
    "parent_id": _SCALAR,
    "elapsed": _NUMERIC,
    "elapsed_instrumentation": _NUMERIC,
    "defined_class": _STR,
    "method_id": _STR,
    "path": _STR,
    "lineno": _NUMERIC,
    "static": _NUMERIC,
    "labels": _str_list,
}

METADATA_FIELDS: dict[str, Walker] = {
    "exception": _object(_Shape("exception", {"class": _STR}, {"message": _message}), _message),
    "test_failure": _object(
        _Shape("test_failure", {"location": _STR}, {"message": _message}), _message
    ),
}


# One lookup per event key: a frozenset (schema, by type) or a walker (captured).
_EVENT_TABLE: dict[str, Any] = {**_EVENT_SCHEMA, **EVENT_FIELDS}


def rewrite_event(event: dict[str, Any], fn: Rewriter) -> None:
    """Call `fn` on every captured field of one event, in document order, storing its result."""
    table = _EVENT_TABLE
    for key, value in event.items():  # (walkers only replace values: no resize)
        if key in table:  # (`in` then `[]`: faster than .get() on CPython)
            spec = table[key]
            if spec.__class__ is frozenset:
                if value.__class__ not in spec:
                    _other(event, key, fn)
            else:
                spec(event, key, fn)
        else:
            _other(event, key, fn)


def rewrite_metadata(metadata: dict[str, Any], fn: Rewriter) -> None:
    """Call `fn` on the captured fields of `metadata` (exception and test-failure messages)."""
    for key in metadata:
        walker = METADATA_FIELDS.get(key)
        if walker is not None:
            walker(metadata, key, fn)


def captured_values(event: dict[str, Any]) -> list:
    """(kind, value) of every captured field of an event, in order (for tests and tools)."""
    found: list = []

    def collect(kind: str, value: Any, context: Any) -> Any:
        found.append((kind, value))
        return value

    rewrite_event(event, collect)
    return found
