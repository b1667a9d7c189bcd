"""`tracetool openapi`: an OpenAPI document from every recording in a directory (spec "openapi")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click

from tracetool.cli.common import common_options


@click.command(
    "openapi",
    help="Generate an OpenAPI document from the HTTP server requests of all recordings "
    "in a directory, recursively.",
)
@click.option(
    "--trace-dir",
    metavar="DIR",
    help="Directory inspected recursively [default: trace_dir of trace.yml, else tmp/trace].",
)
@click.option(
    "-o",
    "--output-file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Write the document to FILE (default: standard output).",
)
@click.option(
    "--openapi-template",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Template YAML; the generated content goes into its paths and components sections "
    "(a default template is used if absent).",
)
@click.option("--openapi-title", metavar="TEXT", help="Override info/title.")
@click.option("--openapi-version", metavar="TEXT", help="Override info/version.")
@common_options
def command(
    trace_dir: Optional[str],
    output_file: Optional[str],
    openapi_template: Optional[str],
    openapi_title: Optional[str],
    openapi_version: Optional[str],
) -> None:
    from tracetool.cli.render import warn
    from tracetool.config import find_config_file, load_config, resolve_trace_dir
    from tracetool.errors import NotFoundError
    from tracetool.openapi import OpenApiOptions, generate
    from tracetool.openapi.document import DEFAULT_TITLE
    from tracetool.trace.document import atomic_write_bytes

    directory = resolve_trace_dir(trace_dir)
    if not directory.is_dir():
        raise NotFoundError(
            f"{directory}: no such directory (pass --trace-dir or set trace_dir in trace.yml)"
        )
    title = DEFAULT_TITLE
    if find_config_file() is not None:
        name = load_config().raw.get("name")
        if isinstance(name, str) and name.strip():
            title = name.strip()
    options = OpenApiOptions(
        template=Path(openapi_template) if openapi_template else None,
        title=openapi_title,
        version=openapi_version,
        default_title=title,
    )
    result = generate(directory, options)
    for line in result.warnings:
        warn(line)
    text = result.yaml()
    if output_file:
        atomic_write_bytes(output_file, text.encode("utf-8"))
        paths = len(result.document.get("paths") or {})
        click.echo(
            f"Wrote {output_file}: {paths} paths from {result.requests} requests "
            f"in {result.recordings} recordings",
            err=True,
        )
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
