"""`tracetool index`: fingerprint recordings and build query.db (see tracetool.index).

Prints one summary line (or the result as JSON with `--json`) and one warning line per skipped
file. `--watch` keeps running as the daemon for this directory (`tracetool_daemon`), indexing
changes as they happen; `--port` also serves JSON-RPC there (docs/rpc.md). Exit status 0 even when files were skipped, unless `--strict`. `-v` lists every file
indexed, updated, renamed or deleted.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from tracetool.cli.common import common_options, end_at_once, is_one_shot, is_verbose


def _summary(result: object) -> str:
    from tracetool import store
    from tracetool.index import IndexResult

    assert isinstance(result, IndexResult)
    parts = [
        f"{len(result.added)} added",
        f"{len(result.updated)} updated",
        f"{len(result.renamed)} renamed",
        f"{len(result.deleted)} deleted",
        f"{result.unchanged + len(result.touched)} unchanged",
    ]
    if result.skipped:
        parts.append(f"{len(result.skipped)} skipped")
    return (
        f"Indexed {result.found} recordings in {result.trace_dir} ({', '.join(parts)}) "
        f"in {result.seconds:.1f}s; query database: {store.describe(result.query_db)}"
    )


@click.command("index")
@common_options
@click.option(
    "--trace-dir",
    metavar="DIR",
    help="Directory searched recursively for recordings (default: trace_dir of trace.yml).",
)
@click.option(
    "--query-db",
    metavar="PATH|URL",
    help="Path to query.db (default under ~/.trace/data), or a postgresql:// URL.",
)
@click.option("--strict", is_flag=True, help="Exit non-zero when a file had to be skipped.")
@click.option(
    "--max-size",
    type=click.FloatRange(min=0, min_open=True),
    metavar="MB",
    help="Skip recordings larger than this (default: no limit; recordings over 8 MB are read "
    "event by event, smaller ones whole).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--log-assistant", is_flag=True, help="Log assistant events to stderr.")
@click.option(
    "-w",
    "--watch",
    is_flag=True,
    help="Keep running: index new, changed and deleted recordings as they are written.",
)
@click.option(
    "-p",
    "--port",
    type=click.IntRange(0, 65535),
    help="Also serve JSON-RPC on 127.0.0.1 at this port (0: the OS chooses); implies --watch.",
)
@click.option("--source-branch", metavar="NAME", help="Branch the recordings were made on.")
@click.option("--source-commit", metavar="SHA", help="Commit the recordings were made at.")
@click.option("--source-repository", metavar="NAME", help="Repository of the recorded app.")
@click.option("--source-run", metavar="ID", help="CI run that made the recordings.")
def command(
    trace_dir: str | None,
    query_db: str | None,
    strict: bool,
    max_size: float | None,
    as_json: bool,
    log_assistant: bool,
    watch: bool,
    port: int | None,
    source_branch: str | None,
    source_commit: str | None,
    source_repository: str | None,
    source_run: str | None,
) -> None:
    """Fingerprint and index every recording in the recordings directory.

    Writes one index sidecar per recording and updates query.db, touching only
    new, changed, renamed and deleted recordings. Rerun after recording new data.
    """
    from tracetool import store
    from tracetool.cli.render import print_json, progress_bar, warn
    from tracetool.index import IndexOptions, index_directory
    from tracetool.paths import resolve_trace_dir

    root = resolve_trace_dir(trace_dir)
    options = IndexOptions(
        query_db=store.location(query_db, root),
        max_bytes=int(max_size * 1_000_000) if max_size else None,
        log_assistant=log_assistant,
        source={
            "branch": source_branch,
            "commit": source_commit,
            "repository": source_repository,
            "ci_run": source_run,
        },
    )
    verbose = is_verbose()
    if watch or port is not None:
        _watch(root, options.query_db, port, log_assistant, verbose)
        return

    def report(relpath: str, outcome: str) -> None:
        if verbose and outcome != "skipped":
            click.echo(f'{outcome.capitalize()} "{Path(root, relpath).absolute()}"', err=True)

    if is_one_shot():
        # Nothing to run at exit: the database is closed and the worker pool, if any, shut
        # down (waited for) before index_directory returns.
        end_at_once()
    with progress_bar("Indexing recordings") as update:
        result = index_directory(root, options, progress=update, report=report)
    for skip in result.skipped:
        warn(f"skipped {skip.path}: {skip.reason}")
    if as_json:
        print_json(dataclasses.asdict(result))
    else:
        click.echo(_summary(result))
    if strict and result.skipped:
        click.get_current_context().exit(1)


def _watch(
    root: Path, query_db: Path | None, port: int | None, log_assistant: bool, verbose: bool
) -> None:
    """`--watch` / `--port`: the daemon for this one directory (see tracetool_daemon.runner)."""
    from tracetool_daemon.runner import Daemon, DaemonOptions, Target

    from tracetool.cli.rpc import service_options
    from tracetool.index import IndexResult
    from tracetool.paths import query_db_path

    trace_dir = root.expanduser().resolve()
    db = query_db.expanduser().absolute() if query_db else query_db_path(trace_dir)
    first = [True]

    def on_batch(project: object, result: IndexResult) -> None:
        if verbose:
            for rel in (*result.added, *result.updated, *result.deleted):
                click.echo(f'Indexed "{trace_dir / rel}"', err=True)
        for skip in result.skipped:
            click.echo(f"tracetool: skipped {skip.path}: {skip.reason}", err=True)
        if first[0]:
            first[0] = False
            click.echo(_summary(result) + "; watching for changes (Ctrl-C to stop)", err=True)

    options = DaemonOptions(
        targets=(Target(Path.cwd().resolve(), trace_dir, db),),
        port=port,
        service=service_options(
            log_assistant=log_assistant,
            ai_options=(),
            prompt=None,
            code_editor=None,
            thread_id=None,
            trajectory_file=None,
        ),
    )
    Daemon(options, on_batch=on_batch).run()
