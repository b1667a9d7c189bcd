"""Running the daemon: claim the directories, index and watch them, serve JSON-RPC, clean up.

Contract (`tracetool rpc`, `tracetool index --watch [--port N]`):

1. Each recordings directory is claimed (`tracetool_daemon.discovery`); if another daemon owns
   one, `DaemonRunningError` (one line naming its pid and port) and nothing is started.
2. With a port (0 = the OS chooses), the JSON-RPC server binds 127.0.0.1 and the discovery file
   of every directory is written with that port; without one (watch only) with port 0.
3. Start-up output on stdout, when serving: exactly two lines, flushed at once —
   `{"port": N}` (machine-readable) and `Running JSON-RPC server on port: N` (what AppMap's
   clients parse). Everything else goes to stderr.
4. Each directory's `LiveIndex` starts (watcher first, then the full pass in the background).
5. SIGINT/SIGTERM (or `stop()`) end it: the server stops accepting, the watchers and index
   threads stop, discovery files are removed, locks released; `run()` returns 0. The main
   thread sleeps in select() on a pipe the signals also write to (`tracetool_daemon.wakeup`),
   so a signal the kernel hands to another thread still wakes it.
"""

from __future__ import annotations

import logging
import select
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from tracetool_daemon.discovery import Claim, claim
from tracetool_daemon.liveindex import LiveIndex
from tracetool_daemon.server import DEFAULT_MAX_BODY, RpcHttpServer
from tracetool_daemon.service import Project, Service, ServiceOptions
from tracetool_daemon.wakeup import Wakeup

log = logging.getLogger("tracetool.daemon")


@dataclass(frozen=True)
class Target:
    """One recordings directory to serve: project directory, trace_dir, query.db."""

    directory: Path
    trace_dir: Path
    query_db: Path


@dataclass(frozen=True)
class DaemonOptions:
    targets: tuple[Target, ...]
    port: int | None = 0  # None: watch only, no JSON-RPC listener
    service: ServiceOptions = field(default_factory=ServiceOptions)
    max_body: int = DEFAULT_MAX_BODY


class Daemon:
    def __init__(
        self,
        options: DaemonOptions,
        *,
        out: TextIO | None = None,
        on_batch: Callable[[Project, Any], None] | None = None,
    ) -> None:
        self.options = options
        self.out = out or sys.stdout
        self.on_batch = on_batch
        self.server: RpcHttpServer | None = None
        self.service: Service | None = None
        self._claims: list[Claim] = []
        self._pool: Executor | None = None
        self._stop = threading.Event()
        self._wakeup = Wakeup()  # wakes the main thread when watching only (no server)

    def run(self) -> int:
        try:
            self._start()
            self._install_signals()
            wakeup = self.server.wakeup if self.server is not None else self._wakeup
            with wakeup.on_signals():
                if self.server is not None:
                    self.server.serve()
                else:
                    self._sleep()
        finally:
            self._cleanup()
        return 0

    def stop(self) -> None:
        self._stop.set()
        self._wakeup.wake()
        if self.server is not None:
            self.server.shutdown()

    def _sleep(self) -> None:
        """Until `stop()` or a signal (module doc, 5): asleep in select(), no timeout."""
        # Only SIGINT and SIGTERM have handlers here (`_install_signals`), so any wake-up is a
        # stop, even one whose handler has not run yet (as in `RpcHttpServer.serve`).
        if not self._stop.is_set():
            select.select([self._wakeup], [], [])

    def _start(self) -> None:
        # The live-index thread and the RPC worker threads import tracetool.index and
        # tracetool.query lazily. Those packages import each other (tracetool.index ->
        # index.indexer -> tracetool.index; query.db -> index.indexer), and two threads importing
        # them at once can be handed a partially initialized module ("cannot import name
        # 'IndexOptions' ... (most likely due to a circular import)"): every request failed so
        # in a VS Code session. Import them here, once, before any thread starts.
        import tracetool.index
        import tracetool.query

        tracetool.index.import_all()

        for target in self.options.targets:
            self._claims.append(claim(target.trace_dir))  # raises if another daemon owns it
        from tracetool_daemon.liveindex import make_pool

        self._pool = make_pool()
        projects = []
        for target in self.options.targets:
            target.trace_dir.mkdir(parents=True, exist_ok=True)
            project = Project(target.directory, target.trace_dir, target.query_db)
            project.live = LiveIndex(
                target.trace_dir,
                target.query_db,
                on_batch=(lambda result, p=project: self._batch(p, result)),
                executor=self._pool,
            )
            projects.append(project)
        self.service = Service(projects, self.options.service)
        port = 0
        if self.options.port is not None:
            from tracetool_daemon.registry import dispatch, prepare

            prepare()
            service = self.service
            self.server = RpcHttpServer(
                lambda body: dispatch(service, body),
                port=self.options.port,
                max_body=self.options.max_body,
            )
            port = self.server.port
        for c in self._claims:
            c.announce(port)
        for project in projects:
            assert project.live is not None
            project.live.start()
        if self.server is not None:
            self.out.write(f'{{"port": {port}}}\nRunning JSON-RPC server on port: {port}\n')
            self.out.flush()

    def _batch(self, project: Project, result: Any) -> None:
        if self.on_batch is not None:
            self.on_batch(project, result)

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def handle(signum: int, frame: FrameType | None) -> None:
            self.stop()

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)

    def _cleanup(self) -> None:
        if self.server is not None:
            self.server.server_close()
        # Stop announcing first: clients must not find a daemon that is going away.
        for c in self._claims:
            c.release()
        self._claims.clear()
        if self.service is not None:
            self.service.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._wakeup.close()
