"""`query.*`: every `tracetool query` verb, with the CLI's filters as parameters.

Filter parameters take the same text as the CLI options (`status: ">=500"`, `duration:
">100ms"`, `route: "GET /users/{id}"`, `since: "2d"`, ...); `class` is spelled `class`
(or `className`). Results are the rows `tracetool.query` returns (what `--json` prints).
"""

from __future__ import annotations

from typing import Any

from tracetool_daemon.methods._params import opt_bool, opt_int, opt_str, req_str
from tracetool_daemon.registry import ParamError, method
from tracetool_daemon.service import Service

FILTER_KEYS = (
    "route",
    "class",
    "className",
    "method",
    "status",
    "duration",
    "branch",
    "commit",
    "since",
    "until",
    "table",
    "text",
)
FILTERS_DOC = (
    "route?, class?, method?, status?, duration?, branch?, commit?, since?, until?, table?"
)
MAX_LIMIT = 100_000


def filters_from(params: dict[str, Any], verb: str, extra: tuple[str, ...] = ()) -> Any:
    """`tracetool.query.Filters` from JSON-RPC params; unknown keys are refused by name."""
    unknown = sorted(set(params) - set(FILTER_KEYS) - {"limit"} - set(extra))
    if unknown:
        raise ParamError(f"{verb} does not take {', '.join(unknown)}")
    from tracetool.query import parse_filters

    values: dict[str, Any] = {}
    for key in FILTER_KEYS:
        if key in params and key not in extra:
            value = params[key]
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = str(value)  # status: 500
            target = "class_" if key in ("class", "className") else key
            values[target] = opt_str(value, key)
    limit = opt_int(params.get("limit"), "limit", minimum=1, maximum=MAX_LIMIT)
    return parse_filters(**values, limit=limit)


def _split(params: dict[str, Any], *names: str) -> tuple[dict[str, Any], dict[str, Any]]:
    own = {n: params.pop(n) for n in names if n in params}
    return own, params


@method(
    "query.endpoints",
    summary="Per-route summary: count, statuses, p50/p95/max latency, SQL per request.",
    params=f"{{{FILTERS_DOC}, limit?, directory?}}",
)
def endpoints(service: Service, **params: Any) -> list[dict[str, Any]]:
    from tracetool.query import endpoints as run

    own, rest = _split(params, "directory")
    project = service.project(opt_str(own.get("directory"), "directory"))
    filters = filters_from(rest, "query.endpoints")
    return run(service.reader(project), filters)


@method(
    "query.find",
    summary="Row-level search: appmaps (recordings), requests, queries, calls, exceptions, logs.",
    params=f"{{type, {FILTERS_DOC}, text?, limit?, directory?}}",
)
def find(service: Service, **params: Any) -> list[dict[str, Any]]:
    from tracetool.query import find as run

    own, rest = _split(params, "type", "directory")
    project = service.project(opt_str(own.get("directory"), "directory"))
    type_ = req_str(own.get("type"), "type")
    filters = filters_from(rest, "query.find")
    return run(service.reader(project), type_, filters)


@method(
    "query.tree",
    summary="Call tree of one recording (rows with depth), folded repeats unless fold=false.",
    params="{appmap, depth?, fold?, limit?, directory?}",
)
def tree(
    service: Service,
    appmap: Any,
    depth: Any = None,
    fold: Any = None,
    limit: Any = None,
    directory: Any = None,
) -> list[dict[str, Any]]:
    from tracetool.query import tree as run

    project = service.project(opt_str(directory, "directory"))
    ref = req_str(appmap, "appmap")
    kwargs: dict[str, Any] = {
        "depth": opt_int(depth, "depth", minimum=1),
        "fold": opt_bool(fold, "fold", True),
    }
    if limit is not None:
        kwargs["limit"] = opt_int(limit, "limit", minimum=1, maximum=MAX_LIMIT)
    return run(service.reader(project), ref, **kwargs)


@method(
    "query.related",
    summary="Recordings most similar to the given one, with score and shared items.",
    params="{appmap, limit?, directory?}",
)
def related(
    service: Service, appmap: Any, limit: Any = None, directory: Any = None
) -> list[dict[str, Any]]:
    from tracetool.query import related as run

    project = service.project(opt_str(directory, "directory"))
    ref = req_str(appmap, "appmap")
    count = opt_int(limit, "limit", minimum=1, maximum=MAX_LIMIT)
    return run(service.reader(project), ref, limit=count)


@method(
    "query.hotspots",
    summary="Functions or SQL queries ranked by cumulative (or self) elapsed time.",
    params=f"{{kind?: functions|queries, sort?: total|self, {FILTERS_DOC}, limit?, directory?}}",
)
def hotspots(service: Service, **params: Any) -> list[dict[str, Any]]:
    from tracetool.query import hotspots as run

    own, rest = _split(params, "kind", "sort", "directory")
    project = service.project(opt_str(own.get("directory"), "directory"))
    kind = opt_str(own.get("kind"), "kind") or "functions"
    sort = opt_str(own.get("sort"), "sort") or "total"
    filters = filters_from(rest, "query.hotspots")
    return run(service.reader(project), kind, filters, sort=sort)


@method(
    "query.compare",
    summary="Per-route latency of branch b against branch a.",
    params="{a, b, route?, status?, since?, until?, limit?, directory?}",
)
def compare(service: Service, **params: Any) -> list[dict[str, Any]]:
    from tracetool.query import compare as run

    own, rest = _split(params, "a", "b", "directory")
    project = service.project(opt_str(own.get("directory"), "directory"))
    a, b = req_str(own.get("a"), "a"), req_str(own.get("b"), "b")
    filters = filters_from(rest, "query.compare")
    return run(service.reader(project), a, b, filters)
