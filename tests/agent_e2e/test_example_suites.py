"""Every example app's own test suite, run with `--trace-record` in a real pytest subprocess:
the suite passes as it does without recording, and AppMap's validator accepts EVERY recording.

To add an example: append a `Suite` to SUITES (its folder under examples/, the test path, and
whether it runs under pytest-django). Checks specific to one example follow the parametrized test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@dataclass(frozen=True)
class Suite:
    folder: str  # under examples/
    args: tuple[str, ...] = ("tests",)  # what pytest runs, from the example's folder
    django: bool = False  # runs under pytest-django (the example has its own pytest.ini)
    env: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.folder


SUITES = [
    Suite("shop"),
    Suite("bookshelf"),
    Suite("django_app", args=(), django=True),
]


@dataclass
class Run:
    outcome: subprocess.CompletedProcess[str]
    trace_dir: Path

    def recordings(self) -> list[Path]:
        return sorted(self.trace_dir.rglob("*.trace.json"))

    def documents(self) -> dict[str, dict[str, Any]]:
        """Recordings by the test's function name (the last part of metadata.name)."""
        out: dict[str, dict[str, Any]] = {}
        for path in self.recordings():
            doc = json.loads(path.read_text(encoding="utf-8"))
            out[path.name.rsplit("_test_", 1)[-1].removesuffix(".trace.json")] = doc
        return out


def run_suite(
    suite: Suite, tmp: Path, *, record: bool, extra_env: dict[str, str] | None = None
) -> Run:
    folder = EXAMPLES / suite.folder
    trace_dir = tmp / ("trace" if record else "no-trace")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETOOL")}
    env.pop("PYTEST_ADDOPTS", None)
    if not suite.django:
        env["PYTEST_ADDOPTS"] = "-p no:django"  # (tests/conftest.py: pytest-django stays out)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update(suite.env)
    env.update(extra_env or {})
    env["TRACETOOL_TRACE_DIR"] = str(trace_dir)
    env["NOTES_DATABASE"] = str(tmp / "notes.db")
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *suite.args]
    if record:
        args.append("--trace-record")
    outcome = subprocess.run(
        args, cwd=folder, env=env, capture_output=True, text=True, timeout=240, check=False
    )
    return Run(outcome, trace_dir)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Run]:
    """`recorded(folder)`: that example's suite run once with `--trace-record` (shared by the
    tests of this module)."""
    runs: dict[str, Run] = {}

    def get(folder: str) -> Run:
        if folder not in runs:
            suite = next(s for s in SUITES if s.folder == folder)
            runs[folder] = run_suite(suite, tmp_path_factory.mktemp(folder), record=True)
        return runs[folder]

    return get


def _passed(run: Run) -> None:
    out = run.outcome.stdout + run.outcome.stderr
    assert run.outcome.returncode == 0, out[-4000:]
    assert " passed" in out and "failed" not in out and " error" not in out, out[-4000:]


@pytest.mark.parametrize("suite", SUITES, ids=str)
def test_every_recording_of_the_suite_is_valid(
    suite: Suite,
    recorded: Callable[[str], Run],
    appmap_validate: Callable[[Iterable[Path]], int],
) -> None:
    run = recorded(suite.folder)
    _passed(run)
    recordings = run.recordings()
    assert recordings, f"no recordings under {run.trace_dir}"
    appmap_validate(recordings)


def _sql_log(path: Path) -> list[str]:
    # savepoint names are random per run
    return [
        line for line in path.read_text(encoding="utf-8").splitlines() if "SAVEPOINT" not in line
    ]


def test_django_suite_issues_the_same_sql_with_and_without_recording(tmp_path: Path) -> None:
    suite = next(s for s in SUITES if s.folder == "django_app")
    plain_log, recorded_log = tmp_path / "plain.sql", tmp_path / "recorded.sql"
    plain = run_suite(
        suite, tmp_path / "a", record=False, extra_env={"NOTES_SQL_LOG": str(plain_log)}
    )
    _passed(plain)
    recorded = run_suite(
        suite, tmp_path / "b", record=True, extra_env={"NOTES_SQL_LOG": str(recorded_log)}
    )
    _passed(recorded)  # assertNumQueries / django_assert_num_queries hold under --trace-record
    assert _sql_log(plain_log) and _sql_log(recorded_log) == _sql_log(plain_log)
    docs = recorded.documents()
    digest = docs["a_lazy_queryset_passed_to_a_function_runs_only_when_iterated"]
    call = next(e for e in digest["events"] if e.get("method_id") == "titles_of")
    (param,) = call["parameters"]
    assert param["class"] == "django.db.models.query.QuerySet"
    assert param["value"].startswith("<django.db.models.query.QuerySet object at 0x")
    sql = [
        e for e in digest["events"] if "sql_query" in e and "notes_note" in e["sql_query"]["sql"]
    ]
    assert len([e for e in sql if e["sql_query"]["sql"].lstrip().upper().startswith("SELECT")]) == 1


def test_bookshelf_factory_in_package_init_sits_under_its_package(
    recorded: Callable[[str], Run],
) -> None:
    run = recorded("bookshelf")
    _passed(run)
    doc = run.documents()["the_factory_builds_an_app"]
    roots = doc["classMap"]
    assert all(root["type"] == "package" for root in roots)
    assert [r["name"] for r in roots].count("bookshelf") == 1
    (package,) = [r for r in roots if r["name"] == "bookshelf"]
    init_class = next(c for c in package["children"] if c["type"] == "class")
    assert init_class["name"] == "bookshelf"
    assert [f["name"] for f in init_class["children"]] == ["create_app"]
    calls = [e for e in doc["events"] if e.get("method_id") == "create_app"]
    assert calls and calls[0]["defined_class"] == "bookshelf"
    # ... and it is on the sequence diagram (it vanished when its root was a class)
    factory = next(
        p for p in run.recordings() if p.name.endswith("factory_builds_an_app.trace.json")
    )
    out = run.trace_dir.parent / "diagrams"
    drawn = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracetool",
            "sequence-diagram",
            str(factory),
            "-f",
            "plantuml",
            "--output-dir",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert drawn.returncode == 0, drawn.stderr
    (uml,) = out.glob("*.uml")
    assert "create_app" in uml.read_text(encoding="utf-8")
    for path in run.recordings():
        for value in _values(json.loads(path.read_text(encoding="utf-8"))):
            assert len(value) <= 100, value


def _values(doc: dict[str, Any]) -> Iterable[str]:
    for event in doc["events"]:
        for key in ("parameters", "message"):
            for param in event.get(key) or ():
                yield param["value"]
        for key in ("receiver", "return_value"):
            if key in event:
                yield event[key]["value"]


def _request_message(doc: dict[str, Any], method: str, path: str) -> dict[str, dict[str, Any]]:
    call = next(
        e
        for e in doc["events"]
        if e.get("http_server_request", {}).get("request_method") == method
        and e["http_server_request"]["path_info"] == path
    )
    return {p["name"]: p for p in call["message"]}


def test_bookshelf_requests_carry_forms_files_and_path_parameters(
    recorded: Callable[[str], Run],
) -> None:
    run = recorded("bookshelf")
    _passed(run)
    docs = run.documents()
    form = _request_message(docs["adds_an_author_from_a_form"], "POST", "/authors")
    assert form["name"]["value"] == "'Le Guin'"
    assert form["title"]["value"] == "['Earthsea', 'Lathe']"  # a repeated field keeps all values
    books = _request_message(docs["adds_an_author_from_a_form"], "GET", "/authors/1/books")
    assert books["author_id"]["value"] == "1" and books["author_id"]["class"] == "builtins.int"
    upload = _request_message(docs["uploads_a_file_with_form_fields"], "POST", "/uploads/fiction")
    assert upload["note"]["value"] == "'first shelf'"
    assert upload["shelf"]["value"] == "'fiction'"  # the path parameter
    assert upload["file"]["value"] == "{'filename': 'list.txt', 'size': 8}"  # never the contents
    assert "one" not in json.dumps(docs["uploads_a_file_with_form_fields"]["events"])


def test_timings_survive_a_frozen_clock(recorded: Callable[[str], Run]) -> None:
    run = recorded("bookshelf")
    _passed(run)
    doc = run.documents()["requests_under_a_frozen_clock"]
    returns = [e for e in doc["events"] if e["event"] == "return"]
    assert len([e for e in returns if "http_server_response" in e]) == 2
    assert any("sql_query" in e for e in doc["events"])
    # freezegun froze time.perf_counter; the agent took its clock before (tracetool.agent.clock)
    assert all(e["elapsed"] > 0 for e in returns), [e["elapsed"] for e in returns]
