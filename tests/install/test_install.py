"""`tracetool install` on generated projects of each kind, driven as a user would."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracetool import install
from tracetool.cli import cli
from tracetool.config import load_config


def make_project(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def git_init(root: Path) -> None:
    for args in (["init", "-q"], ["config", "user.email", "t@e.st"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=root, check=True)


def test_detects_a_pip_flask_project(tmp_path: Path) -> None:
    make_project(
        tmp_path,
        {"requirements.txt": "Flask==3.0\n", "shop/__init__.py": "", "tests/__init__.py": ""},
    )
    project = install.detect(tmp_path)
    assert project.type == "pip"
    assert project.frameworks == ("flask",)
    assert project.packages == ("shop",)
    assert project.git_remote == "(none)"


@pytest.mark.parametrize(
    ("files", "kind", "dep_file", "dep_text"),
    [
        (
            {"requirements.txt": "django\n"},
            "pip",
            "requirements-dev.txt",
            "-r requirements.txt\ntracetool-agent\n",
        ),
        (
            {"pyproject.toml": "[tool.poetry]\nname='x'\n"},
            "poetry",
            "pyproject.toml",
            '[tool.poetry.group.dev.dependencies]\ntracetool-agent = "*"\n',
        ),
        (
            {"pyproject.toml": "[project]\nname='x'\n", "uv.lock": ""},
            "uv",
            "pyproject.toml",
            '[dependency-groups]\ndev = [\n    "tracetool-agent",\n]\n',
        ),
        (
            {"Pipfile": "[packages]\nflask = '*'\n\n[dev-packages]\npytest = '*'\n"},
            "pipenv",
            "Pipfile",
            '[dev-packages]\ntracetool-agent = "*"\npytest',
        ),
    ],
)
def test_plan_adds_a_dev_dependency_per_project_type(
    tmp_path: Path, files: dict[str, str], kind: str, dep_file: str, dep_text: str
) -> None:
    make_project(tmp_path, {**files, "app/__init__.py": ""})
    project = install.detect(tmp_path)
    assert project.type == kind
    plan = install.plan(project)
    install.apply(plan)
    assert dep_text in (tmp_path / dep_file).read_text()
    cfg = load_config(tmp_path / "trace.yml")
    assert [p.path for p in cfg.packages] == ["app"]
    # a second run plans nothing: it is idempotent
    assert install.plan(install.detect(tmp_path)).edits == ()


def test_test_recording_goes_into_existing_pytest_config(tmp_path: Path) -> None:
    make_project(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname='x'\n\n[tool.pytest.ini_options]\naddopts='-q'\n",
            "app/__init__.py": "",
        },
    )
    install.apply(install.plan(install.detect(tmp_path)))
    text = (tmp_path / "pyproject.toml").read_text()
    assert '[tool.pytest.ini_options]\ntrace_record = "true"\naddopts' in text
    assert text.count("[tool.pytest.ini_options]") == 1


def test_cli_end_to_end_non_interactive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_project(
        tmp_path,
        {
            "requirements.txt": "flask\n",
            "shop/__init__.py": "def f():\n    return 1\n",
            "tests/test_shop.py": "from shop import f\n\ndef test_f():\n    assert f() == 1\n",
        },
    )
    git_init(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    result = CliRunner().invoke(cli, ["install", "--yes"])
    assert result.exit_code == 0, result.output
    for expected in (
        "Project type",
        "pip",
        str(tmp_path),
        "Git remote",
        "Python",
        "flask",
        "create trace.yml",
        "create requirements-dev.txt",
        "create pytest.ini",
        "create .gitignore",
        "the agent loads",
        "recorded tests/test_shop.py::test_f into tmp/trace/pytest/",
        "Committed:",
        "Next, record",
    ):
        assert expected in result.output
    assert (tmp_path / "pytest.ini").read_text() == "[pytest]\ntrace_record = true\n"
    log = subprocess.run(
        ["git", "show", "--stat", "--format=%s", "HEAD"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Record runtime behaviour with tracetool" in log
    for name in ("trace.yml", "requirements-dev.txt", "pytest.ini", ".gitignore"):
        assert name in log


def test_cli_without_terminal_takes_defaults_and_does_not_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(
        tmp_path,
        {
            "requirements.txt": "",
            "shop/__init__.py": "",
            "tests/test_a.py": "def test_a():\n    pass\n",
        },
    )
    git_init(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    result = CliRunner().invoke(cli, ["install"])
    assert result.exit_code == 0, result.output
    assert "to git? no (not a terminal: default)" in result.output
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    assert "trace.yml" in status


def test_validation_fails_clearly_for_unimportable_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(tmp_path, {"trace.yml": "packages: [nosuchpkg]\n", "requirements.txt": ""})
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["install", "--yes"])
    assert result.exit_code == 1
    assert "trace.yml names packages that do not import: nosuchpkg" in result.output


def test_validation_uses_the_projects_python(tmp_path: Path) -> None:
    make_project(
        tmp_path,
        {
            "trace.yml": "packages: [app]\n",
            "requirements.txt": "",
            "app/__init__.py": "",
            "test_app.py": "import app\n\ndef test_app():\n    pass\n",
        },
    )
    project = install.detect(tmp_path)
    assert project.python == sys.executable
    result = install.validate(project)
    assert result.ok, result.message
    assert "recorded test_app.py::test_app" in result.message


def test_validation_fails_loudly_when_an_integration_does_not_fit(tmp_path: Path) -> None:
    """A library the agent hooks (here a local `flask` without the Flask class the hook patches)
    makes `install`'s validation fail with the integration's one-line reason."""
    import sys

    from tracetool.install import _load_check, detect

    (tmp_path / "requirements.txt").write_text("flask\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "flask").mkdir()
    (tmp_path / "flask" / "__init__.py").write_text("__version__ = '0.0'\n")
    (tmp_path / "trace.yml").write_text("name: app\npackages:\n  - path: app\n")
    project = detect(tmp_path)
    project = dataclasses.replace(project, python=sys.executable)
    result = _load_check(project)
    assert not result.ok
    assert result.message.startswith("an agent integration does not fit this project: ")
    assert "flask" in result.message


def _stub(bin_dir: Path, name: str, version_line: str) -> None:
    """A `name` executable that prints `version_line` (what `lock_command` asks it)."""
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / name
    exe.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    exe.chmod(0o755)


@pytest.mark.skipif(sys.platform == "win32", reason="shell-script stubs")
@pytest.mark.parametrize(
    ("files", "tool", "version_line", "expected"),
    [
        ({"uv.lock": ""}, "uv", "uv 0.9.0", ["uv", "lock"]),
        ({"poetry.lock": ""}, "poetry", "Poetry (version 2.1.3)", ["poetry", "lock"]),
        # Poetry 1's `poetry lock` re-resolves every pin to the newest
        (
            {"poetry.lock": ""},
            "poetry",
            "Poetry (version 1.8.3)",
            ["poetry", "lock", "--no-update"],
        ),
        ({"Pipfile.lock": "{}"}, "pipenv", "pipenv, version 2024.0.1", ["pipenv", "lock"]),
        # a plain `pdm lock` re-resolves every pin, and locks only the groups pdm.lock records
        (
            {"pdm.lock": '[metadata]\ngroups = ["default", "dev"]\n'},
            "pdm",
            "PDM, version 2.29.4",
            ["pdm", "lock", "--update-reuse"],
        ),
        (
            {"pdm.lock": '[metadata]\ngroups = ["default", "test"]\n'},
            "pdm",
            "PDM, version 2.29.4",
            ["pdm", "lock", "--update-reuse", "-G", "test", "-G", "dev"],
        ),
        (
            {"pdm.lock": "[metadata]\ngroups = ['lint']\n"},
            "pdm",
            "PDM, version 2.29.4",
            ["pdm", "lock", "--update-reuse", "--no-default", "-G", "lint", "-G", "dev"],
        ),
    ],
)
def test_lock_command_keeps_the_projects_pins(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    tool: str,
    version_line: str,
    expected: list[str],
) -> None:
    manifest = "Pipfile" if tool == "pipenv" else "pyproject.toml"
    text = {"Pipfile": "[dev-packages]\n", "pyproject.toml": "[project]\nname = 'x'\n"}[manifest]
    if tool == "poetry":
        text = "[tool.poetry]\nname = 'x'\n"
    elif tool == "pdm":
        text += "\n[tool.pdm]\ndistribution = false\n"
    make_project(tmp_path / "p", {manifest: text, **files})
    project = install.detect(tmp_path / "p")
    assert project.type == tool
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert install.lock_command(project) is None  # the tool is not installed
    _stub(tmp_path / "bin", tool, version_line)
    assert install.lock_command(project) == expected
