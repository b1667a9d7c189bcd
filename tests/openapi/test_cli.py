"""`tracetool openapi` on the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest
import yaml
from click.testing import CliRunner

from tests.conftest import ROOT
from tests.openapi.conftest import ApiRecorder, assert_valid
from tracetool.cli import cli


@pytest.fixture
def project(recorder: ApiRecorder, write: Callable[..., Path], tmp_path: Path) -> Path:
    recorder.exchange(
        "GET", "/users/7", template="/users/:id", headers={"Authorization": "Bearer t"}
    )
    recorder.exchange("GET", "bad-path")
    write(recorder, "users", tmp_path / "tmp" / "trace")
    return tmp_path


def test_writes_stdout_with_default_trace_dir(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRACETOOL_TRACE_DIR", raising=False)
    monkeypatch.delenv("TRACETOOL_CONFIG", raising=False)
    monkeypatch.chdir(project)
    result = CliRunner().invoke(cli, ["openapi"])
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(result.stdout)
    assert_valid(doc)
    assert doc["paths"]["/users/{id}"]["get"]["security"] == [{"bearer": []}]
    assert "users.trace.json: skipped 1 HTTP request" in result.stderr


def test_output_file_title_version_and_trace_yml(project: Path) -> None:
    (project / "trace.yml").write_text("name: Shop\ntrace_dir: tmp/trace\n")
    out = project / "out" / "openapi.yml"
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("TRACETOOL_TRACE_DIR", None)
    env.pop("TRACETOOL_CONFIG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "tracetool", "openapi", "-o", str(out), "--openapi-version", "9"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert f"Wrote {out}: 1 paths from 1 requests in 1 recordings" in proc.stderr
    doc = yaml.safe_load(out.read_text())
    assert_valid(doc)
    assert doc["info"] == {"title": "Shop", "version": "9"}  # title from trace.yml's name
    proc = subprocess.run(
        [sys.executable, "-m", "tracetool", "openapi", "--openapi-title", "Other"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
    )
    assert yaml.safe_load(proc.stdout)["info"]["title"] == "Other"


def test_template_option(project: Path) -> None:
    template = project / "t.yml"
    template.write_text("openapi: 3.0.3\ninfo: {title: T, version: '1'}\nservers: [{url: /}]\n")
    result = CliRunner().invoke(
        cli,
        [
            "openapi",
            "--trace-dir",
            str(project / "tmp" / "trace"),
            "--openapi-template",
            str(template),
        ],
    )
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(result.stdout)
    assert doc["servers"] == [{"url": "/"}] and "/users/{id}" in doc["paths"]


def test_errors_are_one_line(tmp_path: Path) -> None:
    for args, text in (
        (["--trace-dir", str(tmp_path / "nope")], "no such directory"),
        (["--trace-dir", str(tmp_path), "--openapi-template", str(tmp_path / "x.yml")], "template"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "tracetool", "openapi", *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert proc.returncode == 1
        assert proc.stderr.count("\n") == 1 and text in proc.stderr
        assert "Traceback" not in proc.stderr


def test_empty_directory_exits_zero_with_a_warning(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["openapi", "--trace-dir", str(tmp_path)])
    assert result.exit_code == 0
    assert yaml.safe_load(result.stdout)["paths"] == {}
    assert "no recordings" in result.stderr


def test_help_lists_the_spec_options() -> None:
    result = CliRunner().invoke(cli, ["openapi", "--help"])
    for option in (
        "--trace-dir",
        "-o, --output-file",
        "--openapi-template",
        "--openapi-title",
        "--openapi-version",
    ):
        assert option in result.output
