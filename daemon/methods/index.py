"""`index.*`: the state of the live index, and indexing given files at once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tracetool_daemon.methods._params import opt_bool, opt_str, str_list
from tracetool_daemon.registry import ParamError, method
from tracetool_daemon.service import Project, Service
from tracetool_daemon.watcher import IGNORED_DIRS

from tracetool.errors import IndexMissingError

MAX_PATHS = 10_000


def _recordings(service: Service, project: Project) -> int | None:
    try:
        db = service.reader(project)
    except IndexMissingError:
        return None
    return int(db.execute("SELECT count(*) FROM recordings").fetchone()[0])


@method(
    "index.numProcessed",
    summary="Recordings added, updated, renamed or deleted since the daemon started.",
    params="{directory?}",
)
def num_processed(service: Service, directory: Any = None) -> int:
    project = service.project(opt_str(directory, "directory"))
    return project.live.num_processed if project.live is not None else 0


@method(
    "index.status",
    summary="State of the live index: state, counts, queue, last batch, skipped files.",
    params="{directory?}",
)
def status(service: Service, directory: Any = None) -> dict[str, Any]:
    project = service.project(opt_str(directory, "directory"))
    if project.live is not None:
        out = project.live.status()
    else:
        out = {
            "state": "not watching",
            "traceDir": str(project.trace_dir),
            "queryDb": str(project.query_db),
            "watching": False,
            "numProcessed": 0,
            "queued": 0,
        }
    out["directory"] = str(project.directory)
    out["recordings"] = _recordings(service, project)
    return out


def _check_path(project: Project, text: str) -> tuple[Path | None, str | None]:
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = project.trace_dir / path
    resolved = Path(os.path.realpath(path.parent)) / path.name  # the file itself may be gone
    if not resolved.is_relative_to(project.trace_dir):
        return None, f"not inside the recordings directory {project.trace_dir}"
    if not resolved.name.endswith((".trace.json", ".appmap.json")):
        return None, "not a recording (*.trace.json or *.appmap.json)"
    if any(part in IGNORED_DIRS for part in resolved.relative_to(project.trace_dir).parts[:-1]):
        return None, "in an ignored folder"
    return resolved, None


@method(
    "index.files",
    summary="Index these recording files now (present: indexed; absent: forgotten).",
    params="{paths: [path], wait?: bool, directory?}",
)
def index_files(
    service: Service, paths: Any, wait: Any = None, directory: Any = None
) -> dict[str, Any]:
    names = str_list(paths, "paths")
    if len(names) > MAX_PATHS:
        raise ParamError(f"paths: at most {MAX_PATHS} paths per call")
    project = service.project(opt_str(directory, "directory"))
    accepted: list[Path] = []
    rejected: list[dict[str, str]] = []
    for name in names:
        path, reason = _check_path(project, name)
        if path is None:
            rejected.append({"path": name, "reason": reason or "refused"})
        else:
            accepted.append(path)
    out: dict[str, Any] = {
        "accepted": [service.relpath(project, p) for p in accepted],
        "rejected": rejected,
    }
    if not accepted:
        return out
    if project.live is not None:
        outcome = project.live.submit(accepted, wait=opt_bool(wait, "wait", False))
    else:
        from tracetool.index import IndexOptions, index_paths

        outcome = {}
        index_paths(
            project.trace_dir,
            accepted,
            IndexOptions(query_db=project.query_db, workers=1),
            report=outcome.__setitem__,
        )
        outcome = {rel: outcome.get(rel, "unchanged") for rel in out["accepted"]}
    if outcome is not None:
        out["outcomes"] = outcome
    return out
