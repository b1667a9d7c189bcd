"""The language server's workspace commands: data for clients to show (see server module doc).

Arguments are one object (`{uri?, fqid}`, `{uri?, recording, format?}`) or positional strings.
`uri` — any file or folder of the project — picks the project; without it the workspace's only
project is used. A user's mistake (bad argument, unknown function or recording, no index) is a
JSON-RPC error with a one-line message: InvalidParams (-32602) for arguments and names,
RequestFailed (-32803) for the index's state; pygls does not log it as a crash.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.uris import to_fs_path
from tracetool_daemon.lsp import render
from tracetool_daemon.lsp.project import Project
from tracetool_daemon.lsp.server import (
    FUNCTION_DETAIL,
    REFRESH,
    SEQUENCE_DIAGRAM,
    SHOW_RECORDINGS,
    TraceLanguageServer,
    log,
)

from tracetool.errors import NotFoundError, TraceToolError, UsageError

MAX_RECORDINGS = 200


def command_args(args: tuple[Any, ...], key: str) -> dict[str, Any]:
    """Command arguments: one object, or positional `(value, ...)` naming `key` first."""
    if len(args) == 1 and isinstance(args[0], dict):
        return dict(args[0])
    if args and isinstance(args[0], str):
        out: dict[str, Any] = {key: args[0]}
        if len(args) > 1 and isinstance(args[1], str):
            out["format"] = args[1]
        return out
    raise UsageError(f"expected an object with {key!r} (or the {key} as a string)")


class CommandError(JsonRpcException):
    """A command's user error (bad argument, unknown function, no index): one-line message."""


def as_rpc_error(exc: TraceToolError) -> CommandError:
    # InvalidParams for what the caller got wrong, LSP's RequestFailed for the index's state.
    code = -32602 if isinstance(exc, (UsageError, NotFoundError)) else -32803
    return CommandError(message=str(exc), code=code)


class _QuietUserErrors(logging.Filter):
    """pygls logs every failed request with a traceback; a user's mistake is not a crash."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, CommandError):
            log.info("command failed: %s", exc.message)
            return False
        return True


def command_project(ls: TraceLanguageServer, args: dict[str, Any]) -> Project:
    """The project a command is about: its `uri`, else the workspace's only project."""
    uri = args.get("uri")
    if isinstance(uri, str):
        path = to_fs_path(uri) if uri.startswith("file:") else None
        project = ls.project_at(Path(path)) if path else None
        if project is None:
            raise UsageError(f"{uri}: not in a project with a trace.yml")
        return project
    for directory in ls.workspace_dirs():
        ls.project_at(directory)
    projects = ls.projects.all()
    if len(projects) == 1:
        return projects[0]
    if not projects:
        raise UsageError("no trace.yml in the workspace; pass `uri` of a file in the project")
    raise UsageError("several projects in the workspace; pass `uri` of a file in one of them")


def command_daemon(ls: TraceLanguageServer, args: dict[str, Any]) -> Project:
    """The project of a command, with its daemon answering."""
    project = command_project(ls, args)
    if not project.available():
        raise TraceToolError(project.missing or "the tracetool daemon is not running")
    return project


def daemon_error(exc: TraceToolError) -> CommandError:
    """A daemon's JSON-RPC error as the command's: bad params and not-found are the caller's."""
    code = getattr(exc, "code", None)
    if code in (-32602, -32001):
        return CommandError(message=str(exc), code=-32602)
    return as_rpc_error(exc)


def register_commands(server: TraceLanguageServer) -> None:
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietUserErrors())

    @server.command(SHOW_RECORDINGS)
    def show_recordings(ls: TraceLanguageServer, *args: Any) -> dict[str, Any]:
        try:
            arg = command_args(args, "fqid")
            project = command_daemon(ls, arg)
            fqid = str(arg.get("fqid") or "")
            detail = project.call("source.function", fqid=fqid, top=0)
            limit = int(arg.get("limit") or MAX_RECORDINGS)
            rows = project.call("source.recordings", fqid=fqid, limit=limit)
        except TraceToolError as exc:
            raise daemon_error(exc) from None
        return render.recordings_result(detail, rows)

    @server.command(FUNCTION_DETAIL)
    def function_detail_command(ls: TraceLanguageServer, *args: Any) -> dict[str, Any]:
        try:
            arg = command_args(args, "fqid")
            project = command_daemon(ls, arg)
            detail: dict[str, Any] = project.call(
                "source.function", fqid=str(arg.get("fqid") or "")
            )
            return detail
        except TraceToolError as exc:
            raise daemon_error(exc) from None

    @server.command(SEQUENCE_DIAGRAM)
    def sequence_diagram(ls: TraceLanguageServer, *args: Any) -> dict[str, Any]:
        try:
            arg = command_args(args, "recording")
            fmt = str(arg.get("format") or "plantuml")
            if fmt not in ("plantuml", "json", "svg"):
                raise UsageError(f"unknown diagram format {fmt!r} (plantuml, json, svg)")
            project = command_daemon(ls, arg)
            facts = project.call("appmap.recording", appmap=str(arg.get("recording") or ""))
            text = project.call("appmap.sequenceDiagram", appmap=facts["recording"], format=fmt)
        except TraceToolError as exc:
            raise daemon_error(exc) from None
        return {
            "recording": facts["recording"],
            "name": facts["name"],
            "file": facts["file"],
            "format": fmt,
            "diagram": text,
        }

    @server.command(REFRESH)
    def refresh_command(ls: TraceLanguageServer, *args: Any) -> dict[str, Any]:
        for project in ls.projects.all():
            project.close()
        ls.refresh(everything=True, settle=False)
        return {
            "projects": [
                {
                    "root": str(p.root),
                    "trace_dir": str(p.trace_dir),
                    "query_db": str(p.query_db),
                    "indexed": p.available(),
                    "missing": p.missing,
                }
                for p in ls.projects.all()
            ]
        }
