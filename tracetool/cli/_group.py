"""The `tracetool` click group (tracetool.cli imports it on first use: `tracetool --version`
answers without click)."""

from __future__ import annotations

import importlib
from typing import Any

import click

from tracetool import __version__
from tracetool.cli import COMMANDS, SHORT_HELP


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
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


def render_help_texts() -> str:
    """HELP_TEXTS' content: the group's help as click renders it at every help width."""
    from tracetool.cli import MAX_HELP_WIDTH, MIN_HELP_WIDTH

    texts = []
    for width in range(MIN_HELP_WIDTH, MAX_HELP_WIDTH + 1):
        with click.Context(cli, info_name="tracetool", terminal_width=width) as ctx:
            texts.append(ctx.get_help())
    return "\f".join(texts)


if __name__ == "__main__":  # python -m tracetool.cli._group: rewrite HELP_TEXTS
    from tracetool.cli import HELP_TEXTS
    from tracetool.trace.atomic import atomic_write_bytes

    atomic_write_bytes(HELP_TEXTS, render_help_texts().encode())
    print(f"wrote {HELP_TEXTS}")
