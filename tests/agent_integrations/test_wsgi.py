"""WSGI: Flask (auto-hooked through `Flask.__call__`) and a plain WSGI app wrapped in
`TraceMiddleware`: server request/response events, route templates, parameters, exceptions,
and the `/_trace/record` endpoints answered in the app's own stack."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.agent_integrations.conftest import Recording
from tracetool.agent.integrations.wsgi import TraceMiddleware

flask = pytest.importorskip("flask")


def make_flask_app() -> Any:
    app = flask.Flask("tests_flask")

    @app.get("/products/<int:product_id>")
    def product(product_id: int) -> Any:
        return flask.jsonify({"id": product_id})

    @app.post("/orders/<order_id>/items")
    def add_item(order_id: str) -> Any:
        return flask.jsonify({"order": order_id, **(flask.request.get_json() or {})}), 201

    @app.get("/boom")
    def boom() -> Any:
        raise RuntimeError("kaboom")

    return app


def server_calls(recording: Recording) -> list[dict[str, Any]]:
    return recording.calls("http_server_request")


def test_flask_request_and_response(recording: Recording) -> None:
    client = make_flask_app().test_client()
    assert client.get("/products/7?color=red", headers={"X-Trace": "t1"}).status_code == 200
    (call,) = server_calls(recording)
    request = call["http_server_request"]
    assert request["request_method"] == "GET"
    assert request["path_info"] == "/products/7"
    assert request["normalized_path_info"] == "/products/{product_id}"
    assert request["protocol"] == "HTTP/1.1"
    assert request["headers"]["X-Trace"] == "t1"
    assert [(p["name"], p["value"]) for p in call["message"]] == [
        ("color", "'red'"),
        ("product_id", "7"),  # the path parameter, as the view receives it
    ]
    response = recording.return_of(call)["http_server_response"]
    assert response["status_code"] == 200
    assert response["mime_type"] == "application/json"
    assert response["headers"]["Content-Type"] == "application/json"


def test_flask_json_body_becomes_message(recording: Recording) -> None:
    client = make_flask_app().test_client()
    r = client.post("/orders/ab12/items", json={"sku": "X-1", "quantity": 2})
    assert r.status_code == 201 and r.get_json() == {"order": "ab12", "sku": "X-1", "quantity": 2}
    (call,) = server_calls(recording)
    assert call["http_server_request"]["normalized_path_info"] == "/orders/{order_id}/items"
    params = {p["name"]: p for p in call["message"]}
    assert params["sku"]["value"] == "'X-1'"
    assert params["quantity"]["class"] in ("int", "builtins.int")


def test_flask_unhandled_exception_is_recorded_with_the_500(recording: Recording) -> None:
    client = make_flask_app().test_client()
    assert client.get("/boom").status_code == 500
    (call,) = server_calls(recording)
    ret = recording.return_of(call)
    assert ret["http_server_response"]["status_code"] == 500
    assert "exceptions" not in ret  # AppMap's schema: exceptions on function returns only


def test_flask_propagated_exception_is_recorded_once(recording: Recording) -> None:
    app = make_flask_app()
    app.config["PROPAGATE_EXCEPTIONS"] = True
    with pytest.raises(RuntimeError):
        app.test_client().get("/boom")
    (call,) = server_calls(recording)
    ret = recording.return_of(call)
    assert ret["http_server_response"]["status_code"] == 500
    assert "exceptions" not in ret


def test_flask_unknown_route_has_no_template(recording: Recording) -> None:
    assert make_flask_app().test_client().get("/nowhere/1").status_code == 404
    (call,) = server_calls(recording)
    assert "normalized_path_info" not in call["http_server_request"]
    assert recording.return_of(call)["http_server_response"]["status_code"] == 404


def plain_app(environ: dict[str, Any], start_response: Any) -> Any:
    def body() -> Any:
        # start_response inside the iterable: the status is known only while streaming
        start_response("202 Accepted", [("Content-Type", "text/plain")])
        yield b"hello "
        yield environ["PATH_INFO"].encode()

    return body()


def run_wsgi(app: Any, method: str, path: str, body: bytes = b"", ctype: str = "") -> tuple:
    from io import BytesIO
    from wsgiref.util import setup_testing_defaults

    environ: dict[str, Any] = {"REQUEST_METHOD": method, "PATH_INFO": path}
    if body:
        environ.update(CONTENT_TYPE=ctype, CONTENT_LENGTH=str(len(body)))
    environ["wsgi.input"] = BytesIO(body)
    setup_testing_defaults(environ)
    seen: dict[str, Any] = {}

    def start_response(status: str, headers: list, exc_info: Any = None) -> None:
        seen["status"], seen["headers"] = status, dict(headers)

    result = app(environ, start_response)
    try:
        data = b"".join(result)
    finally:
        if hasattr(result, "close"):
            result.close()
    return seen["status"], seen["headers"], data


def test_plain_wsgi_streamed_response(recording: Recording) -> None:
    status, _, data = run_wsgi(TraceMiddleware(plain_app), "GET", "/stream")
    assert (status, data) == ("202 Accepted", b"hello /stream")
    (call,) = server_calls(recording)
    assert call["http_server_request"]["path_info"] == "/stream"
    response = recording.return_of(call)["http_server_response"]
    assert response["status_code"] == 202 and response["mime_type"] == "text/plain"


def test_plain_wsgi_form_body_is_replayed_to_the_app(recording: Recording) -> None:
    def echo(environ: dict[str, Any], start_response: Any) -> Any:
        data = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [data]

    ctype = "application/x-www-form-urlencoded"
    _, _, data = run_wsgi(TraceMiddleware(echo), "POST", "/form", b"a=1&b=two", ctype)
    assert data == b"a=1&b=two"
    (call,) = server_calls(recording)
    assert [(p["name"], p["value"]) for p in call["message"]] == [("a", "'1'"), ("b", "'two'")]


def test_remote_endpoints_follow_the_state_table() -> None:
    app = TraceMiddleware(plain_app)
    assert run_wsgi(app, "GET", "/_trace/record")[2] == b'{"enabled":false}'
    assert run_wsgi(app, "DELETE", "/_trace/record")[0].startswith("404")
    status, headers, body = run_wsgi(app, "POST", "/_trace/record")
    assert status.startswith("200") and body == b"" and "Content-Type" not in headers
    assert run_wsgi(app, "POST", "/_trace/record")[0].startswith("409")
    status, headers, body = run_wsgi(app, "GET", "/_trace/record")
    assert headers["Content-Type"] == "application/json"
    assert orjson.loads(body) == {"enabled": True}
    run_wsgi(app, "GET", "/recorded")
    status, headers, body = run_wsgi(app, "DELETE", "/_trace/record")
    assert status.startswith("200") and headers["Content-Type"] == "application/json"
    doc = orjson.loads(body)
    assert {"version", "metadata", "classMap", "events"} <= doc.keys()
    paths = [
        e["http_server_request"]["path_info"] for e in doc["events"] if "http_server_request" in e
    ]
    assert paths == ["/recorded"]  # the /_trace/ requests themselves are not recorded
    assert orjson.loads(run_wsgi(app, "GET", "/_trace/record")[2]) == {"enabled": False}
    assert run_wsgi(app, "GET", "/_trace/other")[0].startswith("404")


def test_remote_endpoints_inside_flask() -> None:
    client = make_flask_app().test_client()
    assert client.post("/_trace/record").status_code == 200
    try:
        assert client.get("/_trace/record").get_json() == {"enabled": True}
        client.get("/products/3")
    finally:
        r = client.delete("/_trace/record")
    assert r.status_code == 200 and r.mimetype == "application/json"
    events = r.get_json()["events"]
    routes = [
        e["http_server_request"].get("normalized_path_info")
        for e in events
        if "http_server_request" in e
    ]
    assert routes == ["/products/{product_id}"]
    assert client.delete("/_trace/record").status_code == 404
