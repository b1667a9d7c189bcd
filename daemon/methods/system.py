"""`system.*`: what this server offers."""

from __future__ import annotations

import os
from typing import Any

from tracetool_daemon.methods._params import opt_bool
from tracetool_daemon.registry import METHODS, method
from tracetool_daemon.service import Service


@method(
    "system.listMethods",
    summary="Names of every method (with verbose: their parameters and summaries).",
    params="{verbose?}",
)
def list_methods(service: Service, verbose: Any = None) -> Any:
    names = sorted(METHODS)
    if not opt_bool(verbose, "verbose", False):
        return names
    return [{"name": n, "params": METHODS[n].params, "summary": METHODS[n].summary} for n in names]


@method(
    "system.version",
    summary="Tool version, process id, start time and the directories served.",
)
def version(service: Service) -> dict[str, Any]:
    return {
        "version": service.version,
        "pid": os.getpid(),
        "startedAt": service.started_at,
        "projects": [p.to_json() for p in service.projects],
    }
