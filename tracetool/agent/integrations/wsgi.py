"""WSGI middleware: records `http_server_request`/`http_server_response` and serves `/_trace/record`.

`TraceMiddleware(app)` wraps any WSGI app; `wrap_call(app, environ, start_response, call)` is the
same logic for patched framework entry points (`Flask.__call__`, Django's `WSGIHandler.__call__`,
`wsgiref`'s handler). Nested wrapping is harmless: an inner layer sees the request already taken
(`current_request` set) and passes through.

Request parameters: the query string, and a form or JSON body up to 1 MiB — the body is read once
and handed to the app again as a fresh `wsgi.input`. The return event is appended as soon as the app returned with its status decided (Flask,
Django); an app that calls `start_response` only while its body is iterated is finished when the
body is exhausted or closed.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any, Callable, Optional

from tracetool.agent.integrations._common import header_dict
from tracetool.agent.integrations.http_server import (
    ServerRequest,
    body_params,
    current_request,
    is_remote,
    remote_response,
    serving_remote,
    wants_body,
)

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[Environ, StartResponse], Iterable[bytes]]

_STATUS_TEXT = {
    200: "200 OK",
    403: "403 Forbidden",
    404: "404 Not Found",
    405: "405 Method Not Allowed",
    409: "409 Conflict",
}


class TraceMiddleware:
    """Wrap a WSGI app: `app = TraceMiddleware(app)`."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        return wrap_call(self.app, environ, start_response)


def wrap_call(
    app: Any,
    environ: Environ,
    start_response: StartResponse,
    call: Optional[Callable[[Environ, StartResponse], Iterable[bytes]]] = None,
) -> Iterable[bytes]:
    """Run one WSGI request through the recorder; `call` defaults to `app` itself."""
    run = call or app
    if current_request.get() is not None or environ.get("tracetool.seen"):
        return run(environ, start_response)
    environ["tracetool.seen"] = True
    path = environ.get("PATH_INFO", "") or "/"
    if is_remote(path):
        return _remote(environ, start_response, path)
    request = begin_environ(environ)
    captured: dict[str, Any] = {}

    def _start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        captured["status"] = status
        captured["headers"] = headers
        if exc_info is None:
            return start_response(status, headers)
        return start_response(status, headers, exc_info)

    try:
        result = run(environ, _start_response)
    except BaseException as exc:
        request.finish(_status(captured), _headers(captured), exc)
        raise
    if "status" in captured:
        # The usual case (Flask, Django): the response is decided. Finish now rather than when
        # the body is closed, which a test client may do late or never.
        request.finish(_status(captured), _headers(captured))
        return result
    request.detach()
    return _Closing(result, request, captured)


def _remote(environ: Environ, start_response: StartResponse, path: str) -> Iterable[bytes]:
    # A server joins repeated headers with "," (refused as malformed by the check).
    hosts = [environ["HTTP_HOST"]] if "HTTP_HOST" in environ else []
    origins = [environ["HTTP_ORIGIN"]] if "HTTP_ORIGIN" in environ else []
    status, ctype, body = remote_response(
        environ.get("REQUEST_METHOD", "GET"), path, hosts, origins
    )
    headers = [("Content-Length", str(len(body)))]
    if ctype:
        headers.insert(0, ("Content-Type", ctype))
    start_response(_STATUS_TEXT.get(status, f"{status} Status"), headers)
    return _RemoteBody(body)


class _RemoteBody:
    """A `/_trace/` response body. Servers write their access log while sending it (werkzeug)
    or just before closing it (wsgiref); closing it ends the no-recording window."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        yield self._body

    def close(self) -> None:
        serving_remote.set(False)


def begin_environ(environ: Environ) -> ServerRequest:
    """Start recording the request described by a WSGI environ (reads a small body)."""
    path = (environ.get("SCRIPT_NAME", "") or "") + (environ.get("PATH_INFO", "") or "/")
    pairs = [(k[5:].replace("_", "-"), v) for k, v in environ.items() if k.startswith("HTTP_")]
    if environ.get("CONTENT_TYPE"):
        pairs.append(("Content-Type", environ["CONTENT_TYPE"]))
    if environ.get("CONTENT_LENGTH"):
        pairs.append(("Content-Length", environ["CONTENT_LENGTH"]))
    request = ServerRequest(
        environ.get("REQUEST_METHOD", "GET"),
        path,
        environ.get("SERVER_PROTOCOL"),
        header_dict(pairs),
    )
    params: list[tuple[str, Any]] = []
    query = environ.get("QUERY_STRING")
    if query:
        from urllib.parse import parse_qsl

        params.extend(parse_qsl(query, keep_blank_values=True))
    params.extend(_body(environ))
    request.begin(params)
    return request


def _body(environ: Environ) -> list[tuple[str, Any]]:
    ctype = environ.get("CONTENT_TYPE")
    try:
        length: Optional[int] = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = None
    if not wants_body(ctype, length):
        return []
    stream = environ.get("wsgi.input")
    if stream is None:
        return []
    body = stream.read(length)
    environ["wsgi.input"] = io.BytesIO(body)
    return body_params(ctype, body)


def _status(captured: dict[str, Any]) -> Optional[int]:
    status = captured.get("status")
    if not status:
        return None
    try:
        return int(str(status).split(" ", 1)[0])
    except ValueError:
        return None


def _headers(captured: dict[str, Any]) -> Optional[dict[str, str]]:
    headers = captured.get("headers")
    return header_dict(headers) if headers is not None else None


class _Closing:
    """The app's response iterable; finishes the recorded request when closed or exhausted."""

    def __init__(self, result: Iterable[bytes], request: ServerRequest, captured: dict[str, Any]):
        self._result = result
        self._request: Optional[ServerRequest] = request
        self._captured = captured

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._result
        except GeneratorExit:
            self._done()
            raise
        except BaseException as exc:
            self._done(exc)
            raise
        self._done()

    def _done(self, exc: Optional[BaseException] = None) -> None:
        request, self._request = self._request, None
        if request is not None:
            request.finish(_status(self._captured), _headers(self._captured), exc)

    def close(self) -> None:
        try:
            close = getattr(self._result, "close", None)
            if close is not None:
                close()
        except Exception as exc:
            self._done(exc)
            raise
        finally:
            self._done()


def install_wsgiref() -> None:
    """Plain WSGI apps served by `wsgiref.simple_server`: wrap the app the handler runs."""
    from wsgiref import handlers

    from tracetool.agent.integrations._patch import patch_method

    def run(original: Any, self: Any, application: Any) -> Any:
        return original(self, TraceMiddleware(application))

    patch_method(handlers.BaseHandler, "run", run)
