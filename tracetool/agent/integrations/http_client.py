"""Outgoing HTTP: requests (`Session.send`), httpx and httpx2 (`Client.send`, `AsyncClient.send`) and
urllib (`urllib.request.AbstractHTTPHandler.do_open`, which every `urlopen` of http/https URLs
goes through).

Each request is one `http_client_request {request_method, url, headers}` call — the URL without
its query string, whose parameters go to `message`, every request header kept — and one
`http_client_response {status_code, headers, mime_type}` return, or `exceptions` when the request
failed (connection refused, timeout). The patches sit at the level where a library hands over a
complete request, above the transports, so requests' own use of urllib3/http.client is never
seen twice; a client call made while another one is being recorded (requests following
redirects) is part of the outer one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable

from tracetool.agent.integrations._common import (
    Span,
    header_dict,
    http_client_guard,
    mime_type,
    parameters,
    split_url,
)
from tracetool.agent.integrations._patch import patch_method


def request_fields(method: str, url: str, headers: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
    base, query = split_url(url)
    fields: dict[str, Any] = {
        "http_client_request": {
            "request_method": str(method).upper(),
            "url": base,
            "headers": header_dict(headers),
        },
        "message": parameters(query),  # required by AppMap's schema, even when empty
    }
    return fields


def response_fields(status: Any, headers: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
    header_map = header_dict(headers)
    response: dict[str, Any] = {"status_code": int(status), "headers": header_map}
    mime = mime_type(header_map)
    if mime:
        response["mime_type"] = mime
    return {"http_client_response": response}


def _recorded(
    fields: Callable[[], dict[str, Any]],
    run: Callable[[], Any],
    result: Callable[[Any], dict[str, Any]],
) -> Any:
    if http_client_guard.get():
        return run()
    span = Span.open(fields)
    if span is None:
        return run()
    token = http_client_guard.set(True)
    try:
        response = run()
    except BaseException:
        http_client_guard.reset(token)
        span.cancel()  # no response: see Span.cancel
        raise
    http_client_guard.reset(token)
    span.close(_safe(result, response))
    return response


def _safe(result: Callable[[Any], dict[str, Any]], response: Any) -> dict[str, Any]:
    try:
        return result(response)
    except Exception:
        return {}


def install_requests() -> None:
    from requests import sessions

    def send(original: Any, self: Any, request: Any, **kwargs: Any) -> Any:
        return _recorded(
            lambda: request_fields(request.method, request.url, request.headers.items()),
            lambda: original(self, request, **kwargs),
            lambda r: response_fields(r.status_code, r.headers.items()),
        )

    patch_method(sessions.Session, "send", send)


def _httpx_request(request: Any) -> dict[str, Any]:
    return request_fields(request.method, str(request.url), request.headers.multi_items())


def _httpx_response(response: Any) -> dict[str, Any]:
    return response_fields(response.status_code, response.headers.multi_items())


def install_httpx(module: str = "httpx") -> None:
    import importlib

    httpx = importlib.import_module(module)

    def send(original: Any, self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        return _recorded(
            lambda: _httpx_request(request),
            lambda: original(self, request, *args, **kwargs),
            _httpx_response,
        )

    async def send_async(original: Any, self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        if http_client_guard.get():
            return await original(self, request, *args, **kwargs)
        span = Span.open(lambda: _httpx_request(request))
        if span is None:
            return await original(self, request, *args, **kwargs)
        token = http_client_guard.set(True)
        try:
            response = await original(self, request, *args, **kwargs)
        except BaseException:
            http_client_guard.reset(token)
            span.cancel()  # no response: see Span.cancel
            raise
        http_client_guard.reset(token)
        span.close(_safe(_httpx_response, response))
        return response

    patch_method(httpx.Client, "send", send)
    patch_method(httpx.AsyncClient, "send", send_async)


def _urllib_headers(req: Any) -> list[tuple[str, str]]:
    merged = dict(req.unredirected_hdrs)
    merged.update(req.headers)
    return list(merged.items())


def install_urllib() -> None:
    from urllib import request as urllib_request

    def do_open(original: Any, self: Any, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return _recorded(
            lambda: request_fields(req.get_method(), req.full_url, _urllib_headers(req)),
            lambda: original(self, http_class, req, **kwargs),
            lambda r: response_fields(r.status, r.headers.items()),
        )

    patch_method(urllib_request.AbstractHTTPHandler, "do_open", do_open)


def install_httpx2() -> None:
    """httpx2 (httpx's successor, same client API; Starlette's TestClient uses it)."""
    install_httpx("httpx2")
