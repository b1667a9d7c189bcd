"""Django (the notes example, in-process): WSGI handler, ASGI handler and test client are hooked;
route templates from the resolver (`path()` and `re_path()`), ORM statements as `sql_query`
events (once each), an unhandled view exception recorded with the 500."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.agent_integrations.conftest import Recording
from tests.agent_integrations.test_asgi import asgi_request
from tests.agent_integrations.test_wsgi import run_wsgi

pytest.importorskip("django")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "django_app"


@pytest.fixture(scope="module")
def django_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    os.environ["NOTES_DATABASE"] = str(tmp_path_factory.mktemp("notes") / "notes.db")
    os.environ["DJANGO_SETTINGS_MODULE"] = "notes.settings"
    sys.path.insert(0, str(EXAMPLE))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", run_syncdb=True, verbosity=0)
    logging.getLogger("notes").setLevel(logging.INFO)
    yield
    sys.path.remove(str(EXAMPLE))


def server_call(recording: Recording) -> dict[str, Any]:
    (call,) = recording.calls("http_server_request")
    return call


def test_wsgi_handler_records_route_sql_and_body(django_app: None, recording: Recording) -> None:
    from django.core.handlers.wsgi import WSGIHandler

    body = orjson.dumps({"title": "first", "tag": "work"})
    status, _, data = run_wsgi(WSGIHandler(), "POST", "/notes/", body, "application/json")
    assert status.startswith("201")
    note = orjson.loads(data)
    call = server_call(recording)
    assert call["http_server_request"]["normalized_path_info"] == "/notes/"
    assert {p["name"] for p in call["message"]} == {"title", "tag"}
    sqls = recording.calls("sql_query")
    inserts = [c for c in sqls if c["sql_query"]["sql"].startswith("INSERT INTO")]
    assert len(inserts) == 1  # recorded by the ORM hook, not again by sqlite3
    assert inserts[0]["sql_query"]["database_type"] == "sqlite"
    logs = [c for c in recording.calls("defined_class") if c["defined_class"] == "logging.Logger"]
    assert f"created note {note['id']}" in logs[0]["parameters"][0]["value"]


def test_test_client_path_and_regex_routes(django_app: None, recording: Recording) -> None:
    from django.test import Client

    client = Client()
    assert client.get("/notes/1/").status_code in (200, 404)
    assert client.get("/tags/work/").status_code == 200
    routes = [
        c["http_server_request"]["normalized_path_info"]
        for c in recording.calls("http_server_request")
    ]
    assert routes == ["/notes/{note_id}/", "/tags/{slug}/"]


def test_view_exception_is_recorded_with_the_500(django_app: None, recording: Recording) -> None:
    from django.test import Client

    client = Client(raise_request_exception=False)
    assert client.get("/crash/").status_code == 500
    ret = recording.return_of(server_call(recording))
    assert ret["http_server_response"]["status_code"] == 500
    assert "exceptions" not in ret  # AppMap's schema: exceptions on function returns only


def test_asgi_handler(django_app: None, recording: Recording) -> None:
    from django.core.handlers.asgi import ASGIHandler

    status, headers, _body = asgi_request(ASGIHandler(), "GET", "/tags/misc/")
    assert status == 200 and headers["Content-Type"] == "application/json"
    call = server_call(recording)
    assert call["http_server_request"]["normalized_path_info"] == "/tags/{slug}/"
    assert recording.return_of(call)["http_server_response"]["status_code"] == 200


def test_remote_endpoints_in_django(django_app: None) -> None:
    from django.core.handlers.wsgi import WSGIHandler

    app = WSGIHandler()
    assert run_wsgi(app, "POST", "/_trace/record")[0].startswith("200")
    run_wsgi(app, "GET", "/tags/work/")
    status, headers, body = run_wsgi(app, "DELETE", "/_trace/record")
    assert status.startswith("200") and headers["Content-Type"] == "application/json"
    events = orjson.loads(body)["events"]
    assert any("sql_query" in e for e in events)
    assert run_wsgi(app, "DELETE", "/_trace/record")[0].startswith("404")
