"""ASGI: Starlette and FastAPI (auto-hooked through `Starlette.__call__`) and a plain ASGI app
wrapped in `TraceASGIMiddleware`, driven in-process with a minimal ASGI client."""

from __future__ import annotations

import asyncio
from typing import Any, Optional

import orjson
import pytest

from tests.agent_integrations.conftest import Recording
from tracetool.agent.integrations.asgi import TraceASGIMiddleware


def asgi_request(
    app: Any,
    method: str,
    path: str,
    body: bytes = b"",
    headers: Optional[dict[str, str]] = None,
    query: bytes = b"",
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request through an ASGI app: (status, headers, body); app errors propagate."""
    raw_headers = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    if body:
        raw_headers.append((b"content-length", str(len(body)).encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query,
        "headers": raw_headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    chunks = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if chunks:
            return chunks.pop(0)
        await asyncio.sleep(3600)  # a disconnect never comes in these tests
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    hdrs = {k.decode().title(): v.decode() for k, v in start.get("headers", [])}
    return start["status"], hdrs, data


def make_fastapi_app() -> Any:
    fastapi = pytest.importorskip("fastapi")
    app = fastapi.FastAPI()
    router = fastapi.APIRouter()

    @router.get("/items/{item_id}")
    def item(item_id: int, verbose: bool = False) -> dict[str, Any]:
        return {"id": item_id, "verbose": verbose}

    @router.post("/items")
    def create(payload: dict[str, Any]) -> dict[str, Any]:
        return payload

    app.include_router(router, prefix="/v1")

    @app.get("/fail")
    def fail() -> None:
        raise ValueError("fastapi failure")

    return app


def test_fastapi_route_template_and_params(recording: Recording) -> None:
    app = make_fastapi_app()
    status, _headers, body = asgi_request(app, "GET", "/v1/items/5", query=b"verbose=true")
    assert status == 200 and orjson.loads(body) == {"id": 5, "verbose": True}
    (call,) = recording.calls("http_server_request")
    request = call["http_server_request"]
    assert request["path_info"] == "/v1/items/5"
    assert request["normalized_path_info"] == "/v1/items/{item_id}"
    assert request["protocol"] == "HTTP/1.1"
    # query parameters, then the path parameters (issue 12: AppMap's openapi relies on them)
    assert [(p["name"], p["value"]) for p in call["message"]] == [
        ("verbose", "'true'"),
        ("item_id", "'5'"),
    ]
    response = recording.return_of(call)["http_server_response"]
    assert response["status_code"] == 200 and response["mime_type"] == "application/json"


def test_fastapi_json_body_is_recorded_and_still_read_by_the_app(recording: Recording) -> None:
    app = make_fastapi_app()
    payload = orjson.dumps({"name": "bolt", "stock": 3})
    status, _, body = asgi_request(
        app, "POST", "/v1/items", payload, {"Content-Type": "application/json"}
    )
    assert status == 200 and orjson.loads(body) == {"name": "bolt", "stock": 3}
    (call,) = recording.calls("http_server_request")
    assert call["http_server_request"]["normalized_path_info"] == "/v1/items"
    assert {p["name"] for p in call["message"]} == {"name", "stock"}


def test_fastapi_exception_recorded_with_500(recording: Recording) -> None:
    app = make_fastapi_app()
    with pytest.raises(ValueError):
        asgi_request(app, "GET", "/fail")
    (call,) = recording.calls("http_server_request")
    ret = recording.return_of(call)
    assert ret["http_server_response"]["status_code"] == 500
    assert "exceptions" not in ret  # AppMap's schema: exceptions on function returns only


def test_starlette_mount_prefix_in_template(recording: Recording) -> None:
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    async def user(request: Any) -> PlainTextResponse:
        return PlainTextResponse(f"user {request.path_params['uid']}")

    app = Starlette(routes=[Mount("/api", routes=[Route("/users/{uid:int}", user)])])
    status, _headers, body = asgi_request(app, "GET", "/api/users/9")
    assert (status, body) == (200, b"user 9")
    (call,) = recording.calls("http_server_request")
    assert call["http_server_request"]["normalized_path_info"] == "/api/users/{uid}"
    assert recording.return_of(call)["http_server_response"]["mime_type"].startswith("text/plain")


async def plain_asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 201,
            "headers": [(b"content-type", b"text/plain")],
        }
    )
    await send({"type": "http.response.body", "body": b"made"})


def test_plain_asgi_app(recording: Recording) -> None:
    status, _, body = asgi_request(TraceASGIMiddleware(plain_asgi), "PUT", "/things/1")
    assert (status, body) == (201, b"made")
    (call,) = recording.calls("http_server_request")
    assert call["http_server_request"]["request_method"] == "PUT"
    assert recording.return_of(call)["http_server_response"]["status_code"] == 201


def test_remote_endpoints_in_asgi() -> None:
    app = TraceASGIMiddleware(plain_asgi)
    assert asgi_request(app, "GET", "/_trace/record")[2] == b'{"enabled":false}'
    assert asgi_request(app, "DELETE", "/_trace/record")[0] == 404
    assert asgi_request(app, "POST", "/_trace/record")[:3:2] == (200, b"")
    assert asgi_request(app, "POST", "/_trace/record")[0] == 409
    status, headers, body = asgi_request(app, "GET", "/_trace/record")
    assert headers["Content-Type"] == "application/json" and orjson.loads(body) == {"enabled": True}
    asgi_request(app, "GET", "/recorded")
    status, headers, body = asgi_request(app, "DELETE", "/_trace/record")
    assert status == 200 and headers["Content-Type"] == "application/json"
    events = orjson.loads(body)["events"]
    assert [
        e["http_server_request"]["path_info"] for e in events if "http_server_request" in e
    ] == ["/recorded"]


def test_remote_endpoints_in_fastapi() -> None:
    app = make_fastapi_app()
    assert asgi_request(app, "POST", "/_trace/record")[0] == 200
    asgi_request(app, "GET", "/v1/items/1")
    status, _, body = asgi_request(app, "DELETE", "/_trace/record")
    assert status == 200
    events = orjson.loads(body)["events"]
    routes = [
        e["http_server_request"].get("normalized_path_info")
        for e in events
        if "http_server_request" in e
    ]
    assert routes == ["/v1/items/{item_id}"]
