"""`tracetool trim <files..>`: cap captured value strings (tracetool.transform.trim)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from tracetool.cli.common import common_options


def _describe(report: Any) -> str:
    from tracetool.cli.transform_output import size_change

    cap = report.details.get("max_length")
    if report.status == "skipped":
        return f"skipped, already trimmed to {cap} characters by this version"
    count = report.details.get("values_trimmed", 0)
    return f"{size_change(report.bytes_before, report.bytes_after)}, {count:,} values trimmed"


@click.command("trim")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--max-length",
    type=click.IntRange(min=1),
    default=120,
    show_default=True,
    help="Longest captured string kept, in characters; longer ones are cut and end with '…'.",
)
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Write trimmed copies here instead of overwriting the files in place.",
)
@click.option(
    "-r",
    "--recursive",
    is_flag=True,
    help="Accept directories: process every recording below them.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the per-file reports as JSON.")
@common_options
def command(
    files: tuple[Path, ...],
    max_length: int,
    output_dir: Path | None,
    recursive: bool,
    as_json: bool,
) -> None:
    """Truncate captured value strings (parameters, return values, receivers, log messages,
    exceptions) to --max-length characters. Every event and every other property is kept.

    \b
    Files are overwritten in place unless --output-dir is given. A file already trimmed by
    this version to the same cap is skipped; a smaller cap truncates further; a larger cap
    warns, because cut values cannot be restored. Exit code 1 if any file was skipped as
    unreadable or not a trace document.
    """
    from tracetool.cli.render import progress_bar
    from tracetool.cli.transform_output import render
    from tracetool.transform.trim import TRIMMED, TrimOptions, trim_files

    with progress_bar("Trimming") as update:
        options = TrimOptions(max_length)
        reports = trim_files(files, options, output_dir, recursive=recursive, progress=update)
    sys.exit(render(reports, as_json, _describe, TRIMMED))
