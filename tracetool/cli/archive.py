"""`tracetool archive`: store this revision's recordings and their analysis in a tar (spec)."""

from __future__ import annotations

from pathlib import Path

import click

from tracetool.cli.common import common_options


@click.command("archive")
@click.option(
    "-t",
    "--type",
    "type_",
    type=click.Choice(["full", "incremental", "auto"]),
    default="auto",
    show_default=True,
    help="auto: incremental when trace_dir holds a restored archive, else full.",
)
@click.option("-r", "--revision", metavar="REV", help="Revision archived [default: git HEAD].")
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of the archive [default: .trace/archive/<type>].",
)
@click.option("-f", "--output-file", metavar="NAME", help="File name [default: <revision>.tar].")
@click.option(
    "--analyze/--no-analyze",
    "--index/--no-index",
    "analyze",
    default=True,
    show_default=True,
    help="Add sequence diagrams, index data, failed tests and openapi.yml.",
)
@click.option(
    "--max-size",
    type=float,
    default=50.0,
    show_default=True,
    help="Largest recording analyzed, in MB (bigger ones are archived and listed as oversized).",
)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="FILTER",
    help="Compare filter setting key=value (hide, reveal, hide_name, dependency_folders, "
    "hide_external) or an encoded filter state; repeatable.",
)
@click.option("--thread-count", type=click.IntRange(min=1), help="Worker processes for analysis.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@common_options
def command(
    type_: str,
    revision: str | None,
    output_dir: Path | None,
    output_file: str | None,
    analyze: bool,
    max_size: float,
    filters: tuple[str, ...],
    thread_count: int | None,
    as_json: bool,
) -> None:
    """Archive the recordings of trace_dir (and their analysis) for one git revision."""
    from tracetool.archive import ArchiveOptions, create_archive
    from tracetool.cli.common import is_verbose
    from tracetool.cli.render import print_json, warn

    options = ArchiveOptions(
        type=type_,
        revision=revision,
        output_dir=output_dir,
        output_file=output_file,
        analyze=analyze,
        max_size_mb=max_size,
        filters=filters,
        thread_count=thread_count,
    )
    report = (lambda line: click.echo(line, err=True)) if is_verbose() else None
    result = create_archive(options, report)
    for line in result.warnings:
        warn(line)
    for rel in result.oversized:
        warn(f"{rel}: larger than {max_size:g} MB; archived but not analyzed")
    if as_json:
        print_json(result)
        return
    base = f" on {result.base_revision}" if result.base_revision else ""
    click.echo(
        f"Archived {result.recordings} recordings of {result.revision} "
        f"({result.analyzed} analyzed, {result.reused} reused, {len(result.failed_tests)} failed "
        f"tests) as a {result.type} archive{base}: {result.members} files"
        + (f", {result.deleted} deleted" if result.deleted else "")
    )
    click.echo(f"Wrote {result.path}")
