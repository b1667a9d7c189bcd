"""From recordings to the API model: one pass over each recording's HTTP server requests.

Per request (a call with `http_server_request` paired with its return):
* skipped with a warning: no path, a path not starting with `/`, no response, a status below
  100 or from 600 on, a method OpenAPI does not know; left out silently: media requests
  (style sheets, scripts, images, fonts, audio, video — by path extension or response type);
* the path template is the request's route (`tracetool.route_model.server_template`, the model
  index, query and inspect share): `normalized_path_info` in OpenAPI form (`:id`, `<int:id>`,
  `{id:int}` → `{id}`); without one, the concrete `path_info` with value-like segments as
  parameters named after the preceding word (`/users/42` → `/users/{user_id}`), so one route
  is one path, never a concrete `/users/2`;
* path parameters are typed from what was observed: the `message` entry of that name and the
  concrete path segment (`42` → integer, a UUID → string/uuid, …);
* other `message` entries are the request body of POST/PUT/PATCH (content type from the
  `Content-Type` header, else the request's `mime_type`, else JSON when a value is not a string
  and form-encoded otherwise) and query parameters of every other method; Rails' routing keys
  (`controller`, `action`, `_method`, and `format` of a `(.:format)` route) are not parameters;
* the response per status: its content type and a schema from the recorded return value;
* security from credentials in the headers (looked up case-insensitively): `Authorization:
  Bearer|Basic|Digest|Negotiate …` is an `http` scheme, any other Authorization value an API key,
  and `X-API-Key`-style headers API keys of their own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qsl

from tracetool import route_model
from tracetool.errors import TraceToolError
from tracetool.openapi.model import ANONYMOUS, METHODS, ApiModel
from tracetool.openapi.schema import Schema, class_schema, merge, schema_for
from tracetool.trace.extract import extract_events
from tracetool.trace.reader import guarded
from tracetool.trace.stream import iter_pairs, open_stream, read_small

_ROUTING_KEYS = {"controller", "action", "_method"}
_BODY_METHODS = {"post", "put", "patch"}
_MEDIA_PATH = re.compile(
    r"\.(css|js|mjs|map|png|jpe?g|gif|svg|ico|webp|bmp|tiff?|avif|woff2?|ttf|otf|eot"
    r"|mp3|mp4|m4a|webm|ogg|oga|wav|flac)$",
    re.IGNORECASE,
)
_MEDIA_TYPES = ("image/", "font/", "audio/", "video/", "application/font", "application/x-font")
_MEDIA_EXACT = {
    "text/css",
    "text/javascript",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript",
    "application/vnd.ms-fontobject",
}
_HTTP_SCHEMES = {"bearer", "basic", "digest", "negotiate"}
_KEY_HEADERS = {  # lower-case name -> spelling in the document
    "x-api-key": "X-API-Key",
    "api-key": "Api-Key",
    "x-auth-token": "X-Auth-Token",
    "x-access-token": "X-Access-Token",
}
_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]+(?:[eE][-+]?[0-9]+)?")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def collect_batch(paths: list[Path]) -> ApiModel:
    """The API model of some recordings (run in worker processes)."""
    model = ApiModel()
    for path in paths:
        collect_file(path, model)
    return model


def collect_file(path: Path, model: ApiModel) -> None:
    """Add one recording's requests to `model`; an unreadable file becomes a warning."""
    part = ApiModel()
    source = str(path)
    try:
        with guarded(path):
            for call, ret in exchanges(path):
                add_exchange(part, call, ret, source)
    except TraceToolError as exc:
        model.failures.append(f"skipped {exc}")
        return
    part.recordings = 1
    model.merge(part)


def _is_server_request(call: dict[str, Any]) -> bool:
    return isinstance(call.get("http_server_request"), dict)


def exchanges(path: Path) -> Iterator[tuple[dict[str, Any], Optional[dict[str, Any]]]]:
    """(call, return or None) for every HTTP server request of a recording, in order.

    HTTP requests are a sliver of a recording: when the bytes allow it, only their call and
    return events are decoded (`extract_events`); otherwise the whole file is read and paired.
    """
    raw = read_small(path)
    if raw is not None:
        fast = _extracted(raw)
        if fast is not None:
            return iter(fast)
    stream = open_stream(path, must_contain="http_server_request", raw=raw)
    return iter_pairs(stream.events(), keep=_is_server_request)


def _extracted(raw: bytes) -> Optional[list[tuple[dict[str, Any], Optional[dict[str, Any]]]]]:
    found = extract_events(raw, "http_server_request", "http_server_response")
    if found is None:
        return None
    calls, returns = found["http_server_request"], found["http_server_response"]
    by_parent: dict[Any, dict[str, Any]] = {}
    for ret in returns:
        parent = ret.get("parent_id")
        if ret.get("event") != "return" or parent is None or parent in by_parent:
            return None  # pairing needs the thread stacks: take the full path
        by_parent[parent] = ret
    pairs = []
    for call in calls:
        if call.get("event") != "call" or not _is_server_request(call):
            return None
        pairs.append((call, by_parent.pop(call.get("id"), None)))
    return None if by_parent else pairs


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):  # some agents wrote path_info as an array
        return ",".join(str(v) for v in value)
    return str(value)


def lower_headers(headers: Any) -> dict[str, str]:
    """Headers keyed by lower-case name (HTTP header names are case-insensitive)."""
    if not isinstance(headers, dict) or not headers:
        return {}
    return {str(k).lower(): str(v) for k, v in headers.items() if v is not None}


def _mime(headers: dict[str, str], fallback: Any) -> str:
    value = headers.get("content-type") or (str(fallback) if fallback else "")
    return value.split(";", 1)[0].strip().lower()


def add_exchange(
    model: ApiModel, call: dict[str, Any], ret: Optional[dict[str, Any]], source: str
) -> None:
    """Add one request/response pair to the model (see module doc)."""
    request = call["http_server_request"]
    method = _text(request.get("request_method")).strip().lower()
    path_info = _text(request.get("path_info"))
    raw_template = _without_query(_text(request.get("normalized_path_info")))
    shown = raw_template or path_info
    example = f"{method.upper() or '?'} {shown or '?'}"
    if not shown:
        model.skip(source, "no request path", example)
        return
    if method not in METHODS:
        model.skip(source, f"method {method.upper() or 'missing'}", example)
        return
    response = ret.get("http_server_response") if ret else None
    if not isinstance(response, dict):
        model.skip(source, "no response recorded", example)
        return
    status = _status(response)
    if status is None or not 100 <= status < 600:
        shown_status = response.get("status_code", response.get("status"))
        model.skip(source, f"status {shown_status}", example)
        return
    response_headers = lower_headers(response.get("headers"))
    response_mime = _mime(response_headers, response.get("mime_type"))
    concrete = path_info.split("?", 1)[0]
    if _MEDIA_PATH.search(concrete or shown) or _is_media_type(response_mime):
        model.media += 1
        return

    path = route_model.server_template(call)
    if not path.startswith("/"):
        model.skip(source, "path does not start with /", example)
        return
    model.requests += 1
    op = model.operation(path, method)
    op.requests += 1

    path_names = set(_path_names(path))
    observed = _path_values(path, concrete) if concrete else {}
    skip_format = "format" not in path_names and ":format" in raw_template
    body: dict[str, Schema] = {}
    for param in _message(call):
        name = str(param["name"])
        if name in _ROUTING_KEYS or (skip_format and name == "format"):
            continue
        if name in path_names:
            _add(op.params, ("path", name), _observed_schema(param))
        elif method in _BODY_METHODS:
            schema = schema_for(param)
            body[name] = merge(body[name], schema) if name in body else schema
        else:
            _add(op.params, ("query", name), schema_for(param))
    for name, value in observed.items():
        _add(op.params, ("path", name), value_schema(value))
    if "?" in path_info:
        for name, _ in parse_qsl(path_info.split("?", 1)[1], keep_blank_values=True):
            if name not in path_names:
                _add(op.params, ("query", name), {"type": "string"})
    request_headers = lower_headers(request.get("headers"))
    if body:
        mime = _mime(request_headers, request.get("mime_type")) or _guess_body(body)
        _add(op.bodies, mime, {"type": "object", "properties": body})

    contents = op.responses.setdefault(status, {})
    returned = ret.get("return_value") if ret else None
    if not isinstance(returned, dict):
        returned = response.get("return_value")
    if response_mime:
        schema = schema_for(returned) if isinstance(returned, dict) else {}
        _add(contents, response_mime, schema)
    summary = response_headers.get("x-openapi-summary")
    if summary:
        op.summaries[summary] = op.summaries.get(summary, 0) + 1
    _add_security(model, op.security, request_headers)


def _without_query(template: str) -> str:
    """A route template never carries a query string; `(?P<name>…)` is a Django group."""
    at = template.find("?")
    while at > 0 and template[at - 1] == "(":
        at = template.find("?", at + 1)
    return template if at < 0 else template[:at]


def _status(response: dict[str, Any]) -> Optional[int]:
    value = response.get("status_code", response.get("status"))
    if isinstance(value, bool):
        return None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _is_media_type(mime: str) -> bool:
    return bool(mime) and (mime in _MEDIA_EXACT or mime.startswith(_MEDIA_TYPES))


def _add(target: dict[Any, Schema], key: Any, schema: Schema) -> None:
    target[key] = merge(target[key], schema) if key in target else schema


def _message(call: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's parameters: named entries of `message`, first of each name."""
    seen: set[str] = set()
    out = []
    message = call.get("message")
    for param in message if isinstance(message, list) else ():
        if isinstance(param, dict) and param.get("name") not in (None, ""):
            name = str(param["name"])
            if name not in seen:
                seen.add(name)
                out.append(param)
    return out


def _guess_body(body: dict[str, Schema]) -> str:
    """A body without a content type: forms carry only strings (and nested string maps)."""

    def form_like(schema: Schema) -> bool:
        if schema.get("type") == "object":
            return all(form_like(s) for s in (schema.get("properties") or {}).values())
        if schema.get("type") == "array":
            return form_like(schema.get("items") or {})
        return schema.get("type") in (None, "string")

    forms = all(form_like(schema) for schema in body.values())
    return "application/x-www-form-urlencoded" if forms else "application/json"


def _unquote(value: str) -> str:
    # Python agents record reprs: "'42'"
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def value_schema(text: str) -> Schema:
    """Schema of a concrete path value: integer, number, uuid, date, else string."""
    if _INT.fullmatch(text):
        return {"type": "integer"}
    if _FLOAT.fullmatch(text):
        return {"type": "number"}
    if _UUID.fullmatch(text):
        return {"type": "string", "format": "uuid"}
    if _DATE.fullmatch(text):
        return {"type": "string", "format": "date"}
    return {"type": "string"}


def _observed_schema(param: dict[str, Any]) -> Schema:
    """A path parameter's message entry: its class when it says more than "string"."""
    schema = class_schema(param.get("class"))
    if schema.get("type") in (None, "string") and "format" not in schema:
        value = param.get("value")
        if value is not None:
            return value_schema(_unquote(str(value)))
    return schema


def _add_security(model: ApiModel, used: set[str], headers: dict[str, str]) -> None:
    found = False
    auth = headers.get("authorization", "").strip()
    if auth:
        found = True
        parts = auth.split(None, 1)
        word = parts[0].lower()
        if len(parts) == 2 and word in _HTTP_SCHEMES:
            used.add(word)
            model.schemes.setdefault(word, {"type": "http", "scheme": word})
        else:
            used.add("api_key")
            model.schemes.setdefault(
                "api_key", {"type": "apiKey", "in": "header", "name": "Authorization"}
            )
    for key, spelled in _KEY_HEADERS.items():
        if key in headers:
            found = True
            name = key.replace("-", "_")
            used.add(name)
            model.schemes.setdefault(name, {"type": "apiKey", "in": "header", "name": spelled})
    if not found:
        used.add(ANONYMOUS)


def _path_names(path: str) -> list[str]:
    return re.findall(r"\{([^{}/]+)\}", path)


@lru_cache(maxsize=4096)
def _matcher(path: str) -> tuple[Optional[re.Pattern[str]], tuple[str, ...]]:
    names = tuple(_path_names(path))
    if not names:
        return None, names
    parts = _split(path)
    pattern = "".join("([^/]+?)" if i % 2 else re.escape(part) for i, part in enumerate(parts))
    return re.compile(pattern), names


def _split(path: str) -> list[str]:
    """Literal parts and parameter names alternating: `/a/{x}/b` → ['/a/', 'x', '/b']."""
    return re.split(r"\{([^{}/]+)\}", path)


def _path_values(path: str, concrete: str) -> dict[str, str]:
    """The concrete value of each path parameter, when the path matches the template."""
    pattern, names = _matcher(path)
    if pattern is None:
        return {}
    match = pattern.fullmatch(concrete)
    if match is None:
        return {}
    return {name: value for name, value in zip(names, match.groups()) if value}
