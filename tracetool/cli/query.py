"""`tracetool query <verb>`: the query verbs over query.db (see tracetool.query).

Each verb parses its options, calls one `tracetool.query` function and renders the rows as a
table (or `--json`). A missing database fails with a message to run `tracetool index`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from tracetool.cli.common import common_options
from tracetool.cli.query_servers import mcp_command, ui_command

F = TypeVar("F", bound=Callable[..., Any])


def db_options(f: F) -> F:
    """--trace-dir, --query-db and --json, plus the common options."""
    f = click.option("--json", "as_json", is_flag=True, help="Print rows as JSON.")(f)
    f = click.option(
        "--query-db", metavar="PATH|URL", help="Path to query.db, or a postgresql:// URL."
    )(f)
    f = click.option(
        "--trace-dir", metavar="DIR", help="Recordings directory whose index to read."
    )(f)
    return common_options(f)


def filter_options(*names: str) -> Callable[[F], F]:
    """The `find`-style filters named, in a fixed order."""
    specs: dict[str, tuple[tuple[str, ...], str]] = {
        "route": (("--route",), "Route: 'GET /users/{id}', '/users/:id', 'POST', a path, a glob."),
        "class": (("--class", "class_"), "Class name (last component or glob)."),
        "method": (("--method",), "Method / function name (or glob)."),
        "status": (("--status",), "HTTP status: 500, >=500, <400, 200-299, 5xx."),
        "duration": (("--duration",), "Duration: >100ms, <2s, 100ms-1s."),
        "branch": (("--branch",), "Git branch of the recordings."),
        "commit": (("--commit",), "Git commit (prefix) of the recordings."),
        "since": (("--since",), "Recorded at or after: ISO date/time or age (2d, 3h)."),
        "until": (("--until",), "Recorded at or before: ISO date/time or age."),
        "table": (("--table",), "SQL table name."),
    }

    def decorate(f: F) -> F:
        for name in reversed(names):
            decls, help_text = specs[name]
            f = click.option(*decls, metavar="TEXT", help=help_text)(f)
        return f

    return decorate


def limit_option(default: int | None) -> Callable[[F], F]:
    return click.option(
        "--limit",
        type=click.IntRange(min=1),
        default=default,
        show_default=default is not None,
        help="Maximum number of rows.",
    )


def _filters(**kwargs: Any) -> Any:
    from tracetool.query import parse_filters

    return parse_filters(**kwargs)


def _open(trace_dir: str | None, query_db: str | None) -> Any:
    from tracetool.query import open_db

    return open_db(trace_dir, query_db)


def _ms(value: Any) -> str:
    return "" if value is None else f"{value:,.1f}"


def _cut(value: Any, width: int = 90) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _emit(
    rows: list[dict[str, Any]],
    as_json: bool,
    columns: Sequence[tuple[str, str, Callable[[Any], str]]],
    title: str,
) -> None:
    from tracetool.cli.render import print_json, print_table

    if as_json:
        print_json(rows)
        return
    if not rows:
        click.echo("No matching rows.", err=True)
        return
    justify = ["right" if fmt in (_ms, str) else "left" for _, _, fmt in columns]
    print_table(
        [header for _, header, _ in columns],
        [[fmt(row.get(key)) for key, _, fmt in columns] for row in rows],
        title=title,
        justify=justify,
    )


def _text(value: Any) -> str:
    return "" if value is None else str(value)


@click.group("query")
@common_options
def command() -> None:
    """Search indexed recordings (run `tracetool index` first).

    \b
    Verbs: endpoints, find, tree, related, hotspots, compare, mcp, ui.
    Every verb takes --trace-dir and --query-db; the listings take --json.
    """


command.add_command(mcp_command)
command.add_command(ui_command)


@command.command("endpoints")
@db_options
@filter_options("route", "status", "duration", "branch", "commit", "since", "until")
@limit_option(None)
def endpoints_cmd(
    trace_dir: str | None, query_db: str | None, as_json: bool, limit: int | None, **f: Any
) -> None:
    """One row per route: count, status mix, p50/p95/max duration, SQL per request."""
    from tracetool.query import endpoints

    db = _open(trace_dir, query_db)
    filters = _filters(limit=limit, **f)
    rows = endpoints(db, filters)
    if not rows:
        from tracetool.query.find import hints

        for line in hints(db, filters):
            click.echo(line, err=True)

    def statuses(value: Any) -> str:
        return " ".join(f"{k}×{v}" for k, v in (value or {}).items())

    _emit(
        rows,
        as_json,
        [
            ("method", "Method", _text),
            ("route", "Route", _cut),
            ("count", "Count", str),
            ("statuses", "Statuses", statuses),
            ("p50_ms", "p50 ms", _ms),
            ("p95_ms", "p95 ms", _ms),
            ("max_ms", "max ms", _ms),
            ("sql_per_request", "SQL/req", _text),
        ],
        "Endpoints",
    )


_FIND_COLUMNS: dict[str, list[tuple[str, str, Callable[[Any], str]]]] = {
    "appmaps": [
        ("recording", "Recording", _cut),
        ("test_status", "Status", _text),
        ("branch", "Branch", _text),
        ("recorded_at", "Recorded", _text),
        ("requests", "Requests", str),
        ("queries", "Queries", str),
        ("exceptions", "Exceptions", str),
        ("elapsed_ms", "ms", _ms),
    ],
    "requests": [
        ("method", "Method", _text),
        ("path", "Path", _cut),
        ("status", "Status", _text),
        ("duration_ms", "ms", _ms),
        ("sql_count", "SQL", str),
        ("recording", "Recording", _cut),
    ],
    "queries": [
        ("sql", "SQL", _cut),
        ("duration_ms", "ms", _ms),
        ("caller", "Caller", _cut),
        ("route", "Route", _text),
        ("recording", "Recording", _cut),
    ],
    "calls": [
        ("function", "Function", _cut),
        ("count", "Count", str),
        ("total_ms", "Total ms", _ms),
        ("self_ms", "Self ms", _ms),
        ("max_ms", "Max ms", _ms),
        ("recording", "Recording", _cut),
    ],
    "exceptions": [
        ("class", "Exception", _text),
        ("message", "Message", _cut),
        ("function", "Raised in", _cut),
        ("route", "Route", _text),
        ("recording", "Recording", _cut),
    ],
    "logs": [
        ("level", "Level", _text),
        ("message", "Message", _cut),
        ("caller", "Caller", _cut),
        ("route", "Route", _text),
        ("recording", "Recording", _cut),
    ],
}


@command.command("find")
@click.argument("type_", metavar="TYPE")
@click.argument("text", required=False)
@db_options
@filter_options(
    "route", "class", "method", "status", "duration", "branch", "commit", "since", "until", "table"
)
@limit_option(100)
def find_cmd(
    type_: str,
    text: str | None,
    trace_dir: str | None,
    query_db: str | None,
    as_json: bool,
    limit: int,
    **f: Any,
) -> None:
    """Row-level search. TYPE: appmaps (or recordings), requests, queries, calls,
    exceptions, logs. TEXT, if given, must appear in the row (full-text for appmaps)."""
    from tracetool.query import find
    from tracetool.query.find import normalize_type

    kind = normalize_type(type_)
    db = _open(trace_dir, query_db)
    filters = _filters(limit=limit, text=text, **f)
    rows = find(db, kind, filters)
    _emit(rows, as_json, _FIND_COLUMNS[kind], kind.capitalize())
    if not rows:
        from tracetool.query.find import hints

        for line in hints(db, filters):
            click.echo(line, err=True)


@command.command("tree")
@click.argument("appmap")
@db_options
@click.option("--depth", type=click.IntRange(min=0), help="Show this many levels below roots.")
@click.option("--no-fold", is_flag=True, help="Do not fold repeated sibling calls.")
@limit_option(1000)
def tree_cmd(
    appmap: str,
    trace_dir: str | None,
    query_db: str | None,
    as_json: bool,
    depth: int | None,
    no_fold: bool,
    limit: int,
) -> None:
    """Call tree of one recording (path, file or name), with timings."""
    from tracetool.cli.render import print_json
    from tracetool.query import tree

    rows = tree(_open(trace_dir, query_db), appmap, depth=depth, fold=not no_fold, limit=limit)
    if as_json:
        print_json(rows)
        return
    lines = []
    for row in rows:
        label = row["label"]
        if row.get("status") is not None:
            label += f" → {row['status']}"
        count = f" ×{row['count']}" if row["count"] > 1 else ""
        ms = f"  {row['elapsed_ms']:,.2f} ms" if row["elapsed_ms"] is not None else ""
        lines.append(f"{'  ' * row['depth']}{_cut(label, 140)}{count}{ms}")
    click.echo("\n".join(lines))
    if len(rows) >= limit:
        click.echo(f"(first {limit} rows; use --limit or --depth)", err=True)


@command.command("related")
@click.argument("appmap")
@db_options
@limit_option(10)
def related_cmd(
    appmap: str, trace_dir: str | None, query_db: str | None, as_json: bool, limit: int
) -> None:
    """Recordings ranked by how much code, routes and queries they share with APPMAP."""
    from tracetool.query import related

    rows = related(_open(trace_dir, query_db), appmap, limit=limit)
    _emit(
        rows,
        as_json,
        [
            ("recording", "Recording", _cut),
            ("score", "Score", str),
            ("functions", "Functions", str),
            ("routes", "Routes", str),
            ("queries", "Queries", str),
            ("tables", "Tables", str),
            ("examples", "Distinctive shared", lambda v: _cut(", ".join(v or []), 80)),
        ],
        "Related recordings",
    )


@command.command("hotspots")
@db_options
@click.option(
    "--by",
    "kind",
    type=click.Choice(["functions", "queries"]),
    default="functions",
    show_default=True,
    help="Rank functions or SQL queries.",
)
@click.option(
    "--sort",
    type=click.Choice(["total", "self"]),
    default="total",
    show_default=True,
    help="Rank by total time or by self time.",
)
@filter_options("route", "class", "method", "status", "branch", "commit", "since", "until", "table")
@limit_option(20)
def hotspots_cmd(
    trace_dir: str | None,
    query_db: str | None,
    as_json: bool,
    kind: str,
    sort: str,
    limit: int,
    **f: Any,
) -> None:
    """Functions or SQL queries ranked by cumulative elapsed time."""
    from tracetool.query import hotspots

    rows = hotspots(_open(trace_dir, query_db), kind, _filters(limit=limit, **f), sort=sort)
    _emit(
        rows,
        as_json,
        [
            ("name", "Function" if kind == "functions" else "SQL", _cut),
            ("count", "Count", str),
            ("total_ms", "Total ms", _ms),
            ("self_ms", "Self ms", _ms),
            ("avg_ms", "Avg ms", _ms),
            ("recordings", "Recordings", str),
            ("top_recordings", "Top recording", lambda v: _cut((v or [""])[0], 60)),
        ],
        f"Hotspots ({kind}, by {sort} time)",
    )


@command.command("compare")
@click.argument("branch_a")
@click.argument("branch_b")
@db_options
@filter_options("route", "status", "since", "until")
@limit_option(None)
def compare_cmd(
    branch_a: str,
    branch_b: str,
    trace_dir: str | None,
    query_db: str | None,
    as_json: bool,
    limit: int | None,
    **f: Any,
) -> None:
    """Per-route latency (p50, p95, count) of BRANCH_B against BRANCH_A."""
    from tracetool.query import compare

    rows = compare(_open(trace_dir, query_db), branch_a, branch_b, _filters(limit=limit, **f))

    def delta(value: Any) -> str:
        return "" if value is None else f"{value:+,.1f}"

    def only(value: Any) -> str:
        return {"a": f"only {branch_a}", "b": f"only {branch_b}"}.get(value or "", "")

    _emit(
        rows,
        as_json,
        [
            ("method", "Method", _text),
            ("route", "Route", _cut),
            ("count_a", f"n {branch_a}", str),
            ("count_b", f"n {branch_b}", str),
            ("p50_a_ms", "p50 a", _ms),
            ("p50_b_ms", "p50 b", _ms),
            ("delta_p50_ms", "Δp50", delta),
            ("p95_a_ms", "p95 a", _ms),
            ("p95_b_ms", "p95 b", _ms),
            ("delta_p95_ms", "Δp95", delta),
            ("only", "", only),
        ],
        f"{branch_b} vs {branch_a}",
    )
