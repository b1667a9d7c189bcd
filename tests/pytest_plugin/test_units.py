"""In-process unit tests of the plugin's parts: the /_trace/record client against the fake app's
state table, outcome classification, file keys, the daemon client."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_tracetool import plugin, remote, testmeta
from pytest_tracetool.notify import notify_daemon
from pytest_tracetool.testmeta import PhaseResult, classify, file_key
from tests.pytest_plugin.helpers import FakeApp, FakeDaemon
from tracetool import paths
from tracetool.agent.config import TRUTHY


def test_start_and_stop_follow_the_spec_state_table(fake_app: FakeApp) -> None:
    client = remote.RemoteRecording(fake_app.url + "/")
    assert client.url == fake_app.url + "/_trace/record"
    assert client.start() == remote.StartResult(True)
    busy = client.start()
    assert not busy.started and busy.problem is not None and busy.problem.kind == "busy"
    stopped = client.stop()
    assert stopped.problem is None and stopped.document is not None
    assert stopped.document["metadata"]["app"] == "fakeapp"
    gone = client.stop()
    assert gone.document is None and gone.problem is not None
    assert gone.problem.kind == "no-session"
    assert "404" in gone.problem.message and fake_app.url in gone.problem.message


def test_a_body_that_is_not_a_trace_document_is_a_problem(
    fake_app: FakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FakeApp, "_document", lambda self: ["not", "a", "document"])
    client = remote.RemoteRecording(fake_app.url)
    assert client.start().started
    result = client.stop()
    assert result.document is None and result.problem is not None
    assert result.problem.kind == "bad-response"


def test_unreachable_app() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = remote.RemoteRecording(f"http://127.0.0.1:{port}")
    result = client.start()
    assert not result.started and result.problem is not None
    assert result.problem.kind == "unreachable"
    assert client.stop().problem == remote.Problem(
        "unreachable", result.problem.message.replace("POST", "DELETE")
    )


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def test_an_app_that_does_not_answer_times_out_and_is_given_up(
    silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_tracetool.session import RemoteBackend

    monkeypatch.setattr(remote, "START_TIMEOUT", 0.2)
    backend = RemoteBackend(f"http://127.0.0.1:{silent_port}")
    info = testmeta.TestInfo("t.py::test", "t.py::test", "test", "t.py:1")
    token, problem = backend.start(info)
    assert token is None and problem is not None and problem.kind == "timeout"
    # later tests do not wait for it again, and the problem is not repeated
    assert backend.start(info) == (None, None)
    assert backend.retry_start(info) == (None, None)


def _phases(*specs: tuple[str, str]) -> list[PhaseResult]:
    return [PhaseResult(when, outcome) for when, outcome in specs]


@pytest.mark.parametrize(
    ("phases", "label", "status"),
    [
        (
            _phases(("setup", "passed"), ("call", "passed"), ("teardown", "passed")),
            "passed",
            "succeeded",
        ),
        (
            _phases(("setup", "passed"), ("call", "failed"), ("teardown", "passed")),
            "failed",
            "failed",
        ),
        (_phases(("setup", "failed"), ("teardown", "passed")), "error", "failed"),
        (
            _phases(("setup", "passed"), ("call", "passed"), ("teardown", "failed")),
            "error",
            "failed",
        ),
        (
            _phases(("setup", "passed"), ("call", "failed"), ("teardown", "failed")),
            "failed",
            "failed",
        ),
        (_phases(("setup", "skipped"), ("teardown", "passed")), "skipped", "succeeded"),
        (
            _phases(("setup", "passed"), ("call", "skipped"), ("teardown", "passed")),
            "skipped",
            "succeeded",
        ),
        (
            [PhaseResult("setup", "passed"), PhaseResult("call", "skipped", wasxfail=True)],
            "xfailed",
            "succeeded",
        ),
        (
            [PhaseResult("setup", "passed"), PhaseResult("call", "passed", wasxfail=True)],
            "xpassed",
            "succeeded",
        ),
        ([PhaseResult("setup", "skipped", wasxfail=True)], "xfailed", "succeeded"),
    ],
)
def test_classify(phases: list[PhaseResult], label: str, status: str) -> None:
    outcome = classify(phases, "t.py:3")
    assert (outcome.label, outcome.status) == (label, status)
    assert (outcome.failure is not None) == (status == "failed")


def test_failure_falls_back_to_the_test_location() -> None:
    outcome = classify([PhaseResult("call", "failed", message="[XPASS(strict)] nope")], "t.py:3")
    assert outcome.failure == {"message": "[XPASS(strict)] nope", "location": "t.py:3"}


def test_file_keys_are_the_node_id_or_the_node_id_with_its_hash() -> None:
    assert file_key("tests/test_a.py::TestX::test_y") == "tests/test_a.py::TestX::test_y"
    keys = {file_key(f"t.py::test[{v}]") for v in ("a/b", "a_b", "a b", "é", "ü", "")}
    assert len(keys) == 6
    assert all(len(k.rsplit(" ", 1)[1]) == 8 for k in keys)
    assert file_key("t.py::test[x]") == file_key("t.py::test[x]")  # stable


def test_metadata_keeps_the_apps_own_entries() -> None:
    meta = {
        "labels": ["from-app", "pytest"],
        "frameworks": [{"name": "pytest", "version": "0"}, {"name": "flask", "version": "3"}],
        "test_failure": {"message": "stale"},
        "app": "shop",
    }
    info = testmeta.TestInfo("t.py::test_x", "t.py::test_x", "x", "t.py:1", ("slow",))
    testmeta.apply_test_metadata(meta, info, testmeta.Outcome("passed", "succeeded"), "9.9")
    assert meta == {
        "name": "x",
        "labels": ["pytest", "passed", "slow", "from-app"],
        "frameworks": [{"name": "pytest", "version": "9.9"}, {"name": "flask", "version": "3"}],
        "test_status": "succeeded",
        "source_location": "t.py:1",
        "recorder": {"name": "pytest", "type": "tests"},
        "app": "shop",
    }


def test_the_plugin_reads_switches_like_the_agent() -> None:
    assert plugin.TRUTHY == TRUTHY


def test_notify_without_daemon_or_with_a_dead_port_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_daemon: FakeDaemon, silent_port: int
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    trace_dir = tmp_path / "trace"
    recording = trace_dir / "pytest" / "a.trace.json"
    assert notify_daemon(trace_dir, [recording]) is False  # no discovery file
    file = paths.discovery_file(trace_dir)
    file.parent.mkdir(parents=True)
    file.write_text(f'{{"pid": {os.getpid()}, "port": {silent_port}, "version": "x"}}')
    assert notify_daemon(trace_dir, [recording]) is False  # never answers: gives up (0.5 s)
    file.write_text(f'{{"pid": {os.getpid()}, "port": {fake_daemon.port}, "version": "x"}}')
    assert notify_daemon(trace_dir, []) is False
    assert fake_daemon.requests == []
    assert notify_daemon(trace_dir, [recording]) is True
    assert fake_daemon.requests[0]["params"] == {"paths": [str(recording)]}


def test_background_saver_writes_in_order_and_reports_errors(tmp_path: Path) -> None:
    from pytest_tracetool.saver import QUEUE_SIZE, BackgroundSaver

    saved: list[Path] = []
    errors: list[Exception] = []

    def save(document: object, key: str) -> Path:
        if key == "bad":
            raise OSError("disk full")
        path = tmp_path / key
        path.write_text(str(document), encoding="utf-8")
        return path

    saver = BackgroundSaver(save, saved.append, errors.append)
    keys = [f"k{i}" for i in range(QUEUE_SIZE * 3)]  # more than the queue holds: submit waits
    for i, key in enumerate(keys):
        saver.submit({"n": i}, key)
        if i == 5:
            saver.submit({}, "bad")
    saver.close()
    saver.close()  # idempotent
    assert saved == [tmp_path / k for k in keys]
    assert [str(e) for e in errors] == ["disk full"]
    assert (tmp_path / "k7").read_text(encoding="utf-8") == "{'n': 7}"
    saver.submit({"again": 1}, "later")  # usable after close: a new thread
    saver.close()
    assert saved[-1] == tmp_path / "later"


def test_failure_messages_are_stable_across_runs_and_capped() -> None:
    text = "AssertionError: assert 4 == 5\n +  where 4 = <function beta at 0x7f1afa942f20>(2)"
    assert testmeta.failure_message(longrepr=text) == (
        "AssertionError: assert 4 == 5\n +  where 4 = <function beta at 0x…>(2)"
    )
    assert testmeta.failure_message(longrepr="assert x == 0xdeadbeef") == "assert x == 0xdeadbeef"
    long = testmeta.failure_message(longrepr="x" * (testmeta.MAX_MESSAGE + 10))
    assert long.endswith("…[truncated]") and len(long) < testmeta.MAX_MESSAGE + 20
