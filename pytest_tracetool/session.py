"""The recording side of the pytest plugin, registered by `pytest_tracetool.plugin` when on.

Per test (``pytest_runtest_protocol``, so fixture setup and teardown are inside): start a
recording (in-process scoped session, or ``POST /_trace/record`` of a remote app), collect the
setup/call/teardown reports, stop it, add the test's metadata (`testmeta`) and save it with the
agent's writer as ``<trace_dir>/pytest/<file-safe node id>.trace.json`` -- on a background thread
(`saver`), drained at session end.

In-process, the set-up and the tear-down of each fixture wider than a function (session,
package, module, class) are recorded on their own, paused out of the test that triggers them,
and saved as ``<trace_dir>/pytest/fixture.<setup|teardown>.<scope>.<fixture id>.trace.json``,
labeled ``fixture.setup``/``fixture.teardown``, with ``metadata.fixture`` naming the fixture.

Recording trouble never changes a test's outcome: every step is guarded, problems are counted by
kind and reported once each in the terminal summary (never as warnings, which ``-W error`` would
turn into test failures). Under pytest-xdist each worker records and saves its own tests; counts
and problems travel to the controller in ``workeroutput`` for one summary. At session end each
process tells a running daemon about its new files (`notify`).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any, Optional, Protocol

import pytest

from pytest_tracetool.remote import Problem
from pytest_tracetool.saver import BackgroundSaver
from pytest_tracetool.testmeta import (
    FRAMEWORK,
    RECORDER,
    Outcome,
    PhaseResult,
    TestInfo,
    apply_test_metadata,
    classify,
    describe_test,
    failure_location,
    failure_message,
    file_key,
    fixture_location,
)

log = logging.getLogger("pytest_tracetool")
SUBDIR = "pytest"
_OUTPUT_KEY = "tracetool"
WIDE_SCOPES = frozenset({"session", "package", "module", "class"})


def fixture_name(fixturedef: Any, phase: str, where: str) -> str:
    """``db (session fixture) setup``, ``cache (module fixture) setup for tests/test_a.py``."""
    name = f"{fixturedef.argname} ({fixturedef.scope} fixture) {phase}"
    return f"{name} for {where}" if where else name


def failure_message_of(error: BaseException) -> str:
    return failure_message(None, f"{type(error).__name__}: {error}")


class Backend(Protocol):
    def start(self, info: TestInfo) -> tuple[Any, Optional[Problem]]: ...
    def retry_start(self, info: TestInfo) -> tuple[Any, Optional[Problem]]: ...
    def stop(self, token: Any) -> tuple[Any, Optional[Problem]]: ...


class RemoteBackend:
    """``POST``/``DELETE {url}/_trace/record`` around each test."""

    def __init__(self, url: str) -> None:
        from pytest_tracetool.remote import RemoteRecording

        self.remote = RemoteRecording(url)
        self.gave_up: Problem | None = None

    def start(self, info: TestInfo) -> tuple[Any, Problem | None]:
        if self.gave_up is not None:
            return None, None  # already reported once
        result = self.remote.start()
        if result.problem is not None and result.problem.kind == "timeout":
            # A host that does not answer would cost the timeout on every test: stop asking.
            self.gave_up = result.problem
        return (True if result.started else None), result.problem

    def retry_start(self, info: TestInfo) -> tuple[Any, Problem | None]:
        # The app may have been started by this test's fixtures (a live-server fixture): a
        # refused connection before setup gets one more try once setup is done.
        if self.gave_up is not None:
            return None, None
        return self.start(info)

    def stop(self, token: Any) -> tuple[dict[str, Any] | None, Problem | None]:
        result = self.remote.stop()
        return result.document, result.problem


class TracePlugin:
    NAME = "tracetool-recorder"

    def __init__(self, config: pytest.Config, mode: str) -> None:
        import os

        from tracetool.config import resolve_trace_dir

        self.config = config
        self.mode = mode
        self.record_skipped = bool(config.getoption("trace_record_skipped"))
        self.trace_dir = resolve_trace_dir(config.getoption("trace_dir")).absolute()
        self.pytest_version = pytest.__version__
        self.written: list[Path] = []  # appended by the saver thread
        self._lock = threading.Lock()
        self.saver = BackgroundSaver(self._write, self.written.append, self._save_failed)
        self.workers_written = 0  # reported by pytest-xdist workers (controller only)
        self.problems: dict[str, list[Any]] = {}  # kind -> [count, first message]
        self.worker = hasattr(config, "workerinput")
        self.backend: Backend | None = None
        if mode == "remote":
            url = config.getoption("trace_url") or os.environ.get("TRACETOOL_URL", "")
            self.url = url
            self.backend = RemoteBackend(url)
            if not self.worker and getattr(config.option, "numprocesses", None):
                self._problem(
                    Problem(
                        "xdist",
                        "remote recording records one session at a time: with pytest-xdist, "
                        "tests that run at the same time get 409 and are not recorded, and a "
                        "recording may hold another worker's requests; run without -n to "
                        "record every test",
                    )
                )
        else:
            self.url = ""
            from pytest_tracetool.inprocess import InProcessBackend

            self.backend = InProcessBackend()
        self._fixtures: list[Any] = []  # fixture recordings in progress, innermost last
        self._teardowns: dict[int, Any] = {}  # id(fixturedef) -> its tear-down recording
        self._phases: list[PhaseResult] = []
        self._token: Any = None
        self._retry = False
        self._stopped: Any = None  # the finished document: a dict (remote) or a Recording
        self._rootdir = Path(str(config.rootpath))

    # -- per test --------------------------------------------------------------------------------

    def _problem(self, problem: Problem | None) -> None:
        if problem is None:
            return
        with self._lock:  # the saver thread reports too
            entry = self.problems.setdefault(problem.kind, [0, problem.message])
            entry[0] += 1
        log.debug("tracetool: %s", problem.message)

    def _guard(self, what: str, func: Any, *args: Any) -> Any:
        try:
            return func(*args)
        except Exception as exc:  # recording trouble must never fail a test
            log.debug("tracetool: %s failed", what, exc_info=True)
            self._problem(Problem("internal", f"{what} failed: {type(exc).__name__}: {exc}"))
            return None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Generator[None]:
        self._phases = []
        self._token, self._retry, self._stopped = None, False, None
        info = self._guard("reading the test's details", describe_test, item)
        if info is not None and self.backend is not None:
            started = self._guard("starting the recording", self.backend.start, info)
            if started is not None:
                self._token, problem = started
                self._retry = problem is not None and problem.kind == "unreachable"
                if not self._retry:
                    self._problem(problem)
        yield
        if info is not None:
            if self._stopped is None:
                self._stopped = self._guard("stopping the recording", self._stop)
            if self._stopped is not None:
                self._guard("saving the recording", self._save, item, info, self._stopped)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None]:
        late = False
        if self._retry and self.backend is not None:
            # The app may be started by this test's fixtures (a live-server fixture): a refused
            # connection before setup gets one more try now, and then the recording ends with
            # the test body, before teardown stops that app again.
            self._retry = False
            info = self._guard("reading the test's details", describe_test, item)
            started = info and self._guard("starting the recording", self.backend.retry_start, info)
            if started is not None:
                self._token, problem = started
                self._problem(problem)
                late = self._token is not None
        yield
        if late:
            self._stopped = self._guard("stopping the recording", self._stop)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[Any]
    ) -> Generator[None]:
        result = yield
        try:
            report = result.get_result()  # type: ignore[attr-defined]
            self._phases.append(self._phase(item, call, report))
        except Exception:
            log.debug("tracetool: cannot read the %s report", call.when, exc_info=True)

    def _phase(self, item: pytest.Item, call: pytest.CallInfo[Any], report: Any) -> PhaseResult:
        message = location = None
        if report.failed:
            excinfo = call.excinfo
            message = failure_message(excinfo, report.longrepr)
            if excinfo is not None:
                location = failure_location(excinfo, getattr(item, "path", None), self._rootdir)
        return PhaseResult(
            when=report.when,
            outcome=report.outcome,
            wasxfail=hasattr(report, "wasxfail"),
            message=message,
            location=location,
        )

    # -- wide fixtures -----------------------------------------------------------------------------

    def _records_fixture(self, fixturedef: Any) -> bool:
        return self.mode == "record" and getattr(fixturedef, "scope", "function") in WIDE_SCOPES

    def _start_fixture(self, fixturedef: Any, phase: str, where: str) -> Any:
        backend: Any = self.backend
        if not hasattr(backend, "start_fixture"):
            return None
        name = fixture_name(fixturedef, phase, where)
        # pause whatever records now (the test that triggered it, or an outer fixture)
        paused = self._fixtures[-1][0] if self._fixtures else self._token
        if paused is not None and hasattr(paused, "pause"):
            paused.pause()
        handle = backend.start_fixture(name)
        entry = (handle, fixturedef, phase, paused, where)
        self._fixtures.append(entry)
        return entry

    def _finish_fixture(self, entry: Any, error: BaseException | None) -> None:
        handle, fixturedef, phase, paused, where = entry
        if entry in self._fixtures:
            self._fixtures.remove(entry)
        recording = handle.stop()
        if paused is not None and hasattr(paused, "resume"):
            paused.resume()
        if isinstance(error, pytest.skip.Exception) and not self.record_skipped:
            return
        if error is None and not recording.event_count:
            return  # nothing recorded (a plugin's fixture, say): no file
        baseid = getattr(fixturedef, "baseid", "") or ""
        meta = recording.metadata
        meta["name"] = fixture_name(fixturedef, phase, where)
        meta["labels"] = [FRAMEWORK, f"fixture.{phase}"]
        meta["test_status"] = "failed" if error is not None else "succeeded"
        if error is not None:
            meta["test_failure"] = {"message": failure_message_of(error)}
        meta["fixture"] = {
            "name": fixturedef.argname,
            "scope": fixturedef.scope,
            "phase": phase,
            "defined_in": baseid or "<root>",
            "for": where or "<session>",
        }
        location = fixture_location(fixturedef, self._rootdir)
        if location:
            meta["source_location"] = location
        meta["recorder"] = dict(RECORDER)
        meta["frameworks"] = [{"name": FRAMEWORK, "version": self.pytest_version}]
        owner = where or "session"
        if self.worker:  # each pytest-xdist worker sets up the session fixtures again
            owner += "." + str(getattr(self.config, "workerinput", {}).get("workerid", "worker"))
        key = file_key(f"fixture.{phase}.{fixturedef.scope}.{owner}::{fixturedef.argname}")
        self.saver.submit(recording, key)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Generator[None]:
        entry = None
        where = ""
        if self._records_fixture(fixturedef):
            # the node the fixture is set up for: the module/class (a wide fixture from a
            # conftest.py is set up once per module that uses it), "" for the session
            where = str(getattr(getattr(request, "node", None), "nodeid", "") or "")
            entry = self._guard(
                "starting a fixture recording", self._start_fixture, fixturedef, "setup", where
            )
        outcome = yield
        if entry is None:
            return
        error = getattr(outcome, "excinfo", None)
        self._guard(
            "saving a fixture recording", self._finish_fixture, entry, error[1] if error else None
        )
        if error is None:
            self._guard(
                "watching a fixture's tear-down",
                fixturedef.addfinalizer,
                functools.partial(self._teardown_begins, fixturedef, where),
            )

    def _teardown_begins(self, fixturedef: Any, where: str) -> None:
        # registered after the fixture's own finalizers, so it runs first (they run LIFO)
        entry = self._guard(
            "starting a fixture recording", self._start_fixture, fixturedef, "teardown", where
        )
        if entry is not None:
            self._teardowns[id(fixturedef)] = entry

    def pytest_fixture_post_finalizer(self, fixturedef: Any, request: Any) -> None:
        entry = self._teardowns.pop(id(fixturedef), None)
        if entry is not None:
            self._guard("saving a fixture recording", self._finish_fixture, entry, None)

    def _stop(self) -> Any:
        token, self._token = self._token, None
        if token is None or self.backend is None:
            return None
        document, problem = self.backend.stop(token)
        self._problem(problem)
        return document

    def _save(self, item: pytest.Item, info: TestInfo, document: Any) -> None:
        outcome: Outcome = classify(self._phases, info.source_location)
        if outcome.skipped and not self.record_skipped:
            return
        if isinstance(document, dict):
            meta = document.get("metadata")
            if not isinstance(meta, dict):
                meta = document["metadata"] = {}
        else:  # the agent's Recording
            meta = document.metadata
        apply_test_metadata(meta, info, outcome, self.pytest_version)
        self.saver.submit(document, info.key)

    def _write(self, document: Any, key: str) -> Path:
        from tracetool.agent.writer import save_recording

        return save_recording(document, key, SUBDIR, self.trace_dir)

    def _save_failed(self, exc: Exception) -> None:
        log.debug("tracetool: saving a recording failed", exc_info=exc)
        self._problem(
            Problem("internal", f"saving the recording failed: {type(exc).__name__}: {exc}")
        )

    # -- session end -----------------------------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.saver.close()
        if self.written:
            from pytest_tracetool.notify import notify_daemon

            self._guard("notifying the daemon", notify_daemon, self.trace_dir, self.written)
        if self.worker:
            output = getattr(self.config, "workeroutput", None)
            if isinstance(output, dict):
                output[_OUTPUT_KEY] = {"written": len(self.written), "problems": self.problems}

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        mine = output.get(_OUTPUT_KEY)
        if not isinstance(mine, dict):
            return
        self.workers_written += int(mine.get("written", 0))
        for kind, (count, message) in (mine.get("problems") or {}).items():
            entry = self.problems.setdefault(kind, [0, message])
            entry[0] += count

    def pytest_unconfigure(self) -> None:
        self.saver.close()  # a session that ended without sessionfinish (internal error)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        count = len(self.written) + self.workers_written
        where = self.trace_dir / SUBDIR
        source = f" from {self.url}" if self.mode == "remote" else ""
        noun = "recording" if count == 1 else "recordings"
        terminalreporter.write_line(f"tracetool: {count} {noun}{source} written to {where}")
        for count_, message in self.problems.values():
            times = "once" if count_ == 1 else f"{count_} times"
            terminalreporter.write_line(f"tracetool: warning ({times}): {message}", yellow=True)
