"""Projects of the language server: trace.yml discovery, settings, the daemon they use."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tracetool_daemon.lsp.project import Projects, Settings


def test_settings_from_options() -> None:
    assert Settings.from_options(None) == Settings()
    assert Settings.from_options(
        {
            "queryDb": "/x/query.db",
            "traceDir": "",
            "pollInterval": 0,
            "nPlusOneThreshold": 5,
            "exceptionDiagnostics": False,
        }
    ) == Settings(query_db="/x/query.db", poll_interval=0.0, n_plus_one=5, exceptions=False)
    # wrong types fall back to the defaults
    assert Settings.from_options({"pollInterval": "2", "nPlusOneThreshold": True}) == Settings()
    assert Settings.from_options({"pollInterval": -1}).poll_interval == 0.0


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRACETOOL_TRACE_DIR", raising=False)
    monkeypatch.delenv("TRACETOOL_CONFIG", raising=False)
    (tmp_path / ".git").mkdir()  # discovery stops at a repository root
    (tmp_path / "app" / "pkg").mkdir(parents=True)
    (tmp_path / "app" / "trace.yml").write_text("name: app\ntrace_dir: recordings\n")
    (tmp_path / "lib").mkdir()
    return tmp_path


def test_projects_found_from_files(tree: Path) -> None:
    projects = Projects()
    project = projects.for_file(tree / "app" / "pkg" / "mod.py")
    assert project is not None
    assert project.root == (tree / "app").resolve()
    assert project.trace_dir == (tree / "app" / "recordings").resolve()
    assert project.query_db.name == "query.db"
    assert str(project.query_db).startswith(str(tree / "home" / ".trace" / "data"))
    assert projects.for_file(tree / "app" / "other.py") is project
    assert projects.for_file(tree / "lib" / "x.py") is None
    assert project.source_paths(tree / "app" / "pkg" / "mod.py") == (
        "pkg/mod.py",
        (tree / "app" / "pkg" / "mod.py").resolve().as_posix(),
    )


def test_daemon_started_polled_and_stopped(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No daemon serves the directory: the project starts one, sees new recordings through its
    index.status, and stops it on close."""
    from tests.daemon.conftest import recording
    from tracetool.paths import read_discovery

    monkeypatch.setenv("TRACETOOL_INDEX_WORKERS", "0")
    (tree / "app" / "recordings").mkdir()
    project = Projects().for_file(tree / "app" / "pkg" / "mod.py")
    assert project is not None
    try:
        assert project.available(), project.missing
        assert project.daemon.proc is not None  # we started it
        info = read_discovery(project.trace_dir)
        assert info is not None and info.port == project.daemon.port
        assert project.functions(tree / "app" / "pkg" / "mod.py") == []
        assert project.poll() is False
        (tree / "app" / "recordings" / "a.trace.json").write_text(json.dumps(recording("a")))
        deadline = time.monotonic() + 20
        while not project.poll():
            assert time.monotonic() < deadline, "the new recording was never indexed"
            time.sleep(0.05)
        groups = project.call("appmap.groups")["groups"]
        assert [r["name"] for g in groups for r in g["recordings"]] == ["a"]
    finally:
        project.close()
    assert project.daemon.proc is None
    assert read_discovery(project.trace_dir) is None


def test_settings_override_trace_dir_and_query_db(tree: Path) -> None:
    settings = Settings(trace_dir="elsewhere", query_db=str(tree / "q.db"))
    project = Projects(settings).for_file(tree / "app" / "pkg" / "mod.py")
    assert project is not None
    assert project.trace_dir == (tree / "app" / "elsewhere").resolve()
    assert project.query_db == tree / "q.db"


def test_bad_config_reported_once_then_forgotten(tree: Path) -> None:
    config = tree / "app" / "trace.yml"
    config.write_text("packages: 5\n")
    projects = Projects()
    assert projects.for_file(tree / "app" / "pkg" / "mod.py") is None
    [problem] = projects.take_problems()
    assert "packages" in problem
    assert projects.for_file(tree / "app" / "pkg" / "mod.py") is None
    assert projects.take_problems() == []
    config.write_text("name: fixed\n")
    projects.forget(config)
    assert projects.for_file(tree / "app" / "pkg" / "mod.py") is not None
