"""Reading individual events: what kind an event is and its commonly needed fields.

Events are the plain dicts of the document. These accessors encode the format's tolerance rules
(reference/appmap.md §1.4): `status` is an alias of `status_code`, `normalized_path_info` may be
`:id` or `{id}` style, an array or empty, SQL may carry `normalized_sql`.
"""

from __future__ import annotations

from typing import Any

HTTP_SERVER = "http_server"
HTTP_CLIENT = "http_client"
SQL = "sql"
FUNCTION = "function"
MESSAGE = "message"
OTHER = "other"

Event = dict[str, Any]


def kind(call: Event) -> str:
    """The kind of a call event (for a return, pass its call)."""
    if "http_server_request" in call:
        return HTTP_SERVER
    if "http_client_request" in call:
        return HTTP_CLIENT
    if "sql_query" in call:
        return SQL
    if "method_id" in call or "defined_class" in call:
        return FUNCTION
    if "message" in call:
        return MESSAGE
    return OTHER


def is_call(event: Event) -> bool:
    return event.get("event") == "call"


def is_return(event: Event) -> bool:
    return event.get("event") == "return"


def part(event: Event | None, key: str) -> dict[str, Any]:
    """`event[key]` when it is an object, else `{}`: a field of an unexpected shape (a string
    `sql_query`, a list `http_server_request`) reads as absent instead of failing."""
    value = event.get(key) if event else None
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def request_method(call: Event) -> str:
    req = part(call, "http_server_request") or part(call, "http_client_request")
    return _text(req.get("request_method")).upper()


def path_info(call: Event) -> str:
    return _text(part(call, "http_server_request").get("path_info"))


def normalized_path_info(call: Event) -> str:
    """The route template recorded by the agent ('' when there is none)."""
    return _text(part(call, "http_server_request").get("normalized_path_info"))


def route(call: Event) -> str:
    """AppMap's route string: `METHOD path-template` (server) or `METHOD url` (client)."""
    if "http_server_request" in call:
        return f"{request_method(call)} {normalized_path_info(call) or path_info(call)}"
    if "http_client_request" in call:
        return f"{request_method(call)} {_text(part(call, 'http_client_request').get('url'))}"
    return ""


def status_code(ret: Event | None) -> int | None:
    """HTTP status of a return event, from `status_code` or the legacy `status`."""
    if not ret:
        return None
    resp = ret.get("http_server_response") or ret.get("http_client_response")
    if not isinstance(resp, dict):
        return None
    value = resp.get("status_code", resp.get("status"))
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def sql_text(call: Event) -> str:
    """The SQL of a call (a bare-string `sql_query`, tolerated, is the SQL itself)."""
    q = call.get("sql_query")
    if isinstance(q, str):
        return q
    return _text(part(call, "sql_query").get("sql"))


def database_type(call: Event) -> str | None:
    value = part(call, "sql_query").get("database_type")
    return str(value) if value else None


def elapsed(ret: Event | None) -> float | None:
    if not ret:
        return None
    value = ret.get("elapsed")
    return float(value) if isinstance(value, (int, float)) else None


def function_name(call: Event) -> str:
    """`Class#method` / `Class.method` display name of a function call."""
    sep = "." if call.get("static") else "#"
    return f"{call.get('defined_class', '')}{sep}{call.get('method_id', '')}"
