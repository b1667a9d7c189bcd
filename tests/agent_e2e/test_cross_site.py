"""The agent's `/_trace/record` refuses other sites (issue 19.3): a request whose Host is not the
app's own name or loopback (DNS rebinding), or whose Origin is another site (a cross-site
`fetch` from a page in the user's browser), gets 403 on every method and changes nothing; a
malformed or repeated Host/Origin is refused too. Real servers of every example app (Flask,
Django and plain WSGI; FastAPI and plain ASGI under uvicorn) on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.agent_e2e.conftest import APP_TARGETS, AppServer, Response, request, start_app

pytestmark = pytest.mark.e2e
APPS = list(APP_TARGETS)
EVIL = "evil.example"


def raw(url: str, method: str, headers: list[tuple[str, str]]) -> Response:
    """A request with exactly these headers (repeats kept, no automatic Host)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=15)
    try:
        conn.putrequest(method, "/_trace/record", skip_host=True, skip_accept_encoding=True)
        for key, value in headers:
            conn.putheader(key, value)
        conn.endheaders()
        resp = conn.getresponse()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


def enabled(url: str) -> bool:
    answer = request(url, "GET", "/_trace/record")
    assert answer.status == 200
    return bool(answer.json()["enabled"])


@pytest.mark.parametrize("app", APPS)
def test_cross_site_requests_get_403_and_change_nothing(
    servers: dict[str, AppServer], app: str
) -> None:
    url = servers[app].url
    port = urlsplit(url).port
    hostile = [
        {"Host": f"{EVIL}:{port}"},
        {"Host": EVIL},
        {"Origin": f"http://{EVIL}"},
        {"Origin": "null"},
        {"Host": f"127.0.0.1:{port}@{EVIL}"},
    ]
    for headers in hostile:
        for method in ("POST", "GET", "DELETE"):
            answer = request(url, method, "/_trace/record", headers=headers)
            assert answer.status == 403, (headers, method, answer)
            assert answer.content_type.startswith("application/json")
            assert json.loads(answer.body)["error"]
        assert not enabled(url), headers
    # The agent stays usable from loopback, a same-origin page included (the state table holds).
    own = {"Origin": f"http://127.0.0.1:{port}", "Host": f"localhost:{port}"}
    assert request(url, "POST", "/_trace/record", headers=own).status == 200
    try:
        for headers in hostile:
            assert request(url, "DELETE", "/_trace/record", headers=headers).status == 403
            assert request(url, "POST", "/_trace/record", headers=headers).status == 403
            assert enabled(url)  # the session is neither stopped nor leaked
    finally:
        stopped = request(url, "DELETE", "/_trace/record", headers=own)
    assert stopped.status == 200 and stopped.content_type.startswith("application/json")
    assert {"version", "metadata", "classMap", "events"} <= set(stopped.json())


@pytest.mark.parametrize("app", APPS)
def test_repeated_host_or_origin_is_refused(servers: dict[str, AppServer], app: str) -> None:
    url = servers[app].url
    local = f"127.0.0.1:{urlsplit(url).port}"
    for headers in (
        [("Host", local), ("Host", EVIL)],
        [("Host", local), ("Host", local)],
        [("Host", local), ("Origin", f"http://{local}"), ("Origin", f"http://{EVIL}")],
    ):
        answer = raw(url, "POST", headers)
        # uvicorn's parser may refuse a doubled Host itself (400); never a 200
        assert answer.status in (400, 403), (headers, answer)
    assert not enabled(url)
    assert raw(url, "GET", [("Host", local)]).status == 200


def test_the_apps_own_names_are_allowed(servers: dict[str, AppServer]) -> None:
    # Django's ALLOWED_HOSTS of the example lists "testserver"; the Flask app has no such list.
    django = servers["django"].url
    answer = request(django, "GET", "/_trace/record", headers={"Host": "testserver"})
    assert answer.status == 200 and answer.json() == {"enabled": False}
    shop = servers["shop"].url
    assert request(shop, "GET", "/_trace/record", headers={"Host": "testserver"}).status == 403


def test_a_custom_host_allowed_by_environment(e2e_tmp: Path, stub_url: str) -> None:
    tmp = e2e_tmp / "custom_host"
    tmp.mkdir()
    server = start_app("plain_asgi", tmp, stub_url, TRACETOOL_ALLOWED_HOSTS="myapp.test")
    try:
        own = {"Host": "myapp.test:8000", "Origin": "http://myapp.test:8000"}
        assert request(server.url, "POST", "/_trace/record", headers=own).status == 200
        assert request(server.url, "DELETE", "/_trace/record", headers=own).status == 200
        other = {"Host": "other.test"}
        assert request(server.url, "POST", "/_trace/record", headers=other).status == 403
    finally:
        server.stop()
