"""At session end the plugin tells a running daemon (found through its discovery file) about
the recordings it wrote; with no daemon, or a stale discovery file, nothing is sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pytest_plugin.helpers import FakeApp, FakeDaemon
from tracetool import paths

pytestmark = pytest.mark.usefixtures("clean_env")

TESTS = """
def test_one():
    pass

def test_two():
    pass
"""


def _announce(trace_dir: Path, pid: int, port: int) -> None:
    # pytester points HOME at its own directory, for this process and the subprocess alike
    assert Path.home() == Path(os.environ["HOME"])
    file = paths.discovery_file(trace_dir)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"pid": pid, "port": port, "version": "0.1.0"}), encoding="utf-8")


def test_running_daemon_is_told_about_new_recordings_once(
    pytester: pytest.Pytester, fake_app: FakeApp, fake_daemon: FakeDaemon
) -> None:
    trace_dir = pytester.path / "tmp" / "trace"
    _announce(trace_dir, os.getpid(), fake_daemon.port)
    pytester.makepyfile(test_it=TESTS)
    result = pytester.runpytest_subprocess("--trace-url", fake_app.url)
    result.assert_outcomes(passed=2)
    assert len(fake_daemon.requests) == 1
    request = fake_daemon.requests[0]
    assert request["jsonrpc"] == "2.0"
    assert request["method"] == "index.files"
    written = sorted(str(p) for p in (trace_dir / "pytest").glob("*.trace.json"))
    assert len(written) == 2
    assert sorted(request["params"]["paths"]) == written


def test_stale_discovery_file_is_ignored(
    pytester: pytest.Pytester, fake_app: FakeApp, fake_daemon: FakeDaemon
) -> None:
    exited = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    _announce(pytester.path / "tmp" / "trace", int(exited.stdout), fake_daemon.port)
    pytester.makepyfile(test_it=TESTS)
    result = pytester.runpytest_subprocess("--trace-url", fake_app.url)
    result.assert_outcomes(passed=2)
    assert fake_daemon.requests == []
