"""The `tracetool` command line: a lazy click group.

Every spec command is declared here once, by module path; a command module is imported only when
that command runs (or `--help` lists it), so `tracetool --help` stays fast and never imports
sqlglot, pygls, watchdog or mcp. A declared command whose module does not exist yet is not listed:
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

    return run_cli(cli, argv)
