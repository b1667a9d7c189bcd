"""Shared test fixtures: where shared/ is, the corpus recordings, small document builders."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.realparts.postgres import PgServer

ROOT = Path(__file__).resolve().parents[1]

# pytest-django (a dev dependency) would load itself into every pytest run that tests start —
# pytester runs and subprocesses included — and take over fixtures named `live_server` and the
# database ones. Only the Django example runs want it: they pass their own environment without
# this (tests/agent_e2e/test_example_suites.py). (Pytester clears PYTEST_ADDOPTS; the autouse
# fixture below sets it again for pytester runs.)
NO_DJANGO = "-p no:django"
if NO_DJANGO not in os.environ.get("PYTEST_ADDOPTS", ""):
    os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} {NO_DJANGO}".strip()


@pytest.fixture(autouse=True)
def _pytester_without_pytest_django(request: pytest.FixtureRequest) -> None:
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
        current = os.environ.get("PYTEST_ADDOPTS", "")
        if NO_DJANGO not in current:
            request.getfixturevalue("monkeypatch").setenv(
                "PYTEST_ADDOPTS", f"{current} {NO_DJANGO}".strip()
            )


def _find_shared() -> Path:
    """`../shared` beside the project root; from a git worktree elsewhere, the nearest ancestor's."""
    for base in (ROOT, *ROOT.parents):
        candidate = base.parent / "shared"
        if (candidate / "corpus").is_dir():
            return candidate.resolve()
    return (ROOT.parent / "shared").resolve()


SHARED = _find_shared()
CORPUS = SHARED / "corpus" / "appmap-js"


def corpus_recordings() -> list[Path]:
    """The 53 AppMap recordings of the shared corpus (per SOURCES.md: files with events)."""
    import orjson

    found = []
    for path in sorted(CORPUS.rglob("*.json")):
        try:
            data = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError:
            continue
        if isinstance(data, dict) and ("events" in data or "classMap" in data):
            found.append(path)
    return found


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS


class DocBuilder:
    """Builds small, valid trace documents event by event for tests."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self.class_map: list[dict[str, Any]] = []
        self.metadata: dict[str, Any] = {"name": "test", "client": {"name": "tests"}}

    def call(self, thread: int = 1, **fields: Any) -> int:
        event_id = next(self._ids)
        self.events.append({"id": event_id, "event": "call", "thread_id": thread, **fields})
        return event_id

    def ret(self, parent: int, thread: int = 1, elapsed: float = 0.001, **fields: Any) -> int:
        event_id = next(self._ids)
        self.events.append(
            {
                "id": event_id,
                "event": "return",
                "thread_id": thread,
                "parent_id": parent,
                "elapsed": elapsed,
                **fields,
            }
        )
        return event_id

    def function(self, cls: str, method: str, path: str, line: int, static: bool = False) -> int:
        return self.call(defined_class=cls, method_id=method, path=path, lineno=line, static=static)

    def doc(self) -> dict[str, Any]:
        return {
            "version": "1.12",
            "metadata": self.metadata,
            "classMap": self.class_map,
            "events": self.events,
        }


@pytest.fixture
def builder() -> DocBuilder:
    return DocBuilder()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL server for this test session (tests/realparts/postgres.py)."""
    from tests.realparts.postgres import start_server

    server = start_server()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def appmap_validate() -> Callable[[Iterable[Path]], int]:
    """AppMap's own validator: `appmap_validate(paths)` asserts every file is valid."""
    from tests.realparts.appmap_validate import assert_valid, validator_lib

    validator_lib()
    return assert_valid


@pytest.fixture(autouse=True)
def _cli_verbosity_does_not_outlive_the_test() -> Iterator[None]:
    """`-v` in an in-process CLI run (CliRunner) turns the `tracetool` logger to DEBUG for the
    process; later tests' daemons would then log into the test output."""
    yield
    import sys

    common = sys.modules.get("tracetool.cli.common")
    if common is not None and common._state["verbose"]:
        import logging

        common._state["verbose"] = False
        logging.getLogger("tracetool").setLevel(logging.WARNING)
