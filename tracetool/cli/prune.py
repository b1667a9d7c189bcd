"""`tracetool prune <file>`: shrink a recording to a size target or by a filter (spec)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from click.core import ParameterSource

from tracetool.cli.common import common_options


@click.command("prune")
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where the pruned recording is written (same file name).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "text"]),
    default="text",
    show_default=True,
    help="Format of the report of what was pruned.",
)
@click.option(
    "-s",
    "--size",
    default="15mb",
    show_default=True,
    help="Prune to this size (binary units: 15mb = 15·2^20 bytes).",
)
@click.option(
    "--filter",
    "filter_",
    metavar="FILTER",
    help="Filter state (JSON or base64, as the editors copy it).",
)
@click.option(
    "--output-data",
    is_flag=True,
    default=None,
    help="Write the pruned recording to stdout instead of a file.",
)
@common_options
def command(
    file: Path,
    output_dir: Path,
    fmt: str,
    size: str,
    filter_: str | None,
    output_data: bool | None,
) -> None:
    """Remove the most repetitive calls from a recording (HTTP requests and SQL are kept).

    One of -s/--size or --filter must be given.
    """
    from tracetool import filters
    from tracetool.cli.common import leave_to_exit
    from tracetool.cli.render import print_json, warn
    from tracetool.errors import UsageError
    from tracetool.trace.document import atomic_write_stream
    from tracetool.transform import prune

    leave_to_exit()  # the process ends with the command, without freeing its objects

    ctx = click.get_current_context()
    size_given = ctx.get_parameter_source("size") != ParameterSource.DEFAULT
    if not size_given and filter_ is None:
        raise UsageError(
            "prune needs a size target or a filter: pass -s/--size (e.g. -s 15mb) or --filter"
        )
    state = None
    if filter_ is not None:
        state = filters.decode(filter_)
        for key in state.unknown:
            warn(f"--filter: unknown key {key!r} ignored")
    result = prune.prune_file(
        file, size=prune.parse_size(size) if size_given else None, filter=state
    )
    if output_data:
        for chunk in result.chunks():
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.write(b"\n")
        sys.stdout.flush()
        return
    target = prune.output_path(file, output_dir)
    atomic_write_stream(target, result.chunks())
    if fmt == "json":
        print_json({**result.summary(), "output": str(target)})
        return
    for line in prune.describe(result):
        click.echo(line)
    click.echo(f"Written to {target}")
