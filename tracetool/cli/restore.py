"""`tracetool restore`: rebuild a revision's recordings from archives (spec)."""

from __future__ import annotations

from pathlib import Path

import click

from tracetool.cli.common import common_options


@click.command("restore")
@click.option("-r", "--revision", metavar="REV", help="Revision to restore [default: git HEAD].")
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to restore (must not exist) [default: .trace/work/<revision>].",
)
@click.option(
    "--archive-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".trace/archive"),
    show_default=True,
    help="Directory holding full/ and incremental/ archives.",
)
@click.option(
    "--github-repo",
    metavar="OWNER/NAME",
    help="Also fetch archives from this repository's build artifacts (needs HOSTING_TOKEN).",
)
@click.option("--exact", is_flag=True, help="Fail unless REV itself has been archived.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@common_options
def command(
    revision: str | None,
    output_dir: Path | None,
    archive_dir: Path,
    github_repo: str | None,
    exact: bool,
    as_json: bool,
) -> None:
    """Restore the recordings of REV (or of its nearest archived ancestor)."""
    from tracetool.archive import RestoreOptions, restore
    from tracetool.cli.render import print_json, warn

    result = restore(RestoreOptions(revision, output_dir, archive_dir, github_repo, exact))
    for line in result.warnings:
        warn(line)
    if as_json:
        print_json(result)
        return
    for applied in result.applied:
        click.echo(
            f"Applied {applied.type} archive {applied.path} "
            f"({applied.extracted} files"
            + (f", {applied.deleted} deleted)" if applied.deleted else ")")
        )
    note = "" if result.revision == result.requested else f" (nearest archived: {result.revision})"
    click.echo(f"Restored {result.requested}{note} into {result.output_dir}: {result.files} files")
