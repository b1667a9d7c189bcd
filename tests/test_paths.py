"""tracetool.paths: per-trace_dir data directory, query.db and daemon discovery file."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracetool import paths


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    return home


def test_data_dir_is_sha256_of_resolved_trace_dir(home: Path, tmp_path: Path) -> None:
    trace_dir = tmp_path / "proj" / "tmp" / "trace"
    expected = hashlib.sha256(str(trace_dir.resolve()).encode("utf-8")).hexdigest()[:16]
    assert paths.trace_dir_key(trace_dir) == expected
    assert paths.data_dir_for(trace_dir) == home / ".trace" / "data" / expected
    assert paths.query_db_path(trace_dir) == home / ".trace" / "data" / expected / "query.db"
    assert paths.discovery_file(trace_dir).name == "daemon.json"


def test_relative_and_absolute_spellings_share_one_directory(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a")
    assert paths.data_dir_for("b") == paths.data_dir_for(tmp_path / "a" / "b")
    assert paths.data_dir_for("b/../b") == paths.data_dir_for(tmp_path / "a" / "b")
    assert paths.data_dir_for("b") != paths.data_dir_for(tmp_path / "a")


def _announce(trace_dir: Path, **data: object) -> Path:
    file = paths.discovery_file(trace_dir)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(data), encoding="utf-8")
    return file


def test_read_discovery_of_a_live_daemon(home: Path, tmp_path: Path) -> None:
    file = _announce(tmp_path, pid=os.getpid(), port=4321, version="0.1.0")
    info = paths.read_discovery(tmp_path)
    assert info == paths.DaemonInfo(pid=os.getpid(), port=4321, version="0.1.0", path=file)


def test_read_discovery_ignores_missing_malformed_and_stale_files(
    home: Path, tmp_path: Path
) -> None:
    assert paths.read_discovery(tmp_path) is None
    paths.discovery_file(tmp_path).parent.mkdir(parents=True)
    paths.discovery_file(tmp_path).write_text("{not json", encoding="utf-8")
    assert paths.read_discovery(tmp_path) is None
    _announce(tmp_path, pid="12", port=1, version="x")
    assert paths.read_discovery(tmp_path) is None
    _announce(tmp_path, pid=os.getpid(), port=70000, version="x")
    assert paths.read_discovery(tmp_path) is None
    # a pid that surely exited: a child we waited for
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    _announce(tmp_path, pid=int(done.stdout), port=4321, version="x")
    assert paths.read_discovery(tmp_path) is None


def test_pid_alive() -> None:
    assert paths.pid_alive(os.getpid())
    assert not paths.pid_alive(0)
    assert not paths.pid_alive(-5)
