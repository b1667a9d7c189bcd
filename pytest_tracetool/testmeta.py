"""What a test's trace document says about the test: name, outcome, labels, failure, location.

Pure functions over pytest items and reports; `apply_test_metadata` merges the result into a trace
document's metadata (recorded in-process or returned by a remote app) before it is saved.

Outcome labels (one per test): ``passed``, ``failed`` (the test body failed), ``error`` (a fixture's
setup or teardown failed), ``skipped``, ``xfailed``, ``xpassed``. ``test_status`` stays within
the format's ``succeeded``/``failed``: ``failed`` for failed and error (and strict xpass, which
pytest reports as a failure), ``succeeded`` otherwise.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FRAMEWORK = "pytest"
RECORDER = {"name": "pytest", "type": "tests"}
MAX_MESSAGE = 4000
# Markers that say how a test is collected or run, not what it is about.
_NOISE_MARKERS = frozenset({"parametrize", "usefixtures", "filterwarnings"})
# an object's default repr: `<function f at 0x7f3a...>`
_ADDRESS = re.compile(r"( at 0x)[0-9a-fA-F]+>")
# node ids the writer's file-safe mapping keeps distinct without a hash (see file_key)
_PLAIN_NODEID = re.compile(r"[A-Za-z0-9._/:-]+")
# test_add_item -> add_item, testAddItem -> AddItem (but not testing_x)
_TEST_PREFIX = re.compile(r"^test(?:_+|(?=[A-Z0-9]))")


@dataclass(frozen=True)
class PhaseResult:
    """One phase's report, with the exception that ended it (if any)."""

    when: str  # setup | call | teardown
    outcome: str  # passed | failed | skipped
    wasxfail: bool = False
    message: str | None = None
    location: str | None = None


@dataclass(frozen=True)
class Outcome:
    label: str
    status: str  # succeeded | failed
    failure: dict[str, str] | None = None

    @property
    def skipped(self) -> bool:
        return self.label == "skipped"


@dataclass(frozen=True)
class TestInfo:
    """What is known about a test before it runs. `key` names its file (see `file_key`)."""

    nodeid: str
    key: str
    name: str
    source_location: str | None
    markers: tuple[str, ...] = field(default_factory=tuple)

    __test__ = False  # not a test class, whatever pytest's collection rules say


def human_name(item: Any) -> str:
    """``tests/test_cart.py::TestCart::test_add_item[a-b]`` -> ``TestCart add item [a-b]``.

    Like AppMap's pytest names (the test function's words without ``test_``), prefixed with the
    enclosing classes; parameters kept verbatim since they tell parametrized cases apart.
    """
    import pytest

    classes = [n.name for n in item.listchain() if isinstance(n, pytest.Class)]
    base, bracket, params = str(item.name).partition("[")
    words = _TEST_PREFIX.sub("", base).replace("_", " ").strip() or base
    name = " ".join([*classes, words])
    return f"{name} [{params}" if bracket else name


def source_location(item: Any) -> str | None:
    """``path:line`` (1-based, path relative to the rootdir) where the test is defined."""
    try:
        path, lineno, _ = item.location
    except Exception:
        return None
    if not path:
        return None
    path = path.replace(os.sep, "/")
    return f"{path}:{lineno + 1}" if isinstance(lineno, int) else path


def item_markers(item: Any) -> tuple[str, ...]:
    """The test's markers by name (module, class, then its own), without collection mechanics."""
    seen: list[str] = []
    for marker in item.iter_markers():
        if marker.name not in _NOISE_MARKERS and marker.name not in seen:
            seen.append(marker.name)
    return tuple(reversed(seen))  # closest marker last, module/class markers first


def file_key(nodeid: str) -> str:
    """The name the recording is saved under (the agent's writer makes it file-safe).

    The node id itself when it holds only path, ``::`` and identifier characters (readable
    names for the common case; two such ids collide only if they differ just in ``/`` or ``::``
    versus ``_``, e.g. ``a/b.py`` and ``a_b.py``); else -- parameters in brackets, unicode,
    spaces, anything else the writer turns into ``_`` -- the node id plus 8 hex of its sha256,
    so ``test[a/b]``, ``test[a_b]`` and ``test[é]``, ``test[ü]`` get distinct files.
    """
    if _PLAIN_NODEID.fullmatch(nodeid):
        return nodeid
    return f"{nodeid} {hashlib.sha256(nodeid.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def describe_test(item: Any) -> TestInfo:
    return TestInfo(
        nodeid=item.nodeid,
        key=file_key(item.nodeid),
        name=human_name(item),
        source_location=source_location(item),
        markers=item_markers(item),
    )


def fixture_location(fixturedef: Any, rootdir: Path) -> str | None:
    """``path:line`` of a fixture's function, relative to `rootdir` when inside it."""
    import inspect

    func = getattr(fixturedef, "func", None)
    func = inspect.unwrap(func) if func is not None else None
    code = getattr(func, "__code__", None)
    if code is None:
        return None
    return f"{_relative(Path(code.co_filename), rootdir)}:{code.co_firstlineno}"


def failure_location(excinfo: Any, test_path: Path | None, rootdir: Path) -> str | None:
    """``path:line`` of the failing line: the deepest traceback entry in the test's own file,
    else where the exception was raised."""
    try:
        entries = list(excinfo.traceback)
    except Exception:
        return None
    if not entries:
        return None
    chosen = entries[-1]
    if test_path is not None:
        for entry in reversed(entries):
            if Path(entry.path) == test_path:
                chosen = entry
                break
    return f"{_relative(Path(chosen.path), rootdir)}:{chosen.lineno + 1}"


def _relative(path: Path, rootdir: Path) -> str:
    try:
        return path.resolve().relative_to(rootdir.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def failure_message(excinfo: Any = None, longrepr: Any = None) -> str:
    """The exception's text (pytest's assertion explanation included), object addresses
    masked, capped at `MAX_MESSAGE` characters."""
    if excinfo is not None:
        try:
            text = excinfo.exconly()
        except Exception:
            text = repr(excinfo.value)
    else:
        crash = getattr(longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(longrepr or "")
    # `<function f at 0x7f3a...>` differs on every run: keep messages stable across re-runs
    text = _ADDRESS.sub(r"\1…>", text.strip())
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + " …[truncated]"
    return text


def classify(phases: Sequence[PhaseResult], fallback_location: str | None) -> Outcome:
    """One label and status for the test from its setup/call/teardown results."""
    by_when = {p.when: p for p in phases}
    for phase in phases:
        if phase.outcome == "failed":
            label = "failed" if phase.when == "call" else "error"
            failure = {"message": phase.message or f"{phase.when} failed"}
            location = phase.location or fallback_location
            if location:
                failure["location"] = location
            return Outcome(label, "failed", failure)
    call = by_when.get("call")
    setup = by_when.get("setup")
    if call is not None and call.wasxfail:
        return Outcome("xpassed" if call.outcome == "passed" else "xfailed", "succeeded")
    if setup is not None and setup.wasxfail:  # xfail(run=False)
        return Outcome("xfailed", "succeeded")
    if any(p.outcome == "skipped" for p in phases):
        return Outcome("skipped", "succeeded")
    return Outcome("passed", "succeeded")


def _merge_unique(first: Iterable[Any], second: Iterable[Any]) -> list[Any]:
    merged: list[Any] = []
    for value in (*first, *second):
        if value not in merged:
            merged.append(value)
    return merged


def apply_test_metadata(
    meta: dict[str, Any], info: TestInfo, outcome: Outcome, pytest_version: str
) -> dict[str, Any]:
    """Write the test's name, labels, status, failure, location, recorder and frameworks into a
    document's `meta` (keeping what the recorder put there: app, language, git, frameworks)."""
    meta["name"] = info.name
    existing = meta.get("labels")
    existing = existing if isinstance(existing, list) else []
    meta["labels"] = _merge_unique([FRAMEWORK, outcome.label, *info.markers], existing)
    meta["test_status"] = outcome.status
    if outcome.failure:
        meta["test_failure"] = outcome.failure
    else:
        meta.pop("test_failure", None)
    if info.source_location:
        meta["source_location"] = info.source_location
    meta["recorder"] = dict(RECORDER)
    frameworks = meta.get("frameworks")
    frameworks = frameworks if isinstance(frameworks, list) else []
    frameworks = [f for f in frameworks if not (isinstance(f, dict) and f.get("name") == FRAMEWORK)]
    meta["frameworks"] = [{"name": FRAMEWORK, "version": pytest_version}, *frameworks]
    return meta
