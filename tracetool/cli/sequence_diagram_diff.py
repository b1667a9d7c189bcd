"""`tracetool sequence-diagram-diff <base> <head>`: what changed between two diagrams (spec)."""

from __future__ import annotations

from pathlib import Path

import click

from tracetool.cli.common import common_options


@click.command("sequence-diagram-diff")
@click.argument("base_diagram", type=click.Path(path_type=Path))
@click.argument("head_diagram", type=click.Path(path_type=Path))
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where diff diagrams are written.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["plantuml", "json"]),
    default="plantuml",
    show_default=True,
    help="Format of the diff diagram.",
)
@common_options
def command(base_diagram: Path, head_diagram: Path, output_dir: Path, fmt: str) -> None:
    """Compare two sequence diagrams (files, or directories of *.sequence.json).

    \b
    Prints what was added, removed and changed; writes a diff diagram
    (diff.sequence.uml / .json, or <name>.diff.sequence.* per pair of a directory).
    Recordings may be given instead of diagrams: they are diagrammed first.
    """
    from tracetool.diagram import DiffRequest, diff_diagrams

    report = diff_diagrams(base_diagram, head_diagram, DiffRequest(fmt, output_dir))
    for rel in report.only_base:
        click.echo(f"{rel} exists only in {base_diagram}")
    for rel in report.only_head:
        click.echo(f"{rel} exists only in {head_diagram}")
    for name in report.identical:
        label = "The diagrams are identical" if name == "diff" else f"{name}: identical"
        click.echo(label)
    for name, summary, path in report.pairs:
        if name != "diff":
            click.echo(f"{name}:")
        click.echo(summary)
        click.echo(f"Diff diagram written to {path}", err=True)
