"""Fixtures for the editor tests: a real recorded project and one real daemon serving it.

`editor_project` (once per session) is the language-server test project (the real agent records
`shop/store.py` in two recordings: an N+1 loop, an exception) plus two pytest-style recordings
with HTTP requests, one of a failed test. `daemon` is `tracetool rpc -d <project>` as a real
process on 127.0.0.1 (HOME in the temp dir), stopped at the end of the session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import DaemonProcess, daemon_env, poll, recording
from tests.lsp.conftest import SCRIPT, Project, make_project


def test_recording(name: str, location: str, **kwargs: Any) -> dict[str, Any]:
    doc = recording(name, **kwargs)
    doc["metadata"]["source_location"] = location
    return doc


@pytest.fixture(scope="session")
def editor_project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    project = make_project(tmp_path_factory.mktemp("editor"))
    (project.root / "run.py").write_text(SCRIPT)
    project.run("run.py", TRACETOOL="true")
    pytest_dir = project.root / "tmp" / "trace" / "pytest"
    pytest_dir.mkdir(parents=True)
    docs = {
        "orders_fail": test_recording(
            "order is refused",
            "tests/test_orders.py:12",
            method="POST",
            path="/orders",
            route="/orders",
            status=500,
            test_status="failed",
        ),
        "user_ok": test_recording("shows a user", "tests/test_users.py:5"),
    }
    for stem, doc in docs.items():
        (pytest_dir / f"{stem}.trace.json").write_text(json.dumps(doc))
    return project


@pytest.fixture(scope="session")
def daemon(editor_project: Project) -> Iterator[DaemonProcess]:
    env = daemon_env(editor_project.home)
    proc = DaemonProcess(["rpc", "-d", str(editor_project.root)], editor_project.root, env)
    try:
        proc.read_ready()
        poll(lambda: proc.call("index.status")["state"] == "ready")
        yield proc
    finally:
        proc.stop()


def record_example_shop(root: Path, home: Path) -> Path:
    """examples/shop copied to `root` with its tests recorded by the pytest plugin (13
    recordings under tmp/trace/pytest) and indexed, HOME at `home`. Returns the copy."""
    import os
    import shutil
    import subprocess
    import sys

    from tests.conftest import ROOT

    shutil.copytree(
        ROOT / "examples" / "shop", root, ignore=shutil.ignore_patterns("tmp", "__pycache__")
    )
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETOOL")}
    env.update(HOME=str(home), TRACETOOL="true", PYTHONDONTWRITEBYTECODE="1")
    for args in (
        ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "tests"],
        ["-m", "tracetool", "index"],
    ):
        done = subprocess.run(
            [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return root
