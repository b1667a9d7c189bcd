"""`tracetool rpc` / `rpc-client` / `index --watch` option handling (before any server starts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tracetool.cli import cli
from tracetool.cli.common import run_cli
from tracetool.cli.rpc import parse_ai_options, project_trace_dir, resolve_code_editor, targets_for
from tracetool.errors import UsageError


def test_ai_options_are_key_value_pairs() -> None:
    assert parse_ai_options(["model=m", "base_url=http://x/v1?a=b"]) == {
        "model": "m",
        "base_url": "http://x/v1?a=b",
    }
    with pytest.raises(UsageError, match="expected key=value"):
        parse_ai_options(["model"])


def test_code_editor_falls_back_to_the_environment() -> None:
    assert resolve_code_editor("emacs", {"TERM_PROGRAM": "vscode"}) == "emacs"
    env = {"TERM_PROGRAM": "vscode", "TERMINAL_EMULATOR": "JetBrains-JediTerm"}
    assert resolve_code_editor(None, env) == "vscode"
    assert resolve_code_editor(None, {"TRACE_CODE_EDITOR": "zed", **env}) == "zed"
    assert resolve_code_editor(None, {"TERMINAL_EMULATOR": "JetBrains-JediTerm"}) == (
        "JetBrains-JediTerm"
    )
    assert resolve_code_editor(None, {}) is None


def test_each_directory_names_its_trace_dir(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / ".git").mkdir()
    (b / ".git").mkdir()
    (a / "trace.yml").write_text("trace_dir: recordings\n")
    targets = targets_for([str(a), str(b), str(a)])
    assert [(t.directory, t.trace_dir) for t in targets] == [
        (a.resolve(), (a / "recordings").resolve()),
        (b.resolve(), (b / "tmp" / "trace").resolve()),
    ]
    assert targets[0].query_db.parent.parent == home / ".trace" / "data"
    monkeypatch.setenv("TRACETOOL_TRACE_DIR", "env/trace")
    assert project_trace_dir(b, use_env=True) == (b / "env" / "trace").resolve()
    assert project_trace_dir(b, use_env=False) == (b / "tmp" / "trace").resolve()
    with pytest.raises(UsageError, match="no such directory"):
        targets_for([str(tmp_path / "missing")])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rpc", "--ai-option", "model"], "--ai-option 'model': expected key=value"),
        (["rpc", "--ai-option", "provider=magic"], "expected openai or offline"),
        (["rpc", "--prompt", "missing.txt"], "--prompt missing.txt: cannot read"),
        (["rpc", "-p", "70000"], "70000 is not in the range 0<=x<=65535"),
        (["rpc", "-d", "nowhere"], "-d nowhere: no such directory"),
        (["rpc-client", "search", "[1, 2"], "request: not valid JSON"),
        (["rpc-client", "search", "42"], "params must be a JSON object or array"),
        (["index", "--port", "-1"], "-1 is not in the range"),
    ],
)
def test_bad_options_fail_with_one_line(
    args: list[str],
    message: str,
    tmp_path: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(cli, args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert len([line for line in err.splitlines() if line.strip()]) <= 3  # click adds usage


def test_help_lists_every_spec_option() -> None:
    out = CliRunner().invoke(cli, ["rpc", "--help"]).output
    for option in (
        "--port",
        "--directory",
        "--log-assistant",
        "--ai-option",
        "--prompt",
        "--code-editor",
        "--thread-id",
        "--trajectory-file",
        "--verbose",
        "--version",
    ):
        assert option in out
    out = CliRunner().invoke(cli, ["index", "--help"]).output
    for option in ("--watch", "--port", "--query-db", "--trace-dir", "--log-assistant"):
        assert option in out
