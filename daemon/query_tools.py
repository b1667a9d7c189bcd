"""The query verbs as tools: name, description, JSON input schema and runner, for MCP and the UI.

Contract:

- `TOOLS` lists one `Tool` per `tracetool query` verb — `endpoints`, `find`, `tree`, `related`,
  `hotspots`, `compare`, `search`, plus `summary` (index overview) and `recording` (one
  recording's facts) — whose input schema mirrors the CLI options:
  the same filter names and texts (`status: ">=500"`, `duration: ">100ms"`, `class: "User"`),
  `limit` with the CLI's default, plus `trace_dir` / `query_db` to pick the index.
- `call_tool(name, arguments, trace_dir=, query_db=)` validates `arguments` against the schema,
  opens query.db (arguments' `query_db`, else arguments' `trace_dir`, else the server's
  `trace_dir` / `query_db`), runs the one `tracetool.query` function and returns a JSON-ready
  object: `{"count": n, "rows": [...]}` for row verbs, an object for `summary` / `recording`.
  When `find` / `endpoints` match nothing, `"hints"` adds the CLI's "did you mean" lines for the
  `route` / `class` values given (the closest routes and classes the index holds).
- Every failure is a `TraceToolError` with one line naming the problem: `UsageError` for bad
  arguments (unknown tool, unknown or mistyped argument, bad filter text), `NotFoundError`,
  `IndexMissingError` ("run `tracetool index`").
- `check_paths(arguments, allowed_roots(trace_dir, query_db))` refuses (`UsageError`) a
  `trace_dir` / `query_db` argument outside the project, the server's own directories and
  (for `query_db`) `~/.trace/data`: MCP clients pass model-chosen arguments.
- `arguments_from_strings(name, params)` turns text values (a URL query string) into typed
  arguments by the same schema, so the web UI accepts exactly what MCP accepts.

Nothing here imports the MCP SDK; `tracetool_daemon.mcp` adapts `TOOLS` to it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tracetool.errors import UsageError

Args = dict[str, Any]

# Filter arguments: the CLI option texts (tracetool/cli/query.py), parsed by parse_filters.
_FILTER_PROPS: dict[str, dict[str, Any]] = {
    "route": {
        "type": "string",
        "description": "Route: 'GET /users/{id}', '/users/:id', a concrete path or a glob.",
    },
    "class": {"type": "string", "description": "Class name (last component or glob)."},
    "method": {"type": "string", "description": "Method / function name (or glob)."},
    "status": {
        "type": ["string", "integer"],
        "description": "HTTP status: 500, '>=500', '<400', '200-299', '5xx' or a comma list.",
    },
    "duration": {"type": "string", "description": "Duration: '>100ms', '<2s', '100ms-1s'."},
    "branch": {"type": "string", "description": "Git branch of the recordings."},
    "commit": {"type": "string", "description": "Git commit (prefix) of the recordings."},
    "since": {
        "type": "string",
        "description": "Recorded at or after: ISO date/time or an age ('2d', '3h').",
    },
    "until": {"type": "string", "description": "Recorded at or before: ISO date/time or age."},
    "table": {"type": "string", "description": "SQL table name."},
}
_DB_PROPS: dict[str, dict[str, Any]] = {
    "trace_dir": {
        "type": "string",
        "description": "Recordings directory whose index to read (default: the server's).",
    },
    "query_db": {
        "type": "string",
        "description": "Path to query.db (overrides the default location).",
    },
}
DB_KEYS = frozenset(_DB_PROPS)
FIND_TYPES = ("appmaps", "recordings", "requests", "queries", "calls", "exceptions", "logs")


def _limit(default: int | None) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": "integer", "minimum": 1, "description": "Maximum rows."}
    if default is not None:
        prop["default"] = default
        prop["description"] = f"Maximum rows (default {default})."
    return prop


def _schema(
    props: Mapping[str, dict[str, Any]],
    filters: tuple[str, ...] = (),
    required: tuple[str, ...] = (),
) -> dict[str, Any]:
    properties = {**props, **{name: _FILTER_PROPS[name] for name in filters}, **_DB_PROPS}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    run: Callable[[sqlite3.Connection, Args], Any]
    rows: bool = True  # the result is a list of rows (wrapped as {count, rows})
    # filters whose values get "did you mean" hints when no row matched (tracetool.query.find.hints)
    hint_filters: tuple[str, ...] = ()

    def default(self, key: str) -> Any:
        return self.input_schema["properties"].get(key, {}).get("default")


def _filters(args: Args, names: tuple[str, ...], *, text: bool = False) -> Any:
    from tracetool.query import parse_filters

    values: dict[str, Any] = {}
    for name in names:
        value = args.get(name)
        if value is not None:
            values["class_" if name == "class" else name] = str(value)
    if text and args.get("text"):
        values["text"] = args["text"]
    return parse_filters(**values, limit=args.get("limit"))


_ENDPOINT_FILTERS = ("route", "status", "duration", "branch", "commit", "since", "until")
_FIND_FILTERS = (
    "route",
    "class",
    "method",
    "status",
    "duration",
    "branch",
    "commit",
    "since",
    "until",
    "table",
)
_HOTSPOT_FILTERS = tuple(f for f in _FIND_FILTERS if f != "duration")
_COMPARE_FILTERS = ("route", "status", "since", "until")


def _summary(db: sqlite3.Connection, args: Args) -> Any:
    from tracetool.query import summary

    return summary(db)


def _recording(db: sqlite3.Connection, args: Args) -> Any:
    from tracetool.query import recording

    return recording(db, args["appmap"])


def _endpoints(db: sqlite3.Connection, args: Args) -> Any:
    from tracetool.query import endpoints

    return endpoints(db, _filters(args, _ENDPOINT_FILTERS))


def _find(db: sqlite3.Connection, args: Args) -> Any:
    from tracetool.query import find

    return find(db, args["type"], _filters(args, _FIND_FILTERS, text=True))


def _tree(db: sqlite3.Connection, args: Args) -> Any:
    from tracetool.query import tree

    return tree(
        db,
        args["appmap"],
        depth=args.get("depth"),
        fold=args.get("fold", True),
        limit=args.get("limit"),
    )


def _related(db: sqlite3.Connection, args: Args) -> Any:
    from tracetool.query import related

    return related(db, args["appmap"], limit=args["limit"])


def _hotspots(db: sqlite3.Connection, args: Args) -> Any:
    from tracetool.query import hotspots

    return hotspots(db, args["by"], _filters(args, _HOTSPOT_FILTERS), sort=args["sort"])


def _compare(db: sqlite3.Connection, args: Args) -> Any:
    from tracetool.query import compare

    return compare(db, args["branch_a"], args["branch_b"], _filters(args, _COMPARE_FILTERS))


def _search(db: sqlite3.Connection, args: Args) -> Any:
    from tracetool.query import search

    return search(db, args["text"], limit=args["limit"])


_APPMAP: dict[str, Any] = {
    "type": "string",
    "description": "The recording: its path relative to trace_dir (suffix optional), a file "
    "path, or its metadata name.",
}

TOOLS: tuple[Tool, ...] = (
    Tool(
        "summary",
        "Index summary",
        "What the index holds: counts of recordings, requests, SQL queries, function calls, "
        "exceptions; distinct routes, functions, queries, tables; recordings by branch and test "
        "status; responses by status class. Start here.",
        _schema({}),
        _summary,
        rows=False,
    ),
    Tool(
        "recording",
        "Recording facts",
        "What the index knows about one recording: file, name, labels, test status and failure "
        "message, source location, git branch and commit, when recorded, event/request/query/"
        "call/exception counts, total elapsed ms.",
        _schema({"appmap": _APPMAP}, required=("appmap",)),
        _recording,
        rows=False,
    ),
    Tool(
        "endpoints",
        "Endpoints",
        "One row per HTTP route (method + template): request count, status mix, p50/p95/max "
        "duration in ms, SQL queries per request.",
        _schema({"limit": _limit(None)}, _ENDPOINT_FILTERS),
        _endpoints,
        hint_filters=_ENDPOINT_FILTERS,
    ),
    Tool(
        "find",
        "Find rows",
        "Row-level search. type: appmaps (alias recordings: one row per recording), requests "
        "(HTTP server requests, slowest first), queries (SQL calls), calls (functions per "
        "recording), exceptions, logs. text must appear in the row (full-text for appmaps). "
        "A filter that does not apply to the type is an error that lists the ones that do.",
        _schema(
            {
                "type": {"type": "string", "enum": list(FIND_TYPES), "description": "Row type."},
                "text": {"type": "string", "description": "Text the row must contain."},
                "limit": _limit(100),
            },
            _FIND_FILTERS,
            required=("type",),
        ),
        _find,
        hint_filters=_FIND_FILTERS,
    ),
    Tool(
        "tree",
        "Call tree",
        "Call tree of one recording in pre-order, with timings: rows of depth, kind "
        "(http_server, http_client, sql, function, message), label, count (repeated identical "
        "siblings folded), elapsed_ms, event_id, and route/status for HTTP requests.",
        _schema(
            {
                "appmap": _APPMAP,
                "depth": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Show this many levels below the roots.",
                },
                "fold": {
                    "type": "boolean",
                    "default": True,
                    "description": "Fold repeated identical sibling calls (default true).",
                },
                "limit": _limit(1000),
            },
            required=("appmap",),
        ),
        _tree,
    ),
    Tool(
        "related",
        "Related recordings",
        "Recordings ranked by how much code, routes, queries and tables they share with the "
        "given one (score, shared counts, distinctive shared items).",
        _schema({"appmap": _APPMAP, "limit": _limit(10)}, required=("appmap",)),
        _related,
    ),
    Tool(
        "hotspots",
        "Hotspots",
        "Functions or SQL queries ranked by cumulative elapsed time (total or self): count, "
        "total_ms, self_ms, avg_ms, how many recordings, top recordings.",
        _schema(
            {
                "by": {
                    "type": "string",
                    "enum": ["functions", "queries"],
                    "default": "functions",
                    "description": "Rank functions or SQL queries (default functions).",
                },
                "sort": {
                    "type": "string",
                    "enum": ["total", "self"],
                    "default": "total",
                    "description": "Rank by total or self time (default total).",
                },
                "limit": _limit(20),
            },
            _HOTSPOT_FILTERS,
        ),
        _hotspots,
    ),
    Tool(
        "compare",
        "Compare branches",
        "Per-route latency of branch_b against branch_a: counts, p50 and p95 on each side and "
        "their deltas in ms; routes seen on one side only are marked.",
        _schema(
            {
                "branch_a": {"type": "string", "description": "Base git branch."},
                "branch_b": {"type": "string", "description": "Branch compared with branch_a."},
                "limit": _limit(None),
            },
            _COMPARE_FILTERS,
            required=("branch_a", "branch_b"),
        ),
        _compare,
    ),
    Tool(
        "search",
        "Search recordings",
        "Recordings ranked by full-text relevance (bm25) to any of the words in text: names, "
        "labels, routes, code, SQL and log messages.",
        _schema(
            {"text": {"type": "string", "description": "Words to look for."}, "limit": _limit(10)},
            required=("text",),
        ),
        _search,
    ),
)
BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}


def get_tool(name: str) -> Tool:
    tool = BY_NAME.get(name)
    if tool is None:
        raise UsageError(f"unknown tool {name!r}: use one of {', '.join(BY_NAME)}")
    return tool


def _where(path: Any) -> str:
    return ".".join(str(p) for p in path)


def validate(tool: Tool, arguments: Mapping[str, Any] | None) -> Args:
    """Arguments checked against the tool's schema, with the schema's defaults filled in."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    args = dict(arguments or {})
    error = best_match(Draft202012Validator(tool.input_schema).iter_errors(args))
    if error is not None:
        where = _where(error.absolute_path)
        raise UsageError(f"{tool.name}: {where + ': ' if where else ''}{error.message}")
    for key, prop in tool.input_schema["properties"].items():
        if key not in args and "default" in prop:
            args[key] = prop["default"]
    return args


def open_index(
    args: Mapping[str, Any], trace_dir: str | None = None, query_db: str | None = None
) -> sqlite3.Connection:
    """query.db named by the arguments (query_db, then trace_dir), else the server's."""
    from tracetool.query import open_db

    if args.get("query_db"):
        return open_db(query_db=args["query_db"])
    if args.get("trace_dir"):
        return open_db(trace_dir=args["trace_dir"])
    return open_db(trace_dir, query_db)


def allowed_roots(trace_dir: str | None = None, query_db: str | None = None) -> dict[str, Any]:
    """Where `trace_dir` / `query_db` arguments may point (`check_paths`), for a server started
    in the current directory with these options: the project (trace.yml's directory, else the
    current one), the server's recordings directory and its index's directory, and, for
    `query_db`, the default index location `~/.trace/data`."""
    from pathlib import Path

    from tracetool.config import find_config_file
    from tracetool.paths import DATA_ROOT

    config = find_config_file()
    project = (config.resolve().parent if config is not None else Path.cwd()).resolve()
    common = [project]
    if trace_dir:
        common.append(Path(trace_dir).expanduser().resolve())
    if query_db:
        common.append(Path(query_db).expanduser().resolve().parent)
    return {
        "project": project,
        "trace_dir": tuple(common),
        "query_db": (*common, (Path.home() / DATA_ROOT).resolve()),
    }


def check_paths(args: Mapping[str, Any] | None, roots: Mapping[str, Any]) -> None:
    """UsageError when an argument's `trace_dir` / `query_db` lies outside `roots`."""
    from pathlib import Path

    for key in sorted(DB_KEYS):
        value = (args or {}).get(key)
        if not isinstance(value, str) or not value:
            continue
        try:
            resolved = Path(value).expanduser().resolve()
        except (OSError, RuntimeError, ValueError):
            raise UsageError(f"{key} {value!r} is not a usable path") from None
        if not any(resolved == root or root in resolved.parents for root in roots[key]):
            raise UsageError(
                f"{key} {value!r} is outside the project {roots['project']}; "
                "only paths inside it (or the server's own index) are accepted"
            )


def call_tool(
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    trace_dir: str | None = None,
    query_db: str | None = None,
) -> Any:
    """Run one tool (module doc); raises `TraceToolError` subclasses only for user errors."""
    tool = get_tool(name)
    args = validate(tool, arguments)
    db = open_index(args, trace_dir, query_db)
    try:
        result = tool.run(db, args)
        hints: list[str] = []
        if tool.rows and not result and tool.hint_filters:
            from tracetool.query.find import hints as find_hints

            hints = find_hints(db, _filters(args, tool.hint_filters))
    finally:
        db.close()
    if tool.rows:
        return {"count": len(result), "rows": result, **({"hints": hints} if hints else {})}
    return result


def _coerce(tool: Tool, key: str, text: str) -> Any:
    prop = tool.input_schema["properties"].get(key)
    if prop is None:
        return text  # left for validate() to refuse by name
    kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    if "string" in kinds:
        return text
    if "integer" in kinds:
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"{tool.name}: {key} must be an integer (got {text!r})") from None
    if "boolean" in kinds:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise UsageError(f"{tool.name}: {key} must be true or false (got {text!r})")
    return text


def arguments_from_strings(name: str, params: Mapping[str, str]) -> Args:
    """Typed arguments from text values (empty values count as not given)."""
    tool = get_tool(name)
    return {key: _coerce(tool, key, value) for key, value in params.items() if value != ""}


__all__ = [
    "BY_NAME",
    "DB_KEYS",
    "TOOLS",
    "Tool",
    "arguments_from_strings",
    "allowed_roots",
    "call_tool",
    "check_paths",
    "get_tool",
    "open_index",
    "validate",
]
