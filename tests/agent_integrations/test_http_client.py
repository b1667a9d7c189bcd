"""requests, httpx and urllib: one `http_client_request`/`http_client_response` pair per request,
URL without its query (query params in `message`), every header kept, failures as exceptions."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request

import pytest

from tests.agent_integrations.conftest import Recording


def _one(recording: Recording) -> tuple[dict, dict]:
    calls = recording.calls("http_client_request")
    assert len(calls) == 1, calls
    return calls[0], recording.return_of(calls[0])


def _check(call: dict, ret: dict, base: str, method: str = "GET", status: int = 200) -> None:
    request = call["http_client_request"]
    assert request["request_method"] == method
    assert request["url"] == f"{base}/hello"
    assert request["headers"]["X-Test"] == "42"
    assert {p["name"]: p["value"] for p in call["message"]}.keys() == {"a", "b"}
    response = ret["http_client_response"]
    assert response["status_code"] == status
    assert response["mime_type"] == "application/json"
    assert response["headers"]["X-Stub"] == "yes"
    assert ret["elapsed"] >= 0


def test_requests(recording: Recording, http_server: str) -> None:
    requests = pytest.importorskip("requests")
    r = requests.get(
        f"{http_server}/hello", params={"a": "1", "b": "x y"}, headers={"X-Test": "42"}
    )
    assert r.json() == {"path": "/hello?a=1&b=x+y"}
    _check(*_one(recording), http_server)


def test_requests_redirect_is_one_event(recording: Recording, http_server: str) -> None:
    requests = pytest.importorskip("requests")
    r = requests.get(f"{http_server}/redirect")
    assert r.status_code == 200 and len(r.history) == 1
    call, ret = _one(recording)
    assert call["http_client_request"]["url"] == f"{http_server}/redirect"
    assert ret["http_client_response"]["status_code"] == 200


def test_requests_connection_refused(recording: Recording) -> None:
    requests = pytest.importorskip("requests")
    with pytest.raises(requests.ConnectionError):
        requests.get("http://127.0.0.1:9/nothing", timeout=5)
    # a request without a response has no valid AppMap return: the call is taken back (the
    # exception is recorded where it leaves a recorded function)
    assert recording.calls("http_client_request") == []


def test_httpx_sync(recording: Recording, http_server: str) -> None:
    httpx = pytest.importorskip("httpx")
    with httpx.Client() as client:
        r = client.get(f"{http_server}/hello?a=1&b=2", headers={"X-Test": "42"})
    assert r.status_code == 200
    _check(*_one(recording), http_server)


def test_httpx_async(recording: Recording, http_server: str) -> None:
    httpx = pytest.importorskip("httpx")

    async def main() -> int:
        async with httpx.AsyncClient() as client:
            r = await client.get(f"{http_server}/hello?a=1&b=2", headers={"X-Test": "42"})
            return r.status_code

    assert asyncio.run(main()) == 200
    _check(*_one(recording), http_server)


def test_urllib(recording: Recording, http_server: str) -> None:
    req = urllib.request.Request(f"{http_server}/hello?a=1&b=2", headers={"X-Test": "42"})
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200
    _check(*_one(recording), http_server)


def test_urllib_http_error_status(recording: Recording, http_server: str) -> None:
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(f"{http_server}/missing", timeout=5)
    call, ret = _one(recording)
    assert call["http_client_request"]["url"] == f"{http_server}/missing"
    assert ret["http_client_response"]["status_code"] == 404
