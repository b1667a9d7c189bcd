"""`tracetool compare-report <report-dir>`: render change-report.json as Markdown (spec)."""

from __future__ import annotations

from pathlib import Path

import click

from tracetool.cli.common import common_options


@click.command("compare-report")
@click.argument("report_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--source-url",
    metavar="URL",
    help="Base URL of source files; the file's relative path is added to its path.",
)
@click.option(
    "--appmap-url",
    metavar="URL",
    help="Base URL for recordings; a `path` parameter carries the path from the report directory.",
)
@common_options
def command(report_dir: Path, source_url: str | None, appmap_url: str | None) -> None:
    """Write report.md for a change report made by `tracetool compare`."""
    from tracetool.archive import ReportOptions, write_report

    path = write_report(report_dir, ReportOptions(source_url, appmap_url))
    click.echo(f"Wrote {path}")
