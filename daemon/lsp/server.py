"""The tracetool language server (pygls): recorded runtime facts next to Python source.

For a Python file inside a project with a trace.yml and an index (query.db):

- code lenses above recorded functions, "▶ called N× in M recordings · p50 X ms", whose command
  is `tracetool.showRecordings` with `{uri, fqid}`;
- hover on a recorded function's decorator or signature lines: counts, total/self/p50/max
  time, top recordings, SQL it issued, exceptions that left it;
- diagnostics (Information, source "tracetool"): exceptions raised in (or leaving) recorded
  functions, N+1 queries (one normalized query issued `nPlusOneThreshold` (10) times or
  more within one request) and slow queries (`slowQueryMs`, 100 ms or more);
- workspace commands returning data for the client to show:
  `tracetool.showRecordings {uri?, fqid}` → {function, name, location, count, recordings: [...]},
  `tracetool.sequenceDiagram {recording, uri?, format?: "plantuml"|"json"}` →
  {recording, name, file, format, diagram}, `tracetool.functionDetail {uri?, fqid}` → the hover
  data, `tracetool.refresh` → {projects: [...]} after re-reading every index.

All data comes from the daemon serving the project's recordings (JSON-RPC over HTTP on
127.0.0.1, `tracetool_daemon.client`): the running one, else one the server starts (and stops
on exit). The daemon keeps the index up to date; the server polls its `index.status`
(`pollInterval`, default 2 s, and on `workspace/didChangeWatchedFiles`) and, when recordings were
indexed, asks the client to refresh code lenses and republishes diagnostics. When the daemon
cannot be started the server sends one `window/showMessage` per project saying why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from tracetool_daemon.lsp import render
from tracetool_daemon.lsp.project import Project, Projects, Settings
from tracetool_daemon.lsp.source import Match, SourceFunction, function_at, match, outline

from tracetool import __version__
from tracetool.errors import TraceToolError

log = logging.getLogger("tracetool.lsp")

SOURCE = "tracetool"
SHOW_RECORDINGS = "tracetool.showRecordings"
SEQUENCE_DIAGRAM = "tracetool.sequenceDiagram"
FUNCTION_DETAIL = "tracetool.functionDetail"
REFRESH = "tracetool.refresh"
DEBOUNCE = 0.4  # seconds after the last edit before diagnostics are recomputed


class TraceLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("tracetool-lsp", __version__)
        self.projects = Projects()
        self.outlines: dict[str, list[SourceFunction]] = {}
        self._poller: asyncio.Task[None] | None = None
        self._pending: dict[str, asyncio.TimerHandle] = {}

    # -- documents -----------------------------------------------------------------------------

    def file_of(self, uri: str) -> Path | None:
        if not uri.startswith("file:") or not uri.endswith(".py"):
            return None
        path = to_fs_path(uri)
        return Path(path) if path else None

    def project_of(self, uri: str) -> tuple[Project, Path] | None:
        file = self.file_of(uri)
        if file is None:
            return None
        project = self.project_at(file)
        return (project, file) if project is not None else None

    def project_at(self, path: Path) -> Project | None:
        """The project of a source file, or of a directory (a workspace folder)."""
        file = path / "x.py" if path.is_dir() else path
        project = self.projects.for_file(file)
        self.report_problems()
        return project

    def workspace_dirs(self) -> list[Path]:
        uris = [f.uri for f in self.workspace.folders.values()]
        if not uris and self.workspace.root_uri:
            uris.append(self.workspace.root_uri)
        paths = [to_fs_path(uri) for uri in uris]
        return [Path(p) for p in dict.fromkeys(paths) if p]

    def matches(self, uri: str) -> tuple[Project, Path, list[Match]] | None:
        found = self.project_of(uri)
        if found is None:
            return None
        project, file = found
        recorded = project.functions(file)
        self.notice_missing(project)
        if not recorded:
            return project, file, []
        functions = outline(self.workspace.get_text_document(uri).source)
        if functions is None:  # mid-edit: keep the last outline that parsed
            functions = self.outlines.get(uri, [])
        else:
            self.outlines[uri] = functions
        return project, file, match(recorded, functions)

    # -- messages ------------------------------------------------------------------------------

    def notice_missing(self, project: Project) -> None:
        if project.missing and not project.missing_reported:
            project.missing_reported = True
            self.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning, message=f"tracetool: {project.missing}"
                )
            )

    def report_problems(self) -> None:
        for problem in self.projects.take_problems():
            self.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Error, message=f"tracetool: {problem}"
                )
            )

    # -- diagnostics ---------------------------------------------------------------------------

    def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        found = self.matches(uri)
        if found is None:
            return []
        project, file, matches = found
        if not matches or not project.available():
            return []
        from tracetool.query.source import split_location

        by_fqid = {m.recorded["fqid"]: m for m in matches}
        settings = self.projects.settings
        findings = project.call(
            "source.findings",
            fqids=list(by_fqid),
            nPlusOne=settings.n_plus_one,
            slowMs=settings.slow_ms,
        )
        lines = self.workspace.get_text_document(uri).lines
        out: list[types.Diagnostic] = []
        if settings.exceptions:
            own_paths = project.source_paths(file)
            for row in findings["exceptions"]:
                m = by_fqid[row["function"]]
                path, line = split_location(row["location"])
                here = (
                    m.exact and line is not None and path in own_paths and m.function.contains(line)
                )
                rng = line_range(lines, line) if here and line else name_range(m.function)
                message = render.exception_message(row, m.function.name, here)
                out.append(diagnostic(rng, message, "exception"))
        if settings.n_plus_one:
            for row in findings["nPlusOne"]:
                m = by_fqid[row["function"]]
                out.append(
                    diagnostic(name_range(m.function), render.n_plus_one_message(row), "n-plus-one")
                )
        if settings.slow_ms:
            for row in findings["slowQueries"]:
                m = by_fqid[row["function"]]
                out.append(
                    diagnostic(name_range(m.function), render.slow_query_message(row), "slow-query")
                )
        return out

    def publish(self, uri: str) -> None:
        try:
            found = self.diagnostics(uri)
        except Exception:  # a broken index must not take the editor's session down
            log.exception("diagnostics for %s failed", uri)
            found = []
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=found)
        )

    def publish_later(self, uri: str) -> None:
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        loop = asyncio.get_running_loop()
        self._pending[uri] = loop.call_later(DEBOUNCE, self._publish_pending, uri)

    def _publish_pending(self, uri: str) -> None:
        self._pending.pop(uri, None)
        if uri in self.workspace.text_documents:
            self.publish(uri)

    # -- refresh -------------------------------------------------------------------------------

    def refresh(self, *, everything: bool = False, settle: bool = True) -> bool:
        """Re-read changed indexes; refresh lenses and diagnostics. True if anything changed.

        The poller lets a change settle (Project.poll); a file-watcher event or the refresh
        command says the index is ready, so it is read at once."""
        changed = [p for p in self.projects.all() if p.poll(settle=settle)]
        for project in self.projects.all():
            self.notice_missing(project)
        if not changed and not everything:
            return False
        for project in changed:
            log.info("index changed: %s", project.trace_dir)
        caps = self.client_capabilities.workspace
        if caps is not None and caps.code_lens is not None and caps.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)
        for uri in list(self.workspace.text_documents):
            found = self.project_of(uri)
            if found is not None and (everything or found[0] in changed):
                self.publish(uri)
        return True

    async def poll(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                self.refresh()
            except Exception:
                log.exception("refresh failed")

    def start_polling(self) -> None:
        interval = self.projects.settings.poll_interval
        if interval > 0 and self._poller is None:
            self._poller = asyncio.get_running_loop().create_task(self.poll(interval))

    def stop_polling(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None


def line_range(lines: Sequence[str], line: int) -> types.Range:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    start = len(text) - len(text.lstrip())
    end = len(text.rstrip("\r\n").rstrip())
    return types.Range(types.Position(line - 1, start), types.Position(line - 1, max(end, start)))


def name_range(fn: SourceFunction) -> types.Range:
    return types.Range(
        types.Position(fn.def_line - 1, fn.name_col),
        types.Position(fn.def_line - 1, fn.name_col + len(fn.name)),
    )


def diagnostic(rng: types.Range, message: str, code: str) -> types.Diagnostic:
    return types.Diagnostic(
        range=rng,
        message=message,
        severity=types.DiagnosticSeverity.Information,
        source=SOURCE,
        code=code,
    )


def create_server() -> TraceLanguageServer:
    """A server with every feature registered (see module doc)."""
    from tracetool_daemon.lsp.commands import register_commands

    server = TraceLanguageServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: TraceLanguageServer, params: types.InitializeParams) -> None:
        ls.projects = Projects(Settings.from_options(params.initialization_options))

    @server.feature(types.INITIALIZED)
    async def initialized(ls: TraceLanguageServer, params: types.InitializedParams) -> None:
        for directory in ls.workspace_dirs():
            project = ls.project_at(directory)
            if project is not None:
                project.available()  # takes the index's stamp: later changes trigger a refresh
                ls.notice_missing(project)
        ls.report_problems()
        dynamic = ls.client_capabilities.workspace
        watched = dynamic.did_change_watched_files if dynamic is not None else None
        if watched is not None and watched.dynamic_registration:
            ls.client_register_capability(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id="tracetool-config",
                            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                watchers=[types.FileSystemWatcher(glob_pattern="**/trace.yml")]
                            ),
                        )
                    ]
                ),
            )
        ls.start_polling()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: TraceLanguageServer, params: None) -> None:
        ls.stop_polling()
        for project in ls.projects.all():
            project.close()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TraceLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TraceLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TraceLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        if ls.file_of(params.text_document.uri) is not None:
            ls.publish_later(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TraceLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.outlines.pop(uri, None)
        pending = ls._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        if ls.file_of(uri) is not None:
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: TraceLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
        configs = [c for c in params.changes if c.uri.endswith("/trace.yml")]
        for change in configs:
            path = to_fs_path(change.uri)
            ls.projects.forget(Path(path) if path else None)
        ls.refresh(everything=bool(configs), settle=False)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: TraceLanguageServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        uri = params.text_document.uri
        found = ls.matches(uri)
        if found is None:
            return []
        lenses = []
        for m in found[2]:
            fn = m.function
            at = types.Position(fn.first_line - 1, fn.first_col)
            lenses.append(
                types.CodeLens(
                    range=types.Range(at, at),
                    command=types.Command(
                        title=render.lens_title(m.recorded),
                        command=SHOW_RECORDINGS,
                        arguments=[{"uri": uri, "fqid": m.recorded["fqid"]}],
                    ),
                )
            )
        return lenses

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: TraceLanguageServer, params: types.HoverParams) -> types.Hover | None:
        found = ls.matches(params.text_document.uri)
        if found is None:
            return None
        project, _, matches = found
        m = function_at(matches, params.position.line + 1)
        if m is None or not project.available():
            return None
        try:
            detail = project.call("source.function", fqid=m.recorded["fqid"])
        except TraceToolError:
            return None
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown,
                value=render.hover_markdown(detail, str(project.root)),
            ),
            range=name_range(m.function),
        )

    register_commands(server)
    return server
