"""`tracetool sequence-diagram <appmap...>`: sequence diagrams of recordings (spec)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tracetool.cli.common import common_options


@click.command("sequence-diagram")
@click.argument("appmap", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    help="Where diagrams are saved (default: beside each recording).",
)
@click.option(
    "--show-browser",
    is_flag=True,
    default=False,
    help="Also write an HTML view and open it in the browser.",
)
@click.option(
    "--loops/--no-loops",
    default=True,
    show_default=True,
    help="Collect repeated calls under a Loop.",
)
@click.option(
    "--collapse/--no-collapse",
    default=True,
    show_default=True,
    help="PNG: hide calls a lifeline makes to itself below the first level (queries, requests "
    "and calls to other lifelines stay), so a request fits one page.",
)
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(["png", "plantuml", "json"]),
    default="png",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--filter",
    "filter_",
    metavar="FILTER",
    help="Filter state (JSON or base64, as the editors copy it) applied first.",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="CODE_OBJECT",
    help="Deprecated: code objects to leave out (use --filter hideName).",
)
@click.option(
    "--expand",
    multiple=True,
    metavar="CODE_OBJECT",
    help="Code objects to expand, e.g. package:app/models puts its classes on separate lifelines.",
)
@common_options
def command(
    appmap: tuple[Path, ...],
    output_dir: Path | None,
    show_browser: bool,
    loops: bool,
    collapse: bool,
    fmt: str,
    filter_: str | None,
    exclude: tuple[str, ...],
    expand: tuple[str, ...],
) -> None:
    """Write a sequence diagram of each recording (png, plantuml or json)."""
    from tracetool.diagram import read_ahead

    read_ahead(appmap)  # (first: what follows imports the diagram code meanwhile)
    from tracetool import filters
    from tracetool.cli.common import leave_to_exit
    from tracetool.cli.render import warn
    from tracetool.diagram import DiagramOptions, DiagramRequest, write_diagrams

    leave_to_exit()  # the recordings' objects are freed by the exit, not one by one

    if exclude:
        warn("--exclude is deprecated; use --filter '{\"hideName\": [...]}' instead")
    state = None
    if filter_ is not None:
        state = filters.decode(filter_)
        for key in state.unknown:
            warn(f"--filter: unknown key {key!r} ignored")
    request = DiagramRequest(
        format=fmt,
        output_dir=output_dir,
        filter=state,
        options=DiagramOptions(expand=expand, exclude=exclude, loops=loops),
        show_browser=show_browser,
        collapse=collapse,
    )
    errors: list[str] = []
    for result in write_diagrams(list(appmap), request, errors):
        for out in result.outputs:
            click.echo(f"{out} ({result.actions} actions, {result.actors} actors)")
        if result.hidden:
            click.echo(
                f"  {result.hidden} nested calls within a lifeline hidden; "
                "--no-collapse shows every call"
            )
    for line in errors:
        warn(line)
    if errors:
        sys.exit(1)
