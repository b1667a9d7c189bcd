"""Shared output of `trim` and `sanitize`: one line per file, warnings, `--json`, exit code.

Per-file lines go to stdout; warnings and skipped-file errors go to stderr as `warning:` lines,
so `--json` output (a list of the per-file reports) stays machine-readable. The exit code is 1
when any file could not be processed (spec: sanitize "exits non-zero"; trim does the same).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from tracetool.cli.render import print_json, warn


def _bytes(n: int) -> str:
    return f"{n:,}"


def size_change(before: int, after: int) -> str:
    """`1,234 → 567 bytes (-54.1%)`."""
    percent = (after - before) * 100.0 / before if before else 0.0
    return f"{_bytes(before)} → {_bytes(after)} bytes ({percent:+.1f}%)"


def render(reports: Sequence[Any], as_json: bool, describe: Callable[[Any], str], done: str) -> int:
    """Print the reports (module doc); returns the exit code."""
    if not reports:
        warn("no recordings to process (directories given with --recursive held none)")
    failed = 0
    for report in reports:
        for message in report.warnings:
            warn(message)
        if report.status == "error":
            failed += 1
            warn(f"skipped {report.error}")
    if as_json:
        print_json([r.to_json() for r in reports])
    else:
        for report in reports:
            if report.status == "error":
                continue
            name = report.file if report.output is None else f"{report.file} → {report.output}"
            click.echo(f"{name}: {describe(report)}")
        if len(reports) > 1:
            counts: dict[str, int] = {}
            for report in reports:
                counts[report.status] = counts.get(report.status, 0) + 1
            ok = [r for r in reports if r.status != "error"]
            before = sum(r.bytes_before for r in ok)
            after = sum(r.bytes_after for r in ok)
            parts = [f"{counts.get(s, 0)} {s}" for s in (done, "skipped", "error")]
            click.echo(f"{len(reports)} files ({', '.join(parts)}): {size_change(before, after)}")
    return 1 if failed else 0
