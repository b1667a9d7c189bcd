"""ASGI middleware: records `http_server_request`/`http_server_response` and serves `/_trace/record`.

`TraceASGIMiddleware(app)` wraps any ASGI 3 app; `wrap_asgi(app, scope, receive, send, call)` is
the same logic for patched entry points (`Starlette.__call__`, Django's `ASGIHandler.__call__`,
uvicorn's loaded app). Only `http` scopes are recorded; `lifespan` and `websocket` pass through.
A nested layer sees the request already taken and passes through.

The route template is taken from the framework hook (`ServerRequest.set_route`) or, after the app
ran, from the scope: FastAPI's effective route (`scope["fastapi"]["effective_route_context"]`,
router prefixes applied), else `scope["route"]` (Starlette and older FastAPI put the matched route
there) joined to the mount prefix the routers added to `root_path`. A form or JSON body up to 1 MiB with a
Content-Length is read before the app runs and replayed to it, to record its parameters.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Callable, Optional

from tracetool.agent.integrations._common import header_dict
from tracetool.agent.integrations.http_server import (
    ServerRequest,
    body_params,
    current_request,
    is_remote,
    remote_response,
    wants_body,
)

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_SEEN = "tracetool.seen"


class TraceASGIMiddleware:
    """Wrap an ASGI 3 app: `app = TraceASGIMiddleware(app)`."""

    def __init__(self, app: AsgiApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await wrap_asgi(self.app, scope, receive, send)


async def wrap_asgi(
    app: Any,
    scope: Scope,
    receive: Receive,
    send: Send,
    call: Optional[Callable[[Scope, Receive, Send], Awaitable[None]]] = None,
) -> None:
    run = call or app
    if scope.get("type") != "http" or scope.get(_SEEN) or current_request.get() is not None:
        await run(scope, receive, send)
        return
    scope[_SEEN] = True
    path = scope.get("path") or "/"
    if is_remote(path):
        await _remote(scope, send, path)
        return
    root_path = scope.get("root_path", "") or ""
    headers = header_dict(scope.get("headers") or ())
    version = scope.get("http_version")
    request = ServerRequest(
        scope.get("method", "GET"),
        root_path + path if root_path and not path.startswith(root_path) else path,
        f"HTTP/{version}" if version else None,
        headers,
    )
    params: list[tuple[str, Any]] = []
    query = scope.get("query_string")
    if query:
        from urllib.parse import parse_qsl

        params.extend(parse_qsl(query.decode("latin-1"), keep_blank_values=True))
    receive, body = await _read_body(headers, receive)
    params.extend(body)
    request.begin(params)
    captured: dict[str, Any] = {}

    async def _send(message: Message) -> None:
        if message.get("type") == "http.response.start":
            captured["status"] = message.get("status")
            captured["headers"] = header_dict(message.get("headers") or ())
        await send(message)

    try:
        await run(scope, receive, _send)
    except BaseException as exc:
        _route_from_scope(request, scope, root_path)
        request.finish(captured.get("status"), captured.get("headers"), _recordable(exc))
        raise
    _route_from_scope(request, scope, root_path)
    request.finish(captured.get("status"), captured.get("headers"))


def _recordable(exc: BaseException) -> Optional[BaseException]:
    # A cancelled task (client went away) is not an error of the app.
    return exc if isinstance(exc, Exception) else None


async def _remote(scope: Scope, send: Send, path: str) -> None:
    hosts: list[str] = []
    origins: list[str] = []
    for name, value in scope.get("headers") or ():
        key = name.lower() if isinstance(name, bytes) else str(name).lower().encode()
        if key in (b"host", b"origin"):
            text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
            (hosts if key == b"host" else origins).append(text)
    status, ctype, body = remote_response(scope.get("method", "GET"), path, hosts, origins)
    headers = [(b"content-length", str(len(body)).encode())]
    if ctype:
        headers.insert(0, (b"content-type", ctype.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _read_body(headers: dict[str, str], receive: Receive) -> tuple[Receive, list[Any]]:
    """Read a small form/JSON body and return a `receive` that replays it to the app."""
    ctype = headers.get("Content-Type")
    try:
        length: Optional[int] = int(headers.get("Content-Length", "0"))
    except ValueError:
        length = None
    if not wants_body(ctype, length):
        return receive, []
    messages: list[Message] = []
    chunks: list[bytes] = []
    while True:
        message = await receive()
        messages.append(message)
        if message.get("type") != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break

    async def replay() -> Message:
        if messages:
            return messages.pop(0)
        return await receive()

    return replay, body_params(ctype, b"".join(chunks))


def _route_from_scope(request: ServerRequest, scope: Scope, root_path: str) -> None:
    path_params = scope.get("path_params")
    if isinstance(path_params, dict) and path_params:
        request.add_params(path_params.items())
    if request.route is not None:
        return
    # FastAPI ≥ 0.13x keeps the route as included (prefix applied) in its own scope namespace;
    # `scope["route"]` is then the router-relative original.
    fastapi_scope = scope.get("fastapi")
    effective = (
        fastapi_scope.get("effective_route_context") if isinstance(fastapi_scope, dict) else None
    )
    template = getattr(effective, "path_format", None)
    if isinstance(template, str) and template:
        prefix = ""
    else:
        route = scope.get("route")
        if getattr(route, "endpoint", None) is None:  # a Mount of a non-router app: no template
            return
        template = getattr(route, "path_format", None) or getattr(route, "path", None)
        if not isinstance(template, str) or not template:
            return
        mounted = scope.get("root_path", "") or ""
        prefix = mounted[len(root_path) :] if mounted.startswith(root_path) else ""
    request.set_route(prefix.rstrip("/") + template)


def install_uvicorn() -> None:
    """Any ASGI app served by uvicorn: wrap the app uvicorn loaded."""
    from uvicorn import config

    from tracetool.agent.integrations._patch import patch_method

    def load(original: Any, self: Any) -> Any:
        result = original(self)
        if not isinstance(self.loaded_app, TraceASGIMiddleware):
            self.loaded_app = TraceASGIMiddleware(self.loaded_app)
        return result

    patch_method(config.Config, "load", load)
