"""Fixtures for archive/restore/compare tests: a git project in tmp_path, recordings made with
DocBuilder, and a CLI runner that goes through tracetool's real error path (`main`)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from tests.conftest import CORPUS, DocBuilder
from tracetool.cli import main

GOLDEN_A = CORPUS / "packages/cli/tests/unit/fixtures/compare/.appmap/change-report/all-succeeded"
GOLDEN_REPORT_MD = CORPUS / "packages/cli/tests/unit/compareReport/expectedReport.md.txt"


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str


def run(*args: str) -> Outcome:
    """Run `tracetool <args>` in-process through `tracetool.cli.main` (one-line errors, exit
    codes) with captured output."""
    runner = CliRunner()
    code = 0
    with runner.isolation() as streams:
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return Outcome(code, streams[0].getvalue().decode(), streams[1].getvalue().decode())


def ok(*args: str) -> Outcome:
    result = run(*args)
    assert result.code == 0, f"tracetool {' '.join(args)} failed:\n{result.stderr}"
    return result


def recording(
    name: str,
    *,
    route: str = "/users/{id}",
    path: str = "/users/1",
    status_code: int = 200,
    queries: tuple[str, ...] = ('SELECT * FROM "users" WHERE "id" = 1',),
    repeat: int = 1,
    helper: bool = False,
    test_status: str = "succeeded",
    failure: str | None = None,
) -> dict[str, Any]:
    """One pytest-style test recording: an HTTP request, a view, its SQL (repeated `repeat`
    times, so N+1 growth can be made), optionally a helper function."""
    b = DocBuilder()
    b.metadata = {
        "name": name,
        "client": {"name": "tests"},
        "language": {"name": "python", "version": "3.11"},
        "recorder": {"name": "pytest", "type": "tests"},
        "source_location": "tests/test_app.py:3",
        "test_status": test_status,
    }
    if failure:
        b.metadata["test_failure"] = {"message": failure, "location": "tests/test_app.py:4"}
    functions = [
        {"name": "show", "type": "function", "location": "app/views.py:2", "static": False}
    ]
    if helper:
        functions.append(
            {"name": "helper", "type": "function", "location": "app/views.py:5", "static": False}
        )
    b.class_map = [
        {
            "name": "app",
            "type": "package",
            "children": [{"name": "views", "type": "class", "children": functions}],
        }
    ]
    request = b.call(
        http_server_request={
            "request_method": "GET",
            "path_info": path,
            "normalized_path_info": route,
        }
    )
    view = b.function("app.views", "show", "app/views.py", 2)
    for _ in range(repeat):
        for sql in queries:
            q = b.call(sql_query={"database_type": "sqlite", "sql": sql})
            b.ret(q)
    if helper:
        h = b.function("app.views", "helper", "app/views.py", 5)
        b.ret(h, return_value={"class": "builtins.str", "value": "'x'"})
    b.ret(view, return_value={"class": "builtins.dict", "value": "{}"})
    b.ret(
        request,
        http_server_response={"status_code": status_code, "mime_type": "application/json"},
    )
    return b.doc()


class Project:
    """A git repository with trace.yml (trace_dir tmp/trace) and app sources."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.trace_dir = root / "tmp" / "trace"
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        (root / "trace.yml").write_text("name: shop\ntrace_dir: tmp/trace\npackages:\n  - app\n")
        (root / ".gitignore").write_text("tmp/\n.trace/\n")
        (root / "app").mkdir()
        (root / "tests").mkdir()
        self.write_source(1)
        (root / "tests" / "test_app.py").write_text(
            "def test_show(client):\n    r = client.get('/users/1')\n"
            "    assert r.status_code == 200\n    assert r.json() == {}\n"
        )

    def git(self, *args: str) -> str:
        out = subprocess.run(
            ["git", *args], cwd=self.root, check=True, capture_output=True, text=True
        )
        return out.stdout.strip()

    def write_source(self, version: int) -> None:
        body = "def show(request):\n    return {}\n\n\ndef helper():\n    return 'x'\n"
        if version > 1:
            body += f"\n\n# version {version}\n"
        (self.root / "app" / "views.py").write_text(body)

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def record(self, docs: dict[str, dict[str, Any]], *, clear: bool = True) -> None:
        """Replace (or update) trace_dir with these recordings, keyed by relpath."""
        if clear and self.trace_dir.exists():
            shutil.rmtree(self.trace_dir)
        for rel, doc in docs.items():
            target = self.trace_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(orjson.dumps(doc))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for key, value in (
        ("GIT_AUTHOR_NAME", "Test"),
        ("GIT_AUTHOR_EMAIL", "test@example.com"),
        ("GIT_COMMITTER_NAME", "Test"),
        ("GIT_COMMITTER_EMAIL", "test@example.com"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
    ):
        monkeypatch.setenv(key, value)
    for key in ("TRACETOOL_TRACE_DIR", "TRACETOOL_CONFIG", "HOSTING_TOKEN", "HOSTING_API_URL"):
        monkeypatch.delenv(key, raising=False)
    proj = Project(tmp_path / "shop")
    monkeypatch.chdir(proj.root)
    return proj


@pytest.fixture
def golden_a() -> Path:
    if not GOLDEN_A.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return GOLDEN_A


def copy_tree(source: Path, target: Path) -> None:
    """Copy corpus data into tmp (the corpus is read-only), making the copy writable."""
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
