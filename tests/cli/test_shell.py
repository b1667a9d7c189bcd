"""The CLI shell: fast help, common options, the one error path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

from tracetool import __version__
from tracetool.cli import COMMANDS, SHORT_HELP, cli
from tracetool.cli.common import common_options, run_cli
from tracetool.errors import NotFoundError

HEAVY = ("sqlglot", "pygls", "watchdog", "mcp", "rich", "jsonrpcserver", "lsprotocol", "yaml")


@pytest.mark.parametrize("option", ["--help", "--version"])
def test_help_and_version_import_no_heavy_package_and_no_command(option: str) -> None:
    code = (
        "import sys\n"
        "from tracetool.cli import main\n"
        f"try:\n    main([{option!r}])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
        "print(sorted(m for m in sys.modules if m.startswith('tracetool.cli.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *shown, heavy, cli_modules = out.stdout.strip().splitlines()
    assert ("Usage: tracetool" if option == "--help" else __version__) in "\n".join(shown)
    assert heavy == "[]"
    # tracetool.cli.common runs the CLI; no command module (nor what one imports) is loaded.
    assert cli_modules == "['tracetool.cli.common']"


def test_short_help_table_matches_each_command() -> None:
    ctx = click.Context(cli)
    assert set(SHORT_HELP) == set(COMMANDS)
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None
        assert not command.hidden and not command.deprecated, name
        assert command.get_short_help_str(10**6) == SHORT_HELP[name], name


@pytest.mark.parametrize("width", [40, 80, 100, 200])
def test_help_lists_commands_exactly_as_click_would(width: int) -> None:
    """Our Commands section equals click's own, which imports every command for its help."""
    ctx = click.Context(cli, max_content_width=width, terminal_width=width)
    ours, clicks = ctx.make_formatter(), ctx.make_formatter()
    cli.format_commands(ctx, ours)
    click.Group.format_commands(cli, ctx, clicks)
    assert ours.getvalue() == clicks.getvalue()
    assert "sequence-diagram-diff" in ours.getvalue()


def test_python_m_tracetool_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tracetool", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == __version__


def test_only_built_commands_are_listed() -> None:
    ctx = click.Context(cli)
    listed = cli.list_commands(ctx)
    assert set(listed) <= set(COMMANDS)
    for name in listed:
        assert cli.get_command(ctx, name) is not None
    assert cli.get_command(ctx, "no-such-command") is None


@click.command("boom")
@common_options
@click.option("--kind", default="trace")
def boom(kind: str) -> None:
    if kind == "trace":
        raise NotFoundError("x.trace.json: no such file")
    if kind == "bug":
        raise RuntimeError("kaboom")
    click.echo(Path.cwd().name)


@pytest.fixture
def group() -> click.Group:
    g = click.Group("tracetool")
    g.add_command(boom)
    return g


def test_tracetool_error_is_one_line(
    group: click.Group, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(group, ["boom"])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err == "tracetool: x.trace.json: no such file\n"


def test_unexpected_error_is_one_line_and_v_adds_traceback(
    group: click.Group, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracetool.cli import common

    monkeypatch.setitem(common._state, "verbose", False)
    with pytest.raises(SystemExit):
        run_cli(group, ["boom", "--kind", "bug"])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: kaboom" in err
    with pytest.raises(SystemExit):
        run_cli(group, ["boom", "-v", "--kind", "bug"])
    assert "Traceback" in capsys.readouterr().err


def test_usage_error_exit_2(group: click.Group, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(group, ["boom", "--nope"])
    assert info.value.code == 2
    assert "No such option" in capsys.readouterr().err


def test_directory_option_changes_cwd(
    group: click.Group,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "proj").mkdir()
    with pytest.raises(SystemExit) as ok:
        run_cli(group, ["boom", "-d", "proj", "--kind", "ok"])
    assert ok.value.code == 0
    assert capsys.readouterr().out == "proj\n"
    with pytest.raises(SystemExit) as info:
        run_cli(group, ["boom", "-d", "missing", "--kind", "ok"])
    assert info.value.code == 2
    assert "cannot use directory 'missing'" in capsys.readouterr().err


def test_version_on_a_command(group: click.Group, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(group, ["boom", "--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == __version__
