"""What the example apps record: a remote recording over real HTTP holds the HTTP server
requests (with route templates, parameters, status, mime type), SQL, outgoing HTTP, log events
and unhandled exceptions the requests caused, in a valid AppMap 1.x document."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest

from tests.agent_e2e.conftest import AppServer, record, request, start_app

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def validate() -> Callable[[dict[str, Any], Path], None]:
    """Validate a document with AppMap's own validator (@appland/appmap-validate, via npm)."""
    from tests.realparts.appmap_validate import assert_valid, validator_lib

    validator_lib()

    def run(doc: dict[str, Any], path: Path) -> None:
        path.write_bytes(orjson.dumps(doc))
        assert_valid([path])

    return run


def calls(doc: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [e for e in doc["events"] if e["event"] == "call" and key in e]


def return_of(doc: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
    return next(
        e for e in doc["events"] if e["event"] == "return" and e.get("parent_id") == call["id"]
    )


def routes(doc: dict[str, Any]) -> list[tuple[str, str, int]]:
    out = []
    for call in calls(doc, "http_server_request"):
        req = call["http_server_request"]
        status = return_of(doc, call)["http_server_response"]["status_code"]
        out.append(
            (req["request_method"], req.get("normalized_path_info", req["path_info"]), status)
        )
    return out


def log_messages(doc: dict[str, Any]) -> list[str]:
    return [
        c["parameters"][0]["value"]
        for c in calls(doc, "defined_class")
        if c["defined_class"] == "logging.Logger"
    ]


def check_common(doc: dict[str, Any], app: str, framework: str | None) -> None:
    assert doc["version"].startswith("1.")
    md = doc["metadata"]
    assert md["recorder"] == {"name": "remote", "type": "remote"}
    assert md["app"] == app
    assert md["language"]["name"] == "python"
    assert md["client"]["name"] == "tracetool"
    if framework:
        assert framework in [f["name"] for f in md.get("frameworks", [])]
    assert isinstance(doc["classMap"], list)
    # the remote-recording requests themselves are not recorded
    assert all(
        not c["http_server_request"]["path_info"].startswith("/_trace")
        for c in calls(doc, "http_server_request")
    )
    # every call has its return
    call_ids = {e["id"] for e in doc["events"] if e["event"] == "call"}
    parents = {e["parent_id"] for e in doc["events"] if e["event"] == "return"}
    assert call_ids == parents


def function_events_expected() -> bool:
    try:
        import tracetool.agent.instrument  # noqa: F401
    except ImportError:
        return False
    return True


def test_shop_flask_recording(
    servers: dict[str, AppServer], stub_url: str, validate: Callable, tmp_path: Path
) -> None:
    order: dict[str, Any] = {}

    def drive(url: str) -> None:
        assert request(url, "GET", "/products?q=Tea").status == 200
        assert request(url, "GET", "/products/2").status == 200
        created = request(url, "POST", "/orders", {"product_id": 2, "quantity": 3})
        assert created.status == 201
        order.update(created.json())
        assert request(url, "GET", f"/orders/{order['id']}").status == 200

    doc = record(servers["shop"], drive)
    check_common(doc, "shop", "flask")
    assert routes(doc) == [
        ("GET", "/products", 200),
        ("GET", "/products/{product_id}", 200),
        ("POST", "/orders", 201),
        ("GET", "/orders/{order_id}", 200),
    ]
    search, _, post, _ = calls(doc, "http_server_request")
    assert [(p["name"], p["value"]) for p in search["message"]] == [("q", "'Tea'")]
    assert {p["name"] for p in post["message"]} == {"product_id", "quantity"}
    assert post["http_server_request"]["headers"]["Content-Type"] == "application/json"
    assert return_of(doc, post)["http_server_response"]["mime_type"] == "application/json"
    sql = [c["sql_query"] for c in calls(doc, "sql_query")]
    assert {q["database_type"] for q in sql} == {"sqlite"}
    assert any(q["sql"].startswith("INSERT INTO orders") for q in sql)
    assert any("WHERE name LIKE ?" in q["sql"] for q in sql)
    (client,) = calls(doc, "http_client_request")
    assert client["http_client_request"]["url"] == f"{stub_url}/quote"
    assert {p["name"] for p in client["message"]} == {"product_id", "quantity", "unit_cents"}
    assert return_of(doc, client)["http_client_response"]["status_code"] == 200
    # SQL and the client call nest under the request that caused them
    assert client["thread_id"] == post["thread_id"]
    messages = log_messages(doc)
    assert any(f"order {order['id']} created" in m for m in messages)
    assert any("quote for product 2 x3" in m for m in messages)
    if function_events_expected():
        names = {c["method_id"] for c in calls(doc, "defined_class")}
        assert {"place_order", "quote"} <= names
    validate(doc, tmp_path / "shop.trace.json")


def test_shop_unhandled_exception(servers: dict[str, AppServer]) -> None:
    doc = record(servers["shop"], lambda url: request(url, "GET", "/boom"))
    (call,) = calls(doc, "http_server_request")
    assert call["http_server_request"]["normalized_path_info"] == "/boom"
    ret = return_of(doc, call)
    assert ret["http_server_response"]["status_code"] == 500
    assert "exceptions" not in ret  # AppMap's schema: exceptions on function returns only
    raised = _function_exceptions(doc)
    assert raised[0]["class"] == "builtins.RuntimeError"
    assert raised[0]["message"] == "the shop exploded"
    assert raised[0]["path"].endswith("shop/app.py")


def _function_exceptions(doc: dict) -> list[dict]:
    """The exceptions on the function returns of `doc`, innermost first."""
    return [x for e in doc["events"] if "exceptions" in e for x in e["exceptions"]]


def test_fastapi_recording(
    servers: dict[str, AppServer], stub_url: str, validate: Callable, tmp_path: Path
) -> None:
    def drive(url: str) -> None:
        assert request(url, "GET", "/v1/items?limit=1").status == 200
        assert request(url, "GET", "/v1/items/2").status == 200
        assert request(url, "GET", "/v1/items/99").status == 404
        assert request(url, "POST", "/v1/items", {"name": "washer", "stock": 7}).status == 201
        assert request(url, "GET", "/rates?currency=USD").status == 200

    doc = record(servers["fastapi"], drive)
    check_common(doc, "inventory", "fastapi")
    assert routes(doc) == [
        ("GET", "/v1/items", 200),
        ("GET", "/v1/items/{item_id}", 200),
        ("GET", "/v1/items/{item_id}", 404),
        ("POST", "/v1/items", 201),
        ("GET", "/rates", 200),
    ]
    sql = [c["sql_query"] for c in calls(doc, "sql_query")]
    assert any(q["sql"].startswith("INSERT INTO items") for q in sql)
    assert {q["database_type"] for q in sql} == {"sqlite"}
    (client,) = calls(doc, "http_client_request")
    assert client["http_client_request"]["url"] == f"{stub_url}/rates"
    assert [(p["name"], p["value"]) for p in client["message"]] == [("currency", "'USD'")]
    assert any("added item washer" in m for m in log_messages(doc))
    validate(doc, tmp_path / "fastapi.trace.json")


def test_fastapi_unhandled_exception(servers: dict[str, AppServer]) -> None:
    doc = record(servers["fastapi"], lambda url: request(url, "GET", "/fail"))
    (call,) = calls(doc, "http_server_request")
    ret = return_of(doc, call)
    assert ret["http_server_response"]["status_code"] == 500
    assert "exceptions" not in ret
    assert _function_exceptions(doc)[0]["class"] == "builtins.ValueError"


def test_django_recording(
    servers: dict[str, AppServer], stub_url: str, validate: Callable, tmp_path: Path
) -> None:
    def drive(url: str) -> None:
        created = request(url, "POST", "/notes/", {"title": "e2e", "tag": "work"})
        assert created.status == 201
        assert request(url, "GET", f"/notes/{created.json()['id']}/").status == 200
        assert request(url, "GET", "/tags/work/").status == 200
        assert request(url, "GET", "/weather/?city=Oslo").status == 200

    doc = record(servers["django"], drive)
    check_common(doc, "notes", "django")
    assert routes(doc) == [
        ("POST", "/notes/", 201),
        ("GET", "/notes/{note_id}/", 200),
        ("GET", "/tags/{slug}/", 200),
        ("GET", "/weather/", 200),
    ]
    sql = [c["sql_query"] for c in calls(doc, "sql_query")]
    inserts = [q for q in sql if q["sql"].startswith("INSERT INTO")]
    assert len(inserts) == 1 and inserts[0]["database_type"] == "sqlite"
    (client,) = calls(doc, "http_client_request")
    assert client["http_client_request"]["url"] == f"{stub_url}/weather"
    assert any("created note" in m for m in log_messages(doc))
    validate(doc, tmp_path / "django.trace.json")


def test_django_unhandled_exception(servers: dict[str, AppServer]) -> None:
    doc = record(servers["django"], lambda url: request(url, "GET", "/crash/"))
    (call,) = calls(doc, "http_server_request")
    ret = return_of(doc, call)
    assert ret["http_server_response"]["status_code"] == 500
    assert "exceptions" not in ret
    assert _function_exceptions(doc)[0]["class"] == "builtins.KeyError"


@pytest.mark.parametrize("app", ["plain_wsgi", "plain_asgi"])
def test_plain_apps_recording(
    servers: dict[str, AppServer], app: str, validate: Callable, tmp_path: Path
) -> None:
    doc = record(servers[app], lambda url: request(url, "GET", "/hello/world?x=1"))
    check_common(doc, "plain", None)
    (call,) = calls(doc, "http_server_request")
    assert call["http_server_request"]["path_info"] == "/hello/world"
    assert [(p["name"], p["value"]) for p in call["message"]] == [("x", "'1'")]
    assert return_of(doc, call)["http_server_response"]["status_code"] == 200
    if app == "plain_wsgi":
        assert [c["sql_query"]["sql"] for c in calls(doc, "sql_query")] == [
            "CREATE TABLE hits (n INTEGER)",
            "INSERT INTO hits VALUES (1)",
            "SELECT COUNT(*) FROM hits",
        ]
    validate(doc, tmp_path / f"{app}.trace.json")


def test_recording_holds_every_thread(servers: dict[str, AppServer]) -> None:
    """Requests served concurrently on different server threads all land in the recording."""
    import threading

    def drive(url: str) -> None:
        threads = [
            threading.Thread(target=request, args=(url, "GET", f"/products/{i}")) for i in (1, 2, 3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)

    doc = record(servers["shop"], drive)
    paths = sorted(c["http_server_request"]["path_info"] for c in calls(doc, "http_server_request"))
    assert paths == ["/products/1", "/products/2", "/products/3"]
    assert len({c["thread_id"] for c in calls(doc, "http_server_request")}) == 3


@pytest.fixture
def per_request_shop(e2e_tmp: Path, stub_url: str) -> Iterator[tuple[AppServer, Path]]:
    (e2e_tmp / "per_request").mkdir(exist_ok=True)
    server = start_app("shop", e2e_tmp / "per_request", stub_url, TRACETOOL_RECORD_REQUESTS="true")
    try:
        yield server, e2e_tmp / "per_request" / "shop" / "trace" / "requests"
    finally:
        server.stop()


def test_per_request_recording(
    per_request_shop: tuple[AppServer, Path], validate: Callable, tmp_path: Path
) -> None:
    server, folder = per_request_shop
    assert request(server.url, "GET", "/products/3").status == 200
    assert request(server.url, "POST", "/orders", {"product_id": 1}).status == 201
    deadline = time.monotonic() + 15
    files: list[Path] = []
    while time.monotonic() < deadline:
        files = sorted(folder.glob("*.trace.json")) if folder.is_dir() else []
        if len(files) >= 2:
            break
        time.sleep(0.05)
    assert len(files) == 2, files
    docs = [orjson.loads(f.read_bytes()) for f in files]
    names = sorted(d["metadata"]["name"] for d in docs)
    assert names == ["GET /products/{product_id}", "POST /orders"]
    for doc, path in zip(docs, files):
        assert doc["metadata"]["recorder"] == {"name": "requests", "type": "requests"}
        assert "flask" in [f["name"] for f in doc["metadata"]["frameworks"]]
        assert doc["metadata"]["language"]["name"] == "python"
        assert "git" in doc["metadata"]
        assert len(calls(doc, "http_server_request")) == 1
        assert calls(doc, "sql_query")
        validate(doc, tmp_path / path.name)
    # the /_trace/record polls of the fixture made no files
    assert all("_trace" not in f.name for f in files)
