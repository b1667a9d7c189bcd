"""Recording data: list, metadata, data (filtered), sequence diagram, stats, search.

`appmap.data` and `appmap.sequenceDiagram` are registered only when `tracetool.filters` and
`tracetool.diagram` are installed (they come with the diagram feature), so the method list
never names a method that cannot work.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from tracetool_daemon.methods._params import opt_int, opt_str, req_str, str_list
from tracetool_daemon.methods.query import filters_from
from tracetool_daemon.registry import ParamError, method
from tracetool_daemon.service import Project, Service

from tracetool.errors import NotFoundError

MAX_RESULTS = 1000


@method(
    "appmap.list",
    summary="Indexed recordings, newest first, optionally filtered like `query find appmaps`.",
    params="{directory?, route?, class?, method?, status?, duration?, branch?, commit?, "
    "since?, until?, table?, text?, limit?}",
)
def list_recordings(service: Service, **params: Any) -> list[dict[str, Any]]:
    from tracetool.query import find

    project = service.project(opt_str(params.pop("directory", None), "directory"))
    filters = filters_from(params, "appmap.list")
    rows = find(service.reader(project), "appmaps", filters)
    for row in rows:
        row["path"] = str(project.trace_dir / row["recording"])
    return rows


def _indexed_relpath(service: Service, project: Project, appmap: Any) -> tuple[str, Any]:
    path = service.recording_file(project, req_str(appmap, "appmap"))
    return service.relpath(project, path), path


@method(
    "appmap.metadata",
    summary="The metadata of an indexed recording (from its index sidecar).",
    params="{appmap, directory?}",
)
def metadata(service: Service, appmap: Any, directory: Any = None) -> dict[str, Any]:
    from tracetool.index import read_sidecar, sidecar_path

    project = service.project(opt_str(directory, "directory"))
    rel, _ = _indexed_relpath(service, project, appmap)
    sidecar = read_sidecar(sidecar_path(project.query_db, rel))
    if not sidecar:
        raise NotFoundError(f"{rel}: not indexed yet")
    data: dict[str, Any] = sidecar.get("metadata") or {}
    return data


@method(
    "appmap.stats",
    summary="Packages, classes, routes and tables seen in the indexed recordings, and their count.",
    params="{directory?}",
)
def stats(service: Service, directory: Any = None) -> dict[str, Any]:
    project = service.project(opt_str(directory, "directory"))
    db = service.reader(project)
    by_type: dict[str, list[str]] = {}
    for type_, name in db.execute(
        "SELECT type, name FROM code_objects WHERE type IN ('class', 'route', 'table') "
        "ORDER BY type, name"
    ):
        by_type.setdefault(type_, []).append(name)
    classes = by_type.get("class", [])
    packages = sorted({c.rsplit("/", 1)[0] for c in classes if "/" in c})
    count = db.execute("SELECT count(*) FROM recordings").fetchone()[0]
    return {
        "packages": packages,
        "classes": classes,
        "routes": by_type.get("route", []),
        "tables": by_type.get("table", []),
        "numAppMaps": int(count),
    }


@method(
    "search",
    summary="Recordings ranked by full-text relevance (SQLite FTS5 over the index).",
    params="{query, appmaps?: [path], maxResults?, directory?}",
)
def search(
    service: Service,
    query: Any,
    appmaps: Any = None,
    maxResults: Any = None,
    directory: Any = None,
) -> dict[str, Any]:
    text = req_str(query, "query")
    limit = opt_int(maxResults, "maxResults", minimum=1, maximum=MAX_RESULTS) or 10
    wanted = str_list(appmaps, "appmaps")
    from tracetool.query import search as fts_search

    projects = [service.project(opt_str(directory, "directory"))] if directory else service.projects
    results: list[dict[str, Any]] = []
    for project in projects:
        only = {_indexed_relpath(service, project, a)[0] for a in wanted} if wanted else None
        fetch = MAX_RESULTS if only else limit
        for row in fts_search(service.reader(project), text, fetch):
            if only is not None and row["recording"] not in only:
                continue
            results.append(
                {
                    "appmap": str(project.trace_dir / row["recording"]),
                    "recording": row["recording"],
                    "name": row.get("name"),
                    "directory": str(project.directory),
                    "score": row.get("score"),
                }
            )
    results.sort(key=lambda r: -(r["score"] or 0))
    results = results[:limit]
    return {"results": results, "numResults": len(results)}


def _filter_state(value: Any) -> Any:
    from tracetool.filters import decode

    if value is None:
        return None
    if not isinstance(value, (str, dict)):
        raise ParamError("filter must be a filter object, its JSON text or its base64 encoding")
    return decode(value, source="filter")


def _data(service: Service, appmap: Any, filter: Any = None, directory: Any = None) -> Any:
    from tracetool.filters import apply_filter
    from tracetool.trace import load

    project = service.project(opt_str(directory, "directory"))
    _, path = _indexed_relpath(service, project, appmap)
    state = _filter_state(filter)
    doc = load(path)
    if state is not None:
        doc = apply_filter(doc, state)
    return doc.data


DIAGRAM_FORMATS = ("json", "plantuml", "text", "svg")


def _sequence_diagram(
    service: Service,
    appmap: Any,
    filter: Any = None,
    format: Any = None,
    diagramOptions: Any = None,
    directory: Any = None,
) -> Any:
    from tracetool.diagram import diagram_of, render, to_json

    project = service.project(opt_str(directory, "directory"))
    _, path = _indexed_relpath(service, project, appmap)
    fmt = opt_str(format, "format") or "json"
    if fmt not in DIAGRAM_FORMATS:
        raise ParamError(f"format must be one of {', '.join(DIAGRAM_FORMATS)}")
    diagram = diagram_of(path, _filter_state(filter), diagram_options(diagramOptions))
    if fmt == "json":
        return to_json(diagram)
    if fmt == "svg":
        from tracetool.diagram.svg import render_svg

        return render_svg(diagram)
    return render(diagram, fmt)


def diagram_options(value: Any) -> Any:
    """`diagramOptions` ({loops?, expand?, exclude?}) as `DiagramOptions`."""
    from tracetool.diagram import DiagramOptions

    opts = value if value is not None else {}
    if not isinstance(opts, dict) or set(opts) - {"loops", "expand", "exclude"}:
        raise ParamError("diagramOptions takes loops (bool), expand and exclude (lists)")
    loops = opts.get("loops", True)
    if not isinstance(loops, bool):
        raise ParamError("diagramOptions.loops must be true or false")
    return DiagramOptions(
        expand=tuple(str_list(opts.get("expand"), "diagramOptions.expand")),
        exclude=tuple(str_list(opts.get("exclude"), "diagramOptions.exclude")),
        loops=loops,
    )


def _available(*modules: str) -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except ImportError:
        return False


if _available("tracetool.filters"):
    method(
        "appmap.data",
        summary="The recording's JSON, after an optional filter (FilterState object or encoded).",
        params="{appmap, filter?, directory?}",
    )(_data)

if _available("tracetool.filters", "tracetool.diagram"):
    method(
        "appmap.sequenceDiagram",
        summary="The recording's sequence diagram as JSON, PlantUML, text or SVG.",
        params="{appmap, filter?, format?: json|plantuml|text|svg, "
        "diagramOptions?: {loops?, expand?, exclude?}, directory?}",
    )(_sequence_diagram)
