"""`tracetool compare`: compare behaviour between a base and a head revision (spec)."""

from __future__ import annotations

from pathlib import Path

import click

from tracetool.cli.common import common_options


@click.command("compare")
@click.option(
    "-b",
    "--base-revision",
    "--base",
    "base_revision",
    required=True,
    metavar="REV",
    help="Base revision name or commit SHA.",
)
@click.option(
    "-h",
    "--head-revision",
    "--head",
    "head_revision",
    metavar="REV",
    help="Head revision name or SHA [default: current commit].",
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Report directory holding base/ and head/ [default: .trace/change-report/<base>-<head>].",
)
@click.option(
    "--clobber-output-dir",
    is_flag=True,
    help="Replace an earlier report in the output directory (base/ and head/ are kept).",
)
@click.option(
    "--source-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Root directory of the application source (snippets, source diffs).",
)
@click.option(
    "--delete-unreferenced/--no-delete-unreferenced",
    "--delete-unchanged/--no-delete-unchanged",
    "delete_unreferenced",
    default=True,
    show_default=True,
    help="Delete recordings of base/ and head/ that the report does not mention.",
)
@click.option(
    "--report-removed/--no-report-removed",
    default=True,
    show_default=True,
    help="Report removals (API operations, queries, tables) too.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@common_options
def command(
    base_revision: str,
    head_revision: str | None,
    output_dir: Path | None,
    clobber_output_dir: bool,
    source_dir: Path,
    delete_unreferenced: bool,
    report_removed: bool,
    as_json: bool,
) -> None:
    """Compare the restored recordings of two revisions; write change-report.json."""
    from tracetool.archive import CompareOptions, compare
    from tracetool.cli.render import print_json, warn

    result = compare(
        CompareOptions(
            base_revision,
            head_revision,
            output_dir,
            clobber_output_dir,
            source_dir,
            delete_unreferenced,
            report_removed,
        )
    )
    for line in result.warnings:
        warn(line)
    if as_json:
        print_json(result)
        return
    click.echo(
        f"{len(result.new)} new, {len(result.removed)} removed, {len(result.changed)} changed, "
        f"{len(result.failed)} failed test recordings"
        + (f"; {result.deleted} unreferenced recordings deleted" if result.deleted else "")
    )
    click.echo(f"Wrote {result.report}")
