"""What editors show: the recordings tree, the recording viewer, and facts by source location.

The VS Code extension (recordings view, viewer webview) and the language server (lenses,
hovers, diagnostics) call these; each is one core function (`tracetool.query.browse`,
`tracetool.diagram.view`, `tracetool.query.tree`, `tracetool.query.source`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracetool_daemon.methods._params import opt_int, opt_str, req_str, str_list
from tracetool_daemon.methods.recordings import (
    _filter_state,
    _indexed_relpath,
    diagram_options,
)
from tracetool_daemon.registry import ParamError, method
from tracetool_daemon.service import Project, Service

TREE_LIMIT = 2000


@method(
    "appmap.groups",
    summary="Indexed recordings grouped by test file / route, with failed, exception and N+1 flags.",
    params="{text?, nPlusOne?: 10, directory?}",
)
def groups(
    service: Service, text: Any = None, nPlusOne: Any = None, directory: Any = None
) -> dict[str, Any]:
    from tracetool.query import recording_groups

    project = service.project(opt_str(directory, "directory"))
    threshold = opt_int(nPlusOne, "nPlusOne")
    rows = recording_groups(
        service.reader(project), opt_str(text, "text"), 10 if threshold is None else threshold
    )
    return {
        "directory": str(project.directory),
        "traceDir": str(project.trace_dir),
        "groups": rows,
    }


@method(
    "appmap.view",
    summary="Everything the recording viewer shows: interactive SVG sequence diagram, call tree "
    "with timings, SQL and source locations, HTTP requests and responses, encoded filter.",
    params="{appmap, filter?, diagramOptions?: {loops?, expand?, exclude?}, treeLimit?, "
    "directory?}",
)
def view(
    service: Service,
    appmap: Any,
    filter: Any = None,
    diagramOptions: Any = None,
    treeLimit: Any = None,
    directory: Any = None,
) -> dict[str, Any]:
    from tracetool.diagram.view import recording_view
    from tracetool.query import tree

    project = service.project(opt_str(directory, "directory"))
    rel, path = _indexed_relpath(service, project, appmap)
    limit = opt_int(treeLimit, "treeLimit", minimum=1, maximum=100_000) or TREE_LIMIT
    out = recording_view(path, _filter_state(filter), diagram_options(diagramOptions))
    out["recording"] = rel
    out["file"] = str(path)
    out["directory"] = str(project.directory)
    out["tree"] = tree(service.reader(project), rel, limit=limit)
    return out


@method(
    "appmap.recording",
    summary="One indexed recording's facts: name, path, file, status, counts (query.recording).",
    params="{appmap, directory?}",
)
def recording_facts(service: Service, appmap: Any, directory: Any = None) -> dict[str, Any]:
    from tracetool.query import recording

    project = service.project(opt_str(directory, "directory"))
    facts: dict[str, Any] = recording(service.reader(project), req_str(appmap, "appmap"))
    return facts


def _source_paths(project: Project, file: str) -> list[str]:
    """How the agent may have written `file`: relative to the project directory, else absolute."""
    resolved = Path(file).expanduser().resolve()
    out = []
    try:
        out.append(resolved.relative_to(project.directory.resolve()).as_posix())
    except ValueError:
        pass
    out.append(resolved.as_posix())
    return out


@method(
    "source.functions",
    summary="Recorded functions of one source file (by the location the agent wrote), by line.",
    params="{path, directory?}",
)
def source_functions(service: Service, path: Any, directory: Any = None) -> list[dict[str, Any]]:
    from tracetool.query import functions_in_file

    project = service.project(opt_str(directory, "directory"))
    return functions_in_file(service.reader(project), _source_paths(project, req_str(path, "path")))


@method(
    "source.function",
    summary="One recorded function: figures, top recordings, SQL, exceptions, tests reaching it.",
    params="{fqid, top?: 5, directory?}",
)
def source_function(
    service: Service, fqid: Any, top: Any = None, directory: Any = None
) -> dict[str, Any]:
    from tracetool.query import function_detail

    project = service.project(opt_str(directory, "directory"))
    n = opt_int(top, "top", maximum=100)
    return function_detail(service.reader(project), req_str(fqid, "fqid"), 5 if n is None else n)


@method(
    "source.recordings",
    summary="The recordings that called a function, most time first.",
    params="{fqid, limit?: 100, directory?}",
)
def source_recordings(
    service: Service, fqid: Any, limit: Any = None, directory: Any = None
) -> list[dict[str, Any]]:
    from tracetool.query import function_recordings

    project = service.project(opt_str(directory, "directory"))
    n = opt_int(limit, "limit", minimum=1, maximum=10_000) or 100
    return function_recordings(service.reader(project), req_str(fqid, "fqid"), n)


@method(
    "source.findings",
    summary="Findings of these functions: exceptions that left them, N+1 queries, slow queries.",
    params="{fqids: [fqid], nPlusOne?: 10, slowMs?: 100, directory?}",
)
def source_findings(
    service: Service,
    fqids: Any,
    nPlusOne: Any = None,
    slowMs: Any = None,
    directory: Any = None,
) -> dict[str, Any]:
    from tracetool.query import function_exceptions, repeated_queries, slow_queries

    project = service.project(opt_str(directory, "directory"))
    wanted = str_list(fqids, "fqids")
    threshold = opt_int(nPlusOne, "nPlusOne")
    if slowMs is not None and (isinstance(slowMs, bool) or not isinstance(slowMs, (int, float))):
        raise ParamError("slowMs must be a number of milliseconds")
    db = service.reader(project)
    return {
        "exceptions": function_exceptions(db, wanted),
        "nPlusOne": repeated_queries(db, wanted, 10 if threshold is None else threshold),
        "slowQueries": slow_queries(db, wanted, 100.0 if slowMs is None else float(slowMs)),
    }
