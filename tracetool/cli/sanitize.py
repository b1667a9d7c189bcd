"""`tracetool sanitize <files..>`: mask captured values (tracetool.transform.sanitize)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from tracetool.cli.common import common_options
from tracetool.errors import UsageError


def _describe(report: Any) -> str:
    from tracetool.cli.transform_output import size_change

    if report.status == "skipped":
        return "skipped, already sanitized by this version with the same options"
    count = report.details.get("values_tokenized", 0)
    return f"{count:,} distinct values tokenized, {size_change(report.bytes_before, report.bytes_after)}"


def _read_allow_file(path: Path) -> list[str]:
    from tracetool.transform.tokens import read_allow_file

    try:
        return read_allow_file(path.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise UsageError(f"--allow-file {path}: cannot read ({reason})") from None


@click.command("sanitize")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--allow",
    multiple=True,
    metavar="VALUE",
    help="A value kept verbatim (exact, whole value); repeatable.",
)
@click.option(
    "--allow-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="File with one allowed value per line; '#' comment lines and blank lines skipped.",
)
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Write sanitized copies here instead of overwriting the files in place.",
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
    allow: tuple[str, ...],
    allow_file: Path | None,
    output_dir: Path | None,
    recursive: bool,
    as_json: bool,
) -> None:
    """Replace every captured value with a token (<v1>, <uuid:v2>, ...), so that no secret
    or personal data remains. SQL is parameterized, client URLs and template-less request paths
    become route templates; code object names, classes, paths, labels and route templates are
    never modified.

    \b
    Tokens are numbered per file in order of first appearance; the same value gets the same
    token throughout one file. true, false, null, nil and None are kept, plus --allow and
    --allow-file values. Files are overwritten in place unless --output-dir is given. A file
    already sanitized by this version with the same options is skipped. Exit code 0 means
    every file was sanitized; a malformed or unreadable file is skipped with a warning and
    the exit code is 1.
    """
    from tracetool.cli.render import progress_bar
    from tracetool.cli.transform_output import render
    from tracetool.transform.sanitize import SANITIZED, SanitizeOptions, sanitize_files

    values = list(allow)
    if allow_file is not None:
        values.extend(_read_allow_file(allow_file))
    options = SanitizeOptions(frozenset(values))
    with progress_bar("Sanitizing") as update:
        reports = sanitize_files(files, options, output_dir, recursive=recursive, progress=update)
    sys.exit(render(reports, as_json, _describe, SANITIZED))
