"""`tracetool stats`: recording sizes and instrumentation overhead (spec "stats")."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import click

from tracetool.cli.common import common_options


@click.command(
    "stats",
    help="Show the largest recordings (bigger than 1024 kb) and the functions with the highest "
    "instrumentation overhead, with the total instrumentation time. With -a, list the "
    "functions of one recording with their call count and estimated size. Recordings that "
    "`tracetool index` (or the daemon) holds unchanged are summed from the index, several "
    "times faster than reading them; the output is the same.",
)
@click.argument("directory_arg", metavar="[DIRECTORY]", required=False)
@click.option(
    "--trace-dir",
    metavar="DIR",
    help="Directory inspected recursively [default: trace_dir of trace.yml, else tmp/trace].",
)
@click.option(
    "--query-db",
    metavar="PATH",
    help="query.db whose kept sums stand for the recordings it holds unchanged "
    "(default: the index of the directory).",
)
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(["json", "text"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option(
    "-l",
    "--limit",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Number of recordings and methods displayed.",
)
@click.option(
    "-a",
    "--appmap-file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Recording to analyze on its own.",
)
@common_options
def command(
    directory_arg: Optional[str],
    trace_dir: Optional[str],
    query_db: Optional[str],
    fmt: str,
    limit: int,
    appmap_file: Optional[str],
) -> None:
    from tracetool.cli.render import print_json, warn

    if appmap_file:
        from tracetool.cli.common import leave_to_exit
        from tracetool.stats import recording_stats

        leave_to_exit()  # the process ends with the command, without freeing its objects

        single = recording_stats(appmap_file, limit=limit)
        if fmt == "json":
            print_json(_recording_json(single))
        else:
            _print_recording(single)
        return

    from tracetool.config import resolve_trace_dir
    from tracetool.errors import UsageError
    from tracetool.stats import directory_stats

    if directory_arg and trace_dir and directory_arg != trace_dir:
        raise UsageError("give the directory either as an argument or with --trace-dir, not both")
    directory = resolve_trace_dir(directory_arg or trace_dir)
    stats = directory_stats(directory, limit=limit, query_db=query_db)
    for line in stats.warnings:
        warn(line)
    if stats.recordings == 0:
        message = f"no recordings (*.trace.json, *.appmap.json) found in {directory}"
        if fmt != "json":
            click.echo(message[0].upper() + message[1:] + ".")
            return
        warn(message)
    if fmt == "json":
        print_json(_directory_json(stats))
    else:
        _print_directory(stats)


def _directory_json(stats: Any) -> dict[str, Any]:
    return {
        "directory": stats.directory,
        "recordings": stats.recordings,
        "largest": [{"path": r.path, "size": r.size} for r in stats.largest],
        "total_instrumentation": round(stats.total_instrumentation, 6),
        "functions": [
            {
                "name": f.name,
                "time": round(f.time, 6),
                "percent": round(f.percent, 2),
                "count": f.count,
            }
            for f in stats.functions
        ],
        "warnings": list(stats.warnings),
    }


def _recording_json(stats: Any) -> dict[str, Any]:
    return {
        "recording": stats.path,
        "calls": stats.calls,
        "total_functions": stats.total_functions,
        "functions": [
            {"function": f.function, "count": f.count, "size": f.size, "location": f.location}
            for f in stats.functions
        ],
    }


def _size(size: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    return ""  # unreachable


def _print_directory(stats: Any) -> None:
    from tracetool.cli.render import print_table

    if stats.largest:
        print_table(
            ["Size", "Recording"],
            [(_size(r.size), r.path) for r in stats.largest],
            title="Largest recordings (bigger than 1024 kb)",
            justify=["right", "left"],
            overflow=["ellipsis", "fold"],
        )
    else:
        click.echo("No recording is bigger than 1024 kb.")
    click.echo(
        f"Total instrumentation time: {stats.total_instrumentation * 1000:.0f} ms "
        f"in {stats.recordings} recordings"
    )
    if not stats.functions:
        click.echo(
            "These recordings carry no elapsed_instrumentation data, so there is no overhead "
            "to show (record them with an agent that measures its own overhead)."
        )
        return
    print_table(
        ["Time", "%", "Count", "Function"],
        [
            (f"{f.time * 1000:.1f} ms", f"{f.percent:.1f}%", f.count, f.name)
            for f in stats.functions
        ],
        title="Functions with the highest instrumentation overhead",
        justify=["right", "right", "right", "left"],
        overflow=["ellipsis", "ellipsis", "ellipsis", "fold"],
    )


def _print_recording(stats: Any) -> None:
    from tracetool.cli.render import print_table

    if not stats.functions:
        click.echo(f"{stats.path}: no function calls recorded.")
        return
    print_table(
        ["#", "Function", "Count", "Estimated size"],
        [(i, f.function, f.count, _size(f.size)) for i, f in enumerate(stats.functions, start=1)],
        title=f"Functions of {Path(stats.path).name} ({stats.total_functions} functions, "
        f"{stats.calls} calls), largest first",
        justify=["right", "left", "right", "right"],
        overflow=["ellipsis", "fold", "ellipsis", "ellipsis"],
    )
