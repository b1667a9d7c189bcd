"""Remote mode: ``--trace-url`` / ``TRACETOOL_URL`` drive ``/_trace/record`` of a running app
(here a fake app in this process implementing the spec's state table) around each test."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from tests.pytest_plugin.helpers import FakeApp, by_name, line_of, read_recordings

pytestmark = pytest.mark.usefixtures("clean_env")

REMOTE_TESTS = """
import os
import urllib.request

import pytest

URL = os.environ["APP_URL"]
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def hit(path):
    OPENER.open(URL + path, timeout=5).read()


@pytest.fixture
def visited():
    hit("/fixture-setup")
    yield
    hit("/fixture-teardown")


def test_home(visited):
    hit("/home")


def test_cart():
    hit("/cart")
    assert 1 + 1 == 3, "cart is empty"


@pytest.mark.slow
def test_later():
    pytest.skip("not yet")


def test_restart():
    hit("/restart")
"""


def _paths(doc: dict) -> list[str]:
    return [
        e["http_server_request"]["path_info"]
        for e in doc["events"]
        if e.get("event") == "call" and "http_server_request" in e
    ]


def _project(pytester: pytest.Pytester, app: FakeApp, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("APP_URL", app.url)
    pytester.makeini("[pytest]\nmarkers =\n    slow: slow\n")
    pytester.makepyfile(test_remote_app=REMOTE_TESTS)
    return pytester.path / "tmp" / "trace" / "pytest"


def test_each_test_gets_the_apps_document_with_test_metadata(
    pytester: pytest.Pytester, fake_app: FakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _project(pytester, fake_app, monkeypatch)
    result = pytester.runpytest_subprocess("--trace-url", fake_app.url, "-p", "no:cacheprovider")
    # the test's own outcomes are untouched; test_restart's lost session is reported once
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            f"tracetool: 2 recordings from {fake_app.url} written to {out}",
            "tracetool: warning (once): DELETE */_trace/record answered 404: no recording "
            "session to stop*",
        ]
    )
    docs = by_name(read_recordings(out))
    assert set(docs) == {"home", "cart"}

    home = docs["home"]["metadata"]
    # fixture setup and teardown belong to the test's recording
    assert _paths(docs["home"]) == ["/fixture-setup", "/home", "/fixture-teardown"]
    assert home["labels"] == ["pytest", "passed", "from-app"]
    assert home["test_status"] == "succeeded"
    assert "test_failure" not in home
    assert home["recorder"] == {"name": "pytest", "type": "tests"}
    source = pytester.path / "test_remote_app.py"
    assert home["source_location"] == f"test_remote_app.py:{line_of(source, 'def test_home')}"
    assert home["frameworks"] == [
        {"name": "pytest", "version": pytest.__version__},
        {"name": "fakeweb", "version": "1.0"},
    ]
    # what the app knows about itself is kept
    assert home["app"] == "fakeapp"
    assert home["language"]["name"] == "python"

    cart = docs["cart"]["metadata"]
    assert _paths(docs["cart"]) == ["/cart"]
    assert cart["test_status"] == "failed"
    assert cart["labels"][:2] == ["pytest", "failed"]
    assert cart["test_failure"]["location"] == (
        f"test_remote_app.py:{line_of(source, 'assert 1 + 1 == 3')}"
    )
    assert "cart is empty" in cart["test_failure"]["message"]
    assert cart["test_failure"]["message"].startswith("AssertionError")

    # one POST before and one DELETE after each test that ran
    calls = [(m, s) for m, p, s in fake_app.log if p == "/_trace/record"]
    assert calls.count(("POST", 200)) == 4
    assert calls.count(("DELETE", 200)) == 3
    assert calls.count(("DELETE", 404)) == 1
    assert not fake_app.recording


def test_trace_url_from_environment_and_skipped_on_request(
    pytester: pytest.Pytester, fake_app: FakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _project(pytester, fake_app, monkeypatch)
    monkeypatch.setenv("TRACETOOL_URL", fake_app.url)
    result = pytester.runpytest_subprocess("--trace-record-skipped", "-k", "later or home")
    result.assert_outcomes(passed=1, skipped=1)
    docs = by_name(read_recordings(out))
    assert set(docs) == {"home", "later"}
    assert docs["later"]["metadata"]["labels"] == ["pytest", "skipped", "slow", "from-app"]
    assert docs["later"]["metadata"]["test_status"] == "succeeded"


def test_busy_app_is_reported_once_and_nothing_is_taken_from_its_session(
    pytester: pytest.Pytester, fake_app: FakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _project(pytester, fake_app, monkeypatch)
    fake_app.recording = True  # someone else is recording
    result = pytester.runpytest_subprocess("--trace-url", fake_app.url, "-k", "home or cart")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "tracetool: 0 recordings from * written to *",
            "tracetool: warning (2 times): POST */_trace/record answered 409: a recording "
            "session was already in progress*",
        ]
    )
    assert result.stdout.str().count("answered 409") == 1
    assert not out.exists() or not list(out.iterdir())
    # never DELETE a session we did not start: the other recorder still has it
    assert fake_app.recording
    assert not [c for c in fake_app.log if c[0] == "DELETE"]


def test_unreachable_app_is_reported_once_and_the_run_goes_on(
    pytester: pytest.Pytester, fake_app: FakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester, fake_app, monkeypatch)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    # the tests still reach the fake app; only the recording URL is dead. Under pytest-xdist
    # the workers' troubles are summed up in the controller's one line.
    result = pytester.runpytest_subprocess("--trace-url", dead, "-k", "home or cart", "-n", "2")
    result.assert_outcomes(passed=1, failed=1)
    text = result.stdout.str()
    assert len(re.findall(r"tracetool: warning", text)) == 2, text
    result.stdout.fnmatch_lines(
        [
            "tracetool: warning (once): remote recording records one session at a time: with "
            "pytest-xdist*",
            "tracetool: warning (2 times): POST */_trace/record failed: cannot connect to the app*",
        ]
    )
    assert result.ret == 1  # the failing test, nothing else


def test_app_started_by_a_fixture_is_recorded_from_the_test_body(
    pytester: pytest.Pytester, fake_app: FakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The app is not up when the test starts (the fixture "starts" it): the plugin retries the
    # POST once setup is done, so the test body is still recorded.
    monkeypatch.setenv("APP_URL", fake_app.url)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    pytester.makepyfile(
        test_live=f"""
import os, threading, urllib.request
from wsgiref.simple_server import make_server
import pytest

def app(environ, start_response):
    # a proxy to the fake app, so its state table answers
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
    req = urllib.request.Request(os.environ["APP_URL"] + environ["PATH_INFO"],
                                 method=environ["REQUEST_METHOD"])
    try:
        with opener.open(req) as r:
            status, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    start_response(f"{{status}} X", [("Content-Type", "application/json")])
    return [body]

@pytest.fixture
def live_server():
    server = make_server("127.0.0.1", {port}, app)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:{port}"
    server.shutdown()
    server.server_close()

def test_live(live_server):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
    opener.open(live_server + "/live").read()
"""
    )
    result = pytester.runpytest_subprocess("--trace-url", f"http://127.0.0.1:{port}")
    result.assert_outcomes(passed=1)
    assert "warning" not in result.stdout.str()
    docs = by_name(read_recordings(pytester.path / "tmp" / "trace" / "pytest"))
    assert _paths(docs["live"]) == ["/live"]


def test_a_recording_that_cannot_be_saved_does_not_change_outcomes(
    pytester: pytest.Pytester, fake_app: FakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(pytester, fake_app, monkeypatch)
    blocker = pytester.path / "not-a-directory"
    blocker.write_text("x", encoding="utf-8")
    result = pytester.runpytest_subprocess(
        "--trace-url", fake_app.url, "--trace-dir", str(blocker), "-k", "home or cart"
    )
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "tracetool: 0 recordings from * written to *",
            "tracetool: warning (2 times): saving the recording failed: *Error*",
        ]
    )
