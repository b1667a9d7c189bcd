"""The `tracetool` command line: a lazy click group.

Every spec command is declared here once, by module path; a command module is imported only when
that command runs. `tracetool --help` lists the commands from SHORT_HELP, a static copy of each
command's one-line help (a test keeps it equal to the real one), so it imports no command module
at all. `tracetool --version` and `tracetool --help` answer before click is imported (`main`):
--help from HELP_TEXTS, the group's help as click renders it at every width it can choose, kept
equal to click's own rendering by a test (regenerate with `python -m tracetool.cli._group`). The
click group itself (`cli`, tracetool.cli._group) is imported on first use.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from tracetool import __version__

if TYPE_CHECKING:
    from tracetool.cli._group import LazyGroup, cli

__all__ = ["COMMANDS", "SHORT_HELP", "LazyGroup", "answer_alone", "cli", "main"]

# name -> "module:attribute"; the attribute is a click.Command.
COMMANDS: dict[str, str] = {
    "archive": "tracetool.cli.archive:command",
    "compare": "tracetool.cli.compare:command",
    "compare-report": "tracetool.cli.compare_report:command",
    "index": "tracetool.cli.index:command",
    "inspect": "tracetool.cli.inspect:command",
    "install": "tracetool.cli.install:command",
    "openapi": "tracetool.cli.openapi:command",
    "prune": "tracetool.cli.prune:command",
    "query": "tracetool.cli.query:command",
    "restore": "tracetool.cli.restore:command",
    "rpc": "tracetool.cli.rpc:command",
    "rpc-client": "tracetool.cli.rpc_client:command",
    "sanitize": "tracetool.cli.sanitize:command",
    "sequence-diagram": "tracetool.cli.sequence_diagram:command",
    "sequence-diagram-diff": "tracetool.cli.sequence_diagram_diff:command",
    "stats": "tracetool.cli.stats:command",
    "trim": "tracetool.cli.trim:command",
}

# name -> the command's short help, as `click.Command.get_short_help_str` gives it untruncated
# (the docstring's first sentence). tests/cli/test_shell.py fails when one drifts.
SHORT_HELP: dict[str, str] = {
    "archive": "Archive the recordings of trace_dir (and their analysis) for one git revision.",
    "compare": "Compare the restored recordings of two revisions; write change-report.json.",
    "compare-report": "Write report.md for a change report made by `tracetool compare`.",
    "index": "Fingerprint and index every recording in the recordings directory.",
    "inspect": "Find the events of a code object and their context (callers, SQL, requests \u2026).",
    "install": "Install and configure the recording agent in this project.",
    "openapi": "Generate an OpenAPI document from the HTTP server requests of all recordings in a"
    " directory, recursively.",
    "prune": "Remove the most repetitive calls from a recording (HTTP requests and SQL are kept).",
    "query": "Search indexed recordings (run `tracetool index` first).",
    "restore": "Restore the recordings of REV (or of its nearest archived ancestor).",
    "rpc": "Run a JSON-RPC server over the recordings (and keep them indexed).",
    "rpc-client": "Invoke one JSON-RPC FUNCTION with REQUEST params (JSON, - for stdin, @FILE).",
    "sanitize": "Replace every captured value with a token (<v1>, <uuid:v2>, ...), so that no secret"
    " or personal data remains.",
    "sequence-diagram": "Write a sequence diagram of each recording (png, plantuml or json).",
    "sequence-diagram-diff": "Compare two sequence diagrams (files, or directories of"
    " *.sequence.json).",
    "stats": "Show the largest recordings (bigger than 1024 kb) and the functions with the highest"
    " instrumentation overhead, with the total instrumentation time.",
    "trim": "Truncate captured value strings (parameters, return values, receivers, log messages,"
    " exceptions) to --max-length characters.",
}


def __getattr__(name: str) -> Any:
    if name in ("cli", "LazyGroup"):
        from tracetool.cli import _group

        return getattr(_group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# `tracetool --help` at help widths MIN_HELP_WIDTH.. (click's width: max(min(columns,
# max_content_width=100) - 2, 50)), separated by form feeds.
HELP_TEXTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "help_texts.txt")
MIN_HELP_WIDTH, MAX_HELP_WIDTH = 50, 98


def help_width(columns: int) -> int:
    """The width click formats the group's help at, for a terminal `columns` wide."""
    return max(min(columns, MAX_HELP_WIDTH + 2) - 2, MIN_HELP_WIDTH)


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns` (COLUMNS, else the terminal of stdout, else 80),
    without importing shutil (which imports the compression modules)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def stored_help(width: int) -> str | None:
    """`tracetool --help` at help width `width`, from HELP_TEXTS; None when it is missing."""
    try:
        with open(HELP_TEXTS, encoding="utf-8") as handle:
            texts = handle.read().split("\f")
    except OSError:
        return None
    index = width - MIN_HELP_WIDTH
    return texts[index] if 0 <= index < len(texts) else None


def answer_alone(argv: list[str] | None = None) -> None:
    """Answer `tracetool --version` or `tracetool --help` given alone, exactly as click would,
    without importing click (more than half of a start-up), and end the run; anything else
    returns. `argv` None: the process's own arguments, and the process ends here."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        text: str | None = __version__
    elif args == ["--help"]:
        text = stored_help(help_width(terminal_columns()))
    else:
        return
    if text is None:  # no stored help: click renders it
        return
    try:
        sys.stdout.write(f"{text}\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `tracetool --help | head -1`: nothing more to say
        pass
    if argv is None:  # the process ends here: no exit handler was registered yet
        os._exit(0)
    sys.exit(0)


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point. Always ends in `sys.exit` (tracetool.cli.common.run_cli);
    `--version` and `--help` alone are answered before click is imported (`answer_alone`)."""
    answer_alone(argv)
    from tracetool.cli._group import cli
    from tracetool.cli.common import run_cli

    return run_cli(cli, argv, one_shot=argv is None)
