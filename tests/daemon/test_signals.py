"""SIGTERM taken by a thread other than the main one still stops the daemon.

The kernel hands a process-directed signal to any thread that does not block it. CPython runs the
Python handler in the main thread only when that thread next runs bytecode; asleep in select()
without a timeout it never would, and the daemon ignored SIGTERM (seen on CI: the main thread in
`RpcHttpServer.serve`, the test harness waiting 60 s). `signal.pthread_kill` sends the signal to
a chosen thread, which makes that case certain here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.conftest import daemon_env

SCRIPT = """
import signal, sys, threading, time
from pathlib import Path

from tracetool_daemon.runner import Daemon, DaemonOptions, Target


def kill_from_another_thread():
    while not callable(signal.getsignal(signal.SIGTERM)):  # the daemon's handler is installed
        time.sleep(0.01)
    time.sleep(0.5)  # the main thread is asleep in select() by now
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)


def main():
    root = Path(sys.argv[1])
    port = None if sys.argv[2] == "none" else 0
    target = Target(root, root / "tmp" / "trace", root / "db" / "query.db")
    daemon = Daemon(DaemonOptions(targets=(target,), port=port))
    threading.Thread(target=kill_from_another_thread, daemon=True).start()
    print("returned", daemon.run(), flush=True)


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("port", ["0", "none"], ids=["serving", "watching-only"])
def test_sigterm_taken_by_another_thread_stops_the_daemon(tmp_path: Path, port: str) -> None:
    script = tmp_path / "run_daemon.py"
    script.write_text(SCRIPT)
    project = tmp_path / "proj"
    (project / "tmp" / "trace").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(project), port],
        cwd=tmp_path,
        env=daemon_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the daemon ignored SIGTERM; stderr: {err.decode(errors='replace')[-4000:]}")
    assert proc.returncode == 0, err.decode(errors="replace")[-4000:]
    assert out.decode().splitlines()[-1] == "returned 0"
    # and cleaned up: its discovery file (~/.trace/data/<sha>/daemon.json) is gone
    assert list(home.rglob("daemon.lock")), "the daemon never claimed the directory"
    assert not list(home.rglob("daemon.json"))
