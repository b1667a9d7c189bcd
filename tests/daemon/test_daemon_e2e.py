"""The daemon as a real process: start-up line, discovery, watching, one daemon per directory,
HTTP guards, clean exit."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import DaemonProcess, daemon_env, poll, recording, write_recording
from tracetool.paths import discovery_file

pytestmark = pytest.mark.e2e

Start = Callable[..., DaemonProcess]


def ready(d: DaemonProcess, count: int | None = None) -> dict[str, Any]:
    def check() -> Any:
        status = d.call("index.status")
        if status["state"] == "ready" and (count is None or status["recordings"] == count):
            return status
        return None

    result: dict[str, Any] = poll(check)
    return result


def listed(d: DaemonProcess) -> set[str]:
    return {row["recording"] for row in d.call("appmap.list", {"limit": 1000})}


def test_startup_lines_discovery_and_clean_exit(start_daemon: Start, project: Path) -> None:
    d = start_daemon("rpc", "-d", str(project), cwd=project.parent)
    assert d.stdout_lines == [
        json.dumps({"port": d.port}),
        f"Running JSON-RPC server on port: {d.port}",
    ]
    trace = (project / "tmp" / "trace").resolve()
    info = json.loads(discovery_file(trace).read_text())
    assert info["pid"] == d.proc.pid and info["port"] == d.port and info["version"]
    status = ready(d, 3)
    assert status["traceDir"] == str(trace) and status["numProcessed"] == 3
    assert d.call("system.version")["pid"] == d.proc.pid
    assert d.stop() == 0
    assert not discovery_file(trace).exists()


def test_new_changed_renamed_and_deleted_recordings_are_seen(
    start_daemon: Start, project: Path
) -> None:
    trace = project / "tmp" / "trace"
    d = start_daemon("rpc", cwd=project)
    ready(d, 3)
    # New: queryable soon after the file is in place (no rescans: the watcher saw it).
    write_recording(
        trace / "new" / "pay.trace.json", recording("pay invoice", path="/pay", route="/pay")
    )
    poll(lambda: "new/pay.trace.json" in listed(d))
    # Written in place, without a rename (the close event settles it).
    with open(trace / "plain.trace.json", "w", encoding="utf-8") as handle:
        json.dump(recording("written in place"), handle)
    poll(lambda: "plain.trace.json" in listed(d))
    # Changed: its new name is indexed.
    write_recording(trace / "new" / "pay.trace.json", recording("pay invoice twice"))
    poll(
        lambda: (
            d.call("appmap.metadata", {"appmap": "new/pay.trace.json"})["name"]
            == "pay invoice twice"
        )
    )
    # Renamed: same content under the new name, nothing left under the old one.
    os.replace(trace / "new" / "pay.trace.json", trace / "new" / "paid.trace.json")
    poll(lambda: {"new/paid.trace.json"} <= listed(d) and "new/pay.trace.json" not in listed(d))
    assert d.call("index.status")["lastBatch"]["renamed"] == 1
    # Deleted, and a whole folder removed.
    (trace / "plain.trace.json").unlink()
    shutil.rmtree(trace / "orders")
    poll(lambda: listed(d) == {"users/show_user.trace.json", "new/paid.trace.json"})
    # Ignored: temp files of atomic writes, non-recordings, node_modules.
    (trace / "node_modules").mkdir()
    write_recording(trace / "node_modules" / "x.trace.json", recording("ignored"))
    (trace / "notes.json").write_text("{}")
    # index.files with wait is a barrier: after it, anything the watcher would index is in.
    write_recording(trace / "barrier.trace.json", recording("barrier"))
    out = d.call("index.files", {"paths": [str(trace / "barrier.trace.json")], "wait": True})
    assert out["outcomes"] in ({"barrier.trace.json": "added"}, {"barrier.trace.json": "unchanged"})
    assert "node_modules/x.trace.json" not in listed(d)


def test_a_second_daemon_for_the_same_directory_is_refused(
    start_daemon: Start, project: Path, home: Path
) -> None:
    first = start_daemon("rpc", cwd=project)
    second = start_daemon("rpc", cwd=project, ready=False)
    assert second.proc.wait(20) == 3
    assert second.proc.stderr is not None
    err = second.proc.stderr.read().decode()
    assert f"already serves {(project / 'tmp' / 'trace').resolve()}" in err
    assert f"pid {first.proc.pid}, JSON-RPC on 127.0.0.1:{first.port}" in err
    assert len(err.strip().splitlines()) == 1
    # index --watch is the same daemon: refused too.
    watcher = start_daemon("index", "--watch", cwd=project, ready=False)
    assert watcher.proc.wait(20) == 3
    # A daemon killed without cleaning up leaves a stale discovery file: the next one replaces it.
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(20)
    trace = (project / "tmp" / "trace").resolve()
    assert json.loads(discovery_file(trace).read_text())["pid"] == first.proc.pid
    third = start_daemon("rpc", cwd=project)
    assert json.loads(discovery_file(trace).read_text())["pid"] == third.proc.pid


def test_http_guards(start_daemon: Start, project: Path) -> None:
    d = start_daemon("rpc", cwd=project)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "system.version"}).encode()
    assert d.post(body)[0] == 200
    status, raw = d.post(body, {"Host": "evil.example:80"})
    assert status == 403 and "'evil.example' is not loopback" in json.loads(raw)["error"]
    assert d.post(body, {"Origin": "http://evil.example"})[0] == 403
    assert d.post(body, {"Origin": f"http://localhost:{d.port}"})[0] == 200
    # Refused from the headers alone: the body is never read.
    with socket.create_connection(("127.0.0.1", d.port), timeout=20) as sock:
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 8388609\r\n\r\n{"
        )
        answer = sock.makefile("rb").read()
    assert answer.startswith(b"HTTP/1.1 413 ") and b"request body over 8388608 bytes" in answer
    status, raw = d.post(b"[" + b" " * (1024 * 1024) + b"]")  # big but allowed: an empty batch
    assert status == 200 and json.loads(raw)["error"]["code"] == -32600
    assert d.post(json.dumps({"jsonrpc": "2.0", "method": "system.version"}).encode()) == (204, b"")
    assert d.rpc("no.such")["error"]["code"] == -32601
    # Batches are capped: 10,000 calls are one error naming the limit; 100 calls all run.
    calls = [{"jsonrpc": "2.0", "id": i, "method": "system.listMethods"} for i in range(10_000)]
    status, raw = d.post(json.dumps(calls).encode())
    assert status == 200
    assert json.loads(raw)["error"] == {
        "code": -32600,
        "message": "Invalid request",
        "data": "batch of 10000 calls; at most 100 per request",
    }
    status, raw = d.post(json.dumps(calls[:100]).encode())
    assert status == 200 and len(json.loads(raw)) == 100


def test_index_watch_without_and_with_a_port(
    start_daemon: Start, project: Path, home: Path
) -> None:
    trace = project / "tmp" / "trace"
    env = daemon_env(home)
    watcher = start_daemon("index", "--watch", cwd=project, ready=False)
    info_file = discovery_file(trace.resolve())
    poll(lambda: info_file.exists() and json.loads(info_file.read_text())["port"] == 0)
    write_recording(trace / "later.trace.json", recording("recorded later"))

    def in_index() -> bool:
        run = subprocess.run(
            [sys.executable, "-m", "tracetool", "rpc-client", "appmap.list"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
        )
        return run.returncode == 0 and "later.trace.json" in run.stdout

    poll(in_index)
    assert watcher.stop() == 0
    assert not info_file.exists()
    served = start_daemon("index", "-p", "0", cwd=project)
    assert served.stdout_lines[1] == f"Running JSON-RPC server on port: {served.port}"
    assert ready(served, 4)["numProcessed"] == 0  # nothing changed since the last run


def test_folders_moved_in_renamed_and_moved_out(
    start_daemon: Start, project: Path, tmp_path: Path
) -> None:
    trace = project / "tmp" / "trace"
    outside = tmp_path / "outside"
    write_recording(outside / "batch" / "a.trace.json", recording("batch a"))
    write_recording(outside / "batch" / "deep" / "b.trace.json", recording("batch b"))
    d = start_daemon("rpc", cwd=project)
    ready(d, 3)
    os.rename(outside / "batch", trace / "batch")  # a folder moved in: its files are new
    poll(lambda: {"batch/a.trace.json", "batch/deep/b.trace.json"} <= listed(d))
    os.rename(trace / "batch", trace / "renamed")  # renamed inside the tree
    poll(
        lambda: (
            {"renamed/a.trace.json", "renamed/deep/b.trace.json"} <= listed(d)
            and not any(r.startswith("batch/") for r in listed(d))
        )
    )
    os.rename(trace / "renamed", outside / "back")  # moved out: forgotten
    poll(lambda: not any(r.startswith("renamed/") for r in listed(d)))
    assert len(listed(d)) == 3


def test_the_pytest_plugin_notification_reaches_the_daemon(
    start_daemon: Start, project: Path, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    from pytest_tracetool.notify import notify_daemon

    monkeypatch.setenv("HOME", str(home))
    trace = project / "tmp" / "trace"
    d = start_daemon("rpc", cwd=project)
    ready(d, 3)
    path = write_recording(trace / "from_plugin.trace.json", recording("from the plugin"))
    assert notify_daemon(trace, [path]) is True  # the plugin's own client, unchanged
    poll(lambda: "from_plugin.trace.json" in listed(d))
