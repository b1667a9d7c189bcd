"""Projects of the language server: trace.yml discovery, settings, index stamps (no server)."""

from __future__ import annotations

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


def test_missing_index_and_stamp(tree: Path) -> None:
    project = Projects().for_file(tree / "app" / "pkg" / "mod.py")
    assert project is not None
    assert project.db() is None
    assert project.missing is not None and "run `tracetool index`" in project.missing
    assert project.functions(tree / "app" / "pkg" / "mod.py") == []
    assert project.poll() is False  # nothing changed since db() looked
    project.query_db.parent.mkdir(parents=True)
    project.query_db.write_bytes(b"not a database")
    # a change counts once it has settled: the next poll that sees the same state
    assert project.poll() is False
    assert project.poll() is True
    assert project.poll() is False
    assert project.db() is None
    assert project.missing is not None and "unreadable query database" in project.missing


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


def test_poll_without_settling(tree: Path) -> None:
    project = Projects().for_file(tree / "app" / "pkg" / "mod.py")
    assert project is not None
    project.db()
    project.query_db.parent.mkdir(parents=True)
    project.query_db.write_bytes(b"x")
    assert project.poll(settle=False) is True
    assert project.poll(settle=False) is False
