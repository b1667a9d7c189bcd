"""The `tracetool` command line: a lazy click group.

Every spec command is declared here once, by module path; a command module is imported only when
that command runs. `tracetool --help` lists the commands from SHORT_HELP, a static copy of each
command's one-line help (a test keeps it equal to the real one), so it imports no command module
at all and starts about as fast as `--version`. A declared command whose module does not exist yet is not listed:
commands appear as they are built, never as stubs.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import click

from tracetool import __version__

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


def _available(target: str) -> bool:
    return importlib.util.find_spec(target.split(":", 1)[0]) is not None


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, target in COMMANDS.items() if _available(target))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not _available(target):
            return None
        module_name, attr = target.split(":", 1)
        command: click.Command = getattr(importlib.import_module(module_name), attr)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        from tracetool.cli.common import subcommand_invoked

        subcommand_invoked()
        return super().invoke(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The "Commands" section of `--help`, from SHORT_HELP: no command module is imported.

        Each row is shortened to the width exactly as click shortens a real command's help.
        """
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [
            (name, click.Command(name, help=SHORT_HELP[name]).get_short_help_str(limit))
            for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"max_content_width": 100},
)
@click.version_option(__version__, "--version", prog_name="tracetool", message="%(version)s")
def cli() -> None:
    """Record what your Python app really did, then index, query, diagram and share it.

    \b
    Recordings are trace documents (*.trace.json, AppMap 1.x format) in the
    directory that trace.yml names as trace_dir (default tmp/trace).
    Run `tracetool COMMAND --help` for the options of each command.
    """


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point."""
    from tracetool.cli.common import run_cli

    return run_cli(cli, argv, one_shot=argv is None)
