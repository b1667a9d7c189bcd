"""`python manage.py test` with one trace document per test (the unittest side of the pytest plugin).

`tracetool install` sets ``TEST_RUNNER = "tracetool.agent.django_runner.TraceRunner"`` in a
Django project's settings. The runner is Django's `DiscoverRunner` whose result class starts a
scoped recording on the agent's Recorder when each test starts and saves it when the test stops,
as ``<trace_dir>/unittest/<test id>.trace.json`` with the test's name, status and failure in the
metadata (labels ``unittest`` and passed / failed / error / skipped).

Recording is on unless ``TRACETOOL`` is set to a false value (0/false/no/off); the agent is
activated as ``TRACETOOL=true`` would at start-up. Tests run in parallel worker processes
(``--parallel``) are run by Django's own result class and are not recorded.
"""

from __future__ import annotations

import os
import platform
import traceback
import unittest
from pathlib import Path
from typing import Any

from django.test.runner import DiscoverRunner

SUBDIR = "unittest"
RECORDER = {"name": "unittest", "type": "tests"}
_OFF = ("0", "false", "no", "off", "n", "f")


def _enabled() -> bool:
    return os.environ.get("TRACETOOL", "true").strip().lower() not in _OFF


def _human_name(test: unittest.TestCase) -> str:
    method = getattr(test, "_testMethodName", "") or test.id().rsplit(".", 1)[-1]
    words = method[5:] if method.startswith("test_") else method
    return f"{type(test).__name__} {words.replace('_', ' ').strip()}".strip()


def _location(test: unittest.TestCase) -> str | None:
    import inspect

    method = getattr(test, getattr(test, "_testMethodName", ""), None)
    try:
        file = inspect.getsourcefile(method) if method is not None else None
        line = inspect.getsourcelines(method)[1] if method is not None else None
    except (OSError, TypeError):
        return None
    if not file:
        return None
    try:
        file = os.path.relpath(file)
    except ValueError:
        pass
    return f"{Path(file).as_posix()}:{line}"


class TraceTestResult(unittest.TextTestResult):
    """A text result that records each test into its own trace document."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._scope: Any = None
        self._outcome: tuple[str, str | None] = ("passed", None)
        self.written: list[Path] = []

    def startTest(self, test: unittest.TestCase) -> None:
        super().startTest(test)
        self._outcome = ("passed", None)
        from tracetool.agent.recorder import get_recorder

        self._scope = get_recorder().start_scoped(
            _human_name(test), recorder_name=RECORDER["name"], recorder_type=RECORDER["type"]
        )

    def _fail(self, label: str, err: Any) -> None:
        message = "".join(traceback.format_exception_only(err[0], err[1])).strip()
        self._outcome = (label, message[:4000])

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        super().addError(test, err)
        self._fail("error", err)

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addFailure(test, err)
        self._fail("failed", err)

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self._outcome = ("skipped", None)

    def stopTest(self, test: unittest.TestCase) -> None:
        scope, self._scope = self._scope, None
        try:
            if scope is not None:
                self._save(test, scope.stop())
        finally:
            super().stopTest(test)

    def _save(self, test: unittest.TestCase, recording: Any) -> None:
        from tracetool.agent.writer import save_recording
        from tracetool.config import load_config

        label, message = self._outcome
        meta = recording.metadata
        meta["name"] = _human_name(test)
        labels = meta.get("labels") if isinstance(meta.get("labels"), list) else []
        meta["labels"] = ["unittest", label, *[x for x in labels if x not in ("unittest", label)]]
        meta["test_status"] = "failed" if label in ("failed", "error") else "succeeded"
        location = _location(test)
        if location:
            meta["source_location"] = location
        if message:
            failure = {"message": message}
            if location:
                failure["location"] = location
            meta["test_failure"] = failure
        meta["recorder"] = dict(RECORDER)
        frameworks = meta.get("frameworks") if isinstance(meta.get("frameworks"), list) else []
        meta["frameworks"] = [
            {"name": "unittest", "version": platform.python_version()},
            *frameworks,
        ]
        trace_dir = load_config().trace_dir
        self.written.append(save_recording(recording, test.id(), SUBDIR, trace_dir))


class TraceRunner(DiscoverRunner):
    """Django's test runner, recording one trace document per test."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.recording = _enabled()
        if self.recording:
            os.environ["TRACETOOL"] = "true"
            from tracetool.agent import startup

            startup.activate()

    def get_resultclass(self) -> Any:
        if not self.recording:
            return super().get_resultclass()
        return TraceTestResult
