"""The one definition of which fields of a trace document hold captured runtime data.

Spec ("Trace document"): captured runtime values are parameters, return values, receivers, log
messages, exceptions, HTTP header values, request path info (`path_info`), client request URLs
and SQL statements; code-object names, classes, source paths, labels and normalized route
templates are schema. `trim` and `sanitize` touch captured data only, and both find it here.

Captured, by kind (what `rewrite_event` / `rewrite_metadata` pass to the callback):

=============  ==================================================================================
VALUE          `value` of a parameter object — `receiver`, each of `parameters` and `message`
               (request params, log-record arguments), `return_value` of a return or of an HTTP
               response — and the `value` of every nested `properties` / `items` entry, at any
               depth. A non-string `value` (number, list, object) is passed as is.
MESSAGE        `message` of each `exceptions` entry, and metadata `exception.message` /
               `test_failure.message` (an exception or failed assertion text).
HEADER         every value of `headers` in `http_server_request`, `http_server_response`,
               `http_client_request`, `http_client_response` (names are schema).
PATH           `http_server_request.path_info` of a request WITHOUT a route template.
ROUTED_PATH    `http_server_request.path_info` of a request WITH `normalized_path_info`.
URL            `http_client_request.url`.
SQL            `sql_query.sql`, `sql_query.normalized_sql`, `sql_query.explain_sql` (the callback's
               context argument is `sql_query.database_type`).
=============  ==================================================================================

Everything else is schema and is never passed to the callback: event ids, `event`, `thread_id`,
`parent_id`, timings, `defined_class`, `method_id`, `path`, `lineno`, `static`, labels, parameter
`name` / `class` / `object_id` / `size` / `kind`, header names, `request_method`, `protocol`,
`normalized_path_info`, `status_code`, `mime_type`, `database_type`, `server_version`, exception
`class` / `path` / `lineno`, the whole `classMap`, and metadata other than the two messages.

Fields are visited in document order (an event's keys in the order they were written), which is
what "order of first appearance" means for sanitize's token numbers.

Python 3.9 syntax; stdlib only.
"""

from __future__ import annotations

from typing import Any, Callable

VALUE = "value"
MESSAGE = "message"
HEADER = "header"
PATH = "path"
ROUTED_PATH = "routed_path"
URL = "url"
SQL = "sql"

KINDS = (VALUE, MESSAGE, HEADER, PATH, ROUTED_PATH, URL, SQL)

# What `trim` shortens (spec: "parameters, return values, receivers, log messages, exceptions").
TRIMMED_KINDS = frozenset((VALUE, MESSAGE))

# (kind, value, context) -> replacement; returning the same object leaves the field untouched.
Rewriter = Callable[[str, Any, Any], Any]

_SQL_FIELDS = ("sql", "normalized_sql", "explain_sql")
_PARAM_NESTED = ("properties", "items")


def _param(obj: Any, fn: Rewriter) -> None:
    """A parameter object: its `value`, then nested `properties` / `items`, in key order.

    Iterative (an explicit stack, pre-order): a hostile document nesting values thousands of
    levels deep is walked completely, never cut off and never a RecursionError.
    """
    if not isinstance(obj, dict):
        return
    if "properties" not in obj and "items" not in obj:  # the common, flat case
        if "value" in obj:
            old = obj["value"]
            new = fn(VALUE, old, None)
            if new is not old:
                obj["value"] = new
        return
    stack = [obj]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        children: list[Any] = []
        for key in node:
            if key == "value":
                old = node[key]
                new = fn(VALUE, old, None)
                if new is not old:
                    node[key] = new
            elif key in _PARAM_NESTED:
                nested = node[key]
                if isinstance(nested, list):
                    children.extend(nested)
        if children:
            stack.extend(reversed(children))


def _params(objs: Any, fn: Rewriter) -> None:
    if isinstance(objs, list):
        for obj in objs:
            _param(obj, fn)


def _headers(headers: Any, fn: Rewriter) -> None:
    """Header values; a dict (the format) or, tolerated, a list of [name, value] pairs."""
    if isinstance(headers, dict):
        for name, old in headers.items():
            new = fn(HEADER, old, name)
            if new is not old:
                headers[name] = new
    elif isinstance(headers, list):
        for pair in headers:
            if isinstance(pair, list) and len(pair) == 2:
                new = fn(HEADER, pair[1], pair[0])
                if new is not pair[1]:
                    pair[1] = new
            elif isinstance(pair, dict) and "value" in pair:
                new = fn(HEADER, pair["value"], pair.get("name"))
                if new is not pair["value"]:
                    pair["value"] = new


def _set(obj: dict[str, Any], key: str, kind: str, fn: Rewriter, context: Any = None) -> None:
    old = obj[key]
    new = fn(kind, old, context)
    if new is not old:
        obj[key] = new


def _server_request(req: Any, fn: Rewriter) -> None:
    if not isinstance(req, dict):
        return
    routed = bool(req.get("normalized_path_info"))
    for key in req:
        if key == "path_info":
            _set(req, key, ROUTED_PATH if routed else PATH, fn)
        elif key == "headers":
            _headers(req[key], fn)


def _client_request(req: Any, fn: Rewriter) -> None:
    if not isinstance(req, dict):
        return
    for key in req:
        if key == "url":
            _set(req, key, URL, fn)
        elif key == "headers":
            _headers(req[key], fn)


def _response(resp: Any, fn: Rewriter) -> None:
    if not isinstance(resp, dict):
        return
    for key in resp:
        if key == "headers":
            _headers(resp[key], fn)
        elif key == "return_value":
            _param(resp[key], fn)


def _sql(query: Any, fn: Rewriter) -> None:
    if not isinstance(query, dict):
        return
    database_type = query.get("database_type")
    for key in query:
        if key in _SQL_FIELDS:
            _set(query, key, SQL, fn, database_type)


def _exceptions(exceptions: Any, fn: Rewriter) -> None:
    if isinstance(exceptions, list):
        for exc in exceptions:
            if isinstance(exc, dict) and "message" in exc:
                _set(exc, "message", MESSAGE, fn)


_EVENT_FIELDS: dict[str, Callable[[Any, Rewriter], None]] = {
    "receiver": _param,
    "return_value": _param,
    "parameters": _params,
    "message": _params,
    "exceptions": _exceptions,
    "http_server_request": _server_request,
    "http_client_request": _client_request,
    "http_server_response": _response,
    "http_client_response": _response,
    "sql_query": _sql,
}


def rewrite_event(event: dict[str, Any], fn: Rewriter) -> None:
    """Call `fn` on every captured field of one event, in document order, storing its result."""
    fields = _EVENT_FIELDS
    for key in event:
        if key in fields:
            fields[key](event[key], fn)


_METADATA_MESSAGES = ("exception", "test_failure")


def rewrite_metadata(metadata: dict[str, Any], fn: Rewriter) -> None:
    """Call `fn` on the captured fields of `metadata` (exception and test-failure messages)."""
    for key in metadata:
        if key in _METADATA_MESSAGES:
            holder = metadata[key]
            if isinstance(holder, dict) and "message" in holder:
                _set(holder, "message", MESSAGE, fn)


def captured_values(event: dict[str, Any]) -> list[tuple]:
    """(kind, value) of every captured field of an event, in order (for tests and tools)."""
    found: list[tuple] = []

    def collect(kind: str, value: Any, context: Any) -> Any:
        found.append((kind, value))
        return value

    rewrite_event(event, collect)
    return found
