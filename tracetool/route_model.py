"""One route model: how a recorded HTTP request becomes its route, and when two routes are one.

Every feature that shows or looks up a route (index, `query endpoints/find`, `inspect`,
`openapi`, `compare`, the daemon's RPC/MCP/UI/LSP) goes through this module, so a route that
one of them prints is found by all the others.

Contract:

- `server_template(call)` — the `{param}` (OpenAPI) template of an HTTP server request: the
  agent's `normalized_path_info` when there is one, else the `path_info`; the query string is
  dropped, every template dialect is read (`routes.to_openapi`), and any segment that still
  looks like a value (`routes.classify_segment`: `42`, a UUID, a hex id, a token…) becomes a
  parameter. A parameter the model had to guess is named after the route word before it, the
  same way whatever the value's kind: `/users/42` and `/users/ab12cd34ef` are both
  `/users/{user_id}`, `/confirm/<token>` is `/confirm/{confirm_id}`; with no word before it the
  name is `{id}`. A placeholder that sanitize already wrote (`/users/:int`) is named the same
  way, so a sanitized and a raw recording of one request agree. Parameters of a real template
  keep their names (`{pk}` stays `{pk}`). A path that does not start with "/" is kept as it
  is (openapi skips it with a warning).
- `server_route(call)` → `(METHOD, template)`; `route_id(method, template)` → `"GET /u/{id}"`.
- `shape(template)` — what route comparison uses: the template with every parameter written
  `{}`, in any dialect (`/book/:id`, `/book/{pk}`, `/book/<int:pk>` → `/book/{}`). Two routes
  are the same when method and shape are equal (`same_route`).
- `parse_route(text)` reads what a user types after `route:` or in `--route`: `GET /book/:id`,
  `get /book/<int:pk>`, a full URL (`http://host/book/1`; host and query dropped); → `(METHOD,
  template)`, raising `UsageError` on text that is not `<METHOD> <path>`.
- `client_route(method, url)` — the route of an HTTP client request: `routes.normalize_url`
  (credentials, query and fragment dropped, values as `:<kind>`), the host kept, and the port
  dropped when the host is a loopback address (`127.0.0.1`, `::1`, `localhost`, `0.0.0.0`):
  test servers listen on ephemeral ports, so `http://127.0.0.1:33025/quote` and `:42319` are one
  route. Other ports are kept (`https://api.example.com:8443/…`).

Pure stdlib, memoised: the index calls this for every request.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from tracetool import routes
from tracetool.errors import UsageError
from tracetool.lazyre import lazy

__all__ = [
    "HTTP_METHODS",
    "client_route",
    "guess_template",
    "parse_route",
    "route_id",
    "same_route",
    "server_route",
    "server_template",
    "shape",
]

HTTP_METHODS = frozenset(
    "GET POST PUT PATCH DELETE HEAD OPTIONS TRACE CONNECT PROPFIND PROPPATCH MKCOL COPY MOVE "
    "LOCK UNLOCK REPORT SEARCH".split()
)

_OPENAPI_PARAM = re.compile(r"\{([^{}/]*)\}")
_LOOPBACK = frozenset(("127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0", "ip6-localhost"))
_NON_WORD = lazy(r"[^A-Za-z0-9]+")
_HEX_WORD = lazy(r"[a-fA-F]{12,}")


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):  # some agents wrote path_info as an array
        return ",".join(str(v) for v in value)
    return str(value)


def _param_name(previous: str) -> str:
    """`users` → `user_id`, `categories` → `category_id`; no usable word → `id`."""
    word = _NON_WORD.sub("_", previous).strip("_").lower()
    if not word or not word[0].isalpha() or word.startswith("{"):
        return "id"
    if word.endswith("ies") and len(word) > 3:
        word = word[:-3] + "y"
    elif word.endswith(("ses", "xes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return f"{word}_id"


@lru_cache(maxsize=16384)
def guess_template(path: str, rename_kinds: bool = True) -> str:
    """The `{param}` template of a path or template (module doc, `server_template`)."""
    if not rename_kinds and "(?P<" in path:
        # a Django regex route: its groups hold `?` and `/`, so rewrite them before reading
        path = routes.to_openapi(path)
    cut = len(path)
    for sep in "?#":
        at = path.find(sep)
        if 0 <= at < cut:
            cut = at
    path = path[:cut].strip()
    # Value-like segments → `:<kind>`; template parameters of every dialect are kept as written.
    normalized = routes.normalize_path(path)
    out: list[str] = []
    previous = ""
    for segment in normalized.split("/"):
        kind = segment[1:] if segment.startswith(":") else None
        if kind is None and rename_kinds and segment.startswith("{") and segment.endswith("}"):
            kind = segment[1:-1]
        if kind is None and rename_kinds and _HEX_WORD.fullmatch(segment):
            kind = "hex"  # `ffffffffffff`: letters only, but no route word looks like this
        if kind is not None and kind in routes.KINDS:
            out.append("{" + _param_name(previous) + "}")
            previous = ""
        else:
            out.append(segment)
            previous = segment
    return routes.to_openapi("/".join(out))


def server_template(call: dict[str, Any]) -> str:
    """The route template of an HTTP server request call (module doc)."""
    request = call.get("http_server_request")
    if not isinstance(request, dict):
        return ""
    template = _text(request.get("normalized_path_info"))
    if template:
        # A recorded template keeps its parameter names ({kind} included: `{value}` is a real name).
        return guess_template(template, rename_kinds=False)
    return guess_template(_text(request.get("path_info")) or "/")


def server_route(call: dict[str, Any]) -> tuple[str, str]:
    request = call.get("http_server_request")
    method = _text(request.get("request_method")) if isinstance(request, dict) else ""
    return method.strip().upper(), server_template(call)


def route_id(method: str, template: str) -> str:
    """`GET /users/{id}` — the text of a `route:` code object."""
    return f"{method.strip().upper()} {template}"


@lru_cache(maxsize=16384)
def shape(template: str) -> str:
    """The template with every parameter as `{}` (any dialect): routes compare by this."""
    return _OPENAPI_PARAM.sub("{}", routes.to_openapi(template.strip()))


def same_route(a: tuple[str, str], b: tuple[str, str]) -> bool:
    return a[0].upper() == b[0].upper() and shape(a[1]) == shape(b[1])


def parse_route(text: str) -> tuple[str, str]:
    """`(METHOD, template)` of what a user typed as a route (module doc)."""
    parts = text.strip().split(None, 1)
    if len(parts) != 2 or parts[0].upper() not in HTTP_METHODS:
        raise UsageError(
            f"route {text.strip()!r}: expected '<METHOD> <path>', e.g. 'GET /users/:id'"
        )
    method, path = parts[0].upper(), parts[1].strip()
    if "://" in path:
        path = "/" + path.split("://", 1)[1].partition("/")[2]
    return method, guess_template(path, rename_kinds=False)


@lru_cache(maxsize=8192)
def _client_url(url: str) -> str:
    normalized = routes.normalize_url(url)
    scheme, sep, rest = normalized.partition("//")
    if not sep:
        return normalized
    authority, slash, path = rest.partition("/")
    host, colon, port = authority.rpartition(":")
    if colon and port.isdigit() and host in _LOOPBACK:
        authority = host
    return f"{scheme}//{authority}{slash}{path}"


def client_route(method: str, url: str) -> str:
    """`GET http://127.0.0.1/quote/:int` — the route of an HTTP client request (module doc)."""
    return f"{method.strip().upper()} {_client_url(url.strip())}"
