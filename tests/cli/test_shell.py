"""The CLI shell: fast help, common options, the one error path."""

from __future__ import annotations

import os
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
    # answered before the click group is imported: no command module, not even click
    assert cli_modules == "[]"
    assert "click" not in out.stdout.replace("Usage: tracetool", "")


def test_help_texts_are_clicks_rendering_at_every_width() -> None:
    """HELP_TEXTS (what `tracetool --help` prints without click) is click's own rendering."""
    from tracetool.cli import HELP_TEXTS, MAX_HELP_WIDTH, MIN_HELP_WIDTH, stored_help
    from tracetool.cli._group import render_help_texts

    assert Path(HELP_TEXTS).read_text(encoding="utf-8") == render_help_texts(), (
        "tracetool --help changed: run `python -m tracetool.cli._group` to store it again"
    )
    for width in range(MIN_HELP_WIDTH, MAX_HELP_WIDTH + 1):
        with click.Context(cli, info_name="tracetool", terminal_width=width) as ctx:
            assert stored_help(width) == ctx.get_help()
    assert stored_help(MIN_HELP_WIDTH - 1) is None and stored_help(MAX_HELP_WIDTH + 1) is None


@pytest.mark.parametrize("columns", ["", "0", "junk", "20", "51", "80", "99", "100", "101", "300"])
def test_help_without_click_is_clicks_help(columns: str) -> None:
    """`tracetool --help` (stored texts) prints exactly what click prints at any COLUMNS."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = columns
    fast = subprocess.run(
        [sys.executable, "-m", "tracetool", "--help"], capture_output=True, text=True, env=env
    )
    code = (
        "from tracetool.cli import cli\n"
        "from tracetool.cli.common import run_cli\n"
        "run_cli(cli, ['--help'])\n"
    )
    slow = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert (fast.returncode, fast.stderr) == (0, "") and slow.returncode == 0
    assert fast.stdout == slow.stdout and fast.stdout.startswith("Usage: tracetool [OPTIONS]")


@pytest.mark.parametrize("columns", [None, "", "0", "-3", "junk", "7", "132"])
def test_terminal_columns_is_shutils(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil as sh

    from tracetool.cli import terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == sh.get_terminal_size().columns


def test_version_and_help_survive_a_closed_pipe() -> None:
    for option in ("--version", "--help"):
        proc = subprocess.Popen(
            [sys.executable, "-m", "tracetool", option],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before anything is written
        assert proc.wait(timeout=60) == 0
        assert proc.stderr.read() == b"", option


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


def test_every_declared_command_is_listed_and_exists() -> None:
    ctx = click.Context(cli)
    listed = cli.list_commands(ctx)
    assert listed == sorted(COMMANDS)
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
