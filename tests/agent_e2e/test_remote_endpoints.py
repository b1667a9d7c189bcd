"""The spec's state table for `/_trace/record`, over real HTTP, in every example app (Flask,
FastAPI, Django, plain WSGI under wsgiref, plain ASGI under uvicorn)."""

from __future__ import annotations

import threading

import pytest

from tests.agent_e2e.conftest import APP_TARGETS, AppServer, request

pytestmark = pytest.mark.e2e
APPS = list(APP_TARGETS)


@pytest.mark.parametrize("app", APPS)
def test_every_row_of_the_state_table(servers: dict[str, AppServer], app: str) -> None:
    url = servers[app].url
    # any state: GET -> 200 application/json {"enabled": false}
    status = request(url, "GET", "/_trace/record")
    assert status.status == 200
    assert status.content_type.startswith("application/json")
    assert status.json() == {"enabled": False}
    # no session: DELETE -> 404, state unchanged
    assert request(url, "DELETE", "/_trace/record").status == 404
    assert request(url, "GET", "/_trace/record").json() == {"enabled": False}
    # no session: POST -> 200, empty body; session in progress
    started = request(url, "POST", "/_trace/record")
    assert (started.status, started.body) == (200, b"")
    try:
        assert request(url, "GET", "/_trace/record").json() == {"enabled": True}
        # session in progress: POST -> 409, empty body, unchanged
        again = request(url, "POST", "/_trace/record")
        assert (again.status, again.body) == (409, b"")
        assert request(url, "GET", "/_trace/record").json() == {"enabled": True}
    finally:
        # session in progress: DELETE -> 200, application/json trace document; no session
        stopped = request(url, "DELETE", "/_trace/record")
    assert stopped.status == 200
    assert stopped.content_type.startswith("application/json")
    doc = stopped.json()
    assert {"version", "metadata", "classMap", "events"} <= set(doc)
    assert request(url, "GET", "/_trace/record").json() == {"enabled": False}
    assert request(url, "DELETE", "/_trace/record").status == 404


@pytest.mark.parametrize("app", APPS)
def test_two_concurrent_posts_exactly_one_200(servers: dict[str, AppServer], app: str) -> None:
    url = servers[app].url
    for _ in range(5):
        barrier = threading.Barrier(2)
        statuses: list[int] = []

        def post(barrier: threading.Barrier, statuses: list[int]) -> None:
            barrier.wait(timeout=10)
            statuses.append(request(url, "POST", "/_trace/record").status)

        threads = [threading.Thread(target=post, args=(barrier, statuses)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert sorted(statuses) == [200, 409]
        assert request(url, "DELETE", "/_trace/record").status == 200


@pytest.mark.parametrize("app", APPS)
def test_other_trace_paths_are_404_and_not_the_app(servers: dict[str, AppServer], app: str) -> None:
    assert request(servers[app].url, "GET", "/_trace/nothing").status == 404
