"""In-process recording (``--trace-record`` / ``TRACETOOL=true`` / ini ``trace_record``): one
document per test, named after it, with the test's metadata and exactly its own events."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.pytest_plugin.helpers import by_name, line_of, read_recordings
from tracetool.agent.writer import safe_file_name

pytestmark = pytest.mark.usefixtures("clean_env")

TRACE_YML = """
name: demo
packages:
  - path: mypkg
"""

# Every test calls its own function of the recorded package, so each document can be checked
# for holding exactly its test's calls.
MYPKG = """
def prepare():
    return "ready"

def cleanup():
    return None

def broken_fixture():
    raise RuntimeError("fixture broke")

def alpha(x):
    return x + 1

def beta(x):
    return x * 2

def gamma():
    raise ValueError("gamma broke")

def delta():
    return "delta"

def epsilon(value):
    return value

def eta():
    return "eta"

def iota():
    return "iota"

async def zeta():
    return 6

class Calc:
    def theta(self):
        return 1
"""

SUITE = """
import pytest
import mypkg

@pytest.fixture
def resource():
    mypkg.prepare()
    yield
    mypkg.cleanup()

@pytest.fixture
def broken():
    mypkg.broken_fixture()

def test_passes(resource):
    assert mypkg.alpha(1) == 2

def test_fails():
    assert mypkg.beta(2) == 5

def test_fixture_error(broken):
    mypkg.delta()

def test_skipped_in_body():
    mypkg.iota()
    pytest.skip("not today")

@pytest.mark.skip(reason="by marker")
def test_skipped_by_marker():
    mypkg.iota()

@pytest.mark.xfail(reason="known bug")
def test_xfail():
    mypkg.gamma()

@pytest.mark.xfail(reason="fixed already")
def test_xpass():
    mypkg.eta()

@pytest.mark.slow
@pytest.mark.parametrize("value", PARAMS, ids=PARAMS)
def test_param(value):
    mypkg.epsilon(value)
"""

PARAMS = ["a/b", "a_b", "é", "ü", "x" * 300, "sp ace"]

UNIT = """
import unittest
import mypkg

class CalcTest(unittest.TestCase):
    def setUp(self):
        mypkg.prepare()

    def test_theta(self):
        self.assertEqual(mypkg.Calc().theta(), 1)
"""

ASYNC = """
import pytest
import mypkg

@pytest.mark.asyncio
async def test_async():
    assert await mypkg.zeta() == 6
"""

INI = """
[pytest]
markers =
    slow: slow tests
asyncio_default_fixture_loop_scope = function
disable_test_id_escaping_and_forfeit_all_rights_to_community_support = true
"""


def functions(doc: dict[str, Any]) -> list[str]:
    """``Class.method`` or ``module.function`` of each function call, in order."""
    return [
        f"{e['defined_class']}.{e['method_id']}"
        for e in doc["events"]
        if e.get("event") == "call" and "method_id" in e
    ]


def make_project(pytester: pytest.Pytester, ini: str = INI) -> Path:
    pytester.makefile(".yml", trace=TRACE_YML)
    pytester.makeini(ini)
    pkg = pytester.mkpydir("mypkg")
    (pkg / "__init__.py").write_text(MYPKG, encoding="utf-8")
    pytester.makepyfile(
        test_suite=SUITE.replace("PARAMS", repr(PARAMS)), test_unit=UNIT, test_async=ASYNC
    )
    return pytester.path / "tmp" / "trace" / "pytest"


def test_each_test_has_its_own_document_with_its_metadata_and_events(
    pytester: pytest.Pytester,
) -> None:
    out = make_project(pytester)
    result = pytester.runpytest_subprocess("--trace-record", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=9, failed=1, errors=1, skipped=2, xfailed=1, xpassed=1)
    files = read_recordings(out)
    result.stdout.fnmatch_lines([f"tracetool: {len(files)} recordings written to {out}"])
    docs = by_name(files)
    params = [f"param [{p}]" for p in PARAMS]
    assert set(docs) == {
        "passes",
        "fails",
        "fixture error",
        "xfail",
        "xpass",
        "CalcTest theta",
        "async",
        *params,
    }

    # exactly each test's own calls: fixture setup and teardown included
    assert functions(docs["passes"]) == ["mypkg.prepare", "mypkg.alpha", "mypkg.cleanup"]
    assert functions(docs["fails"]) == ["mypkg.beta"]
    assert functions(docs["fixture error"]) == ["mypkg.broken_fixture"]
    assert functions(docs["xfail"]) == ["mypkg.gamma"]
    assert functions(docs["xpass"]) == ["mypkg.eta"]
    assert functions(docs["CalcTest theta"]) == ["mypkg.prepare", "mypkg.Calc.theta"]
    assert functions(docs["async"]) == ["mypkg.zeta"]
    for name, value in zip(params, PARAMS):
        assert functions(docs[name]) == ["mypkg.epsilon"]
        call = next(e for e in docs[name]["events"] if e.get("method_id") == "epsilon")
        assert value[:50] in call["parameters"][0]["value"]

    source = pytester.path / "test_suite.py"
    passes = docs["passes"]["metadata"]
    assert passes["labels"] == ["pytest", "passed"]
    assert passes["test_status"] == "succeeded"
    assert "test_failure" not in passes
    assert passes["source_location"] == f"test_suite.py:{line_of(source, 'def test_passes')}"
    assert passes["recorder"] == {"name": "pytest", "type": "tests"}
    assert passes["frameworks"][0] == {"name": "pytest", "version": pytest.__version__}
    assert passes["app"] == "demo"
    assert passes["language"]["name"] == "python"
    assert docs["passes"]["version"].startswith("1.")

    fails = docs["fails"]["metadata"]
    assert fails["labels"] == ["pytest", "failed"]
    assert fails["test_status"] == "failed"
    assert fails["test_failure"]["message"].startswith("AssertionError: assert 4 == 5")
    assert fails["test_failure"]["location"] == (
        f"test_suite.py:{line_of(source, 'assert mypkg.beta(2) == 5')}"
    )

    error = docs["fixture error"]["metadata"]
    assert error["labels"] == ["pytest", "error"]
    assert error["test_status"] == "failed"
    assert error["test_failure"]["message"] == "RuntimeError: fixture broke"
    assert error["test_failure"]["location"] == (
        f"test_suite.py:{line_of(source, 'mypkg.broken_fixture()')}"
    )

    assert docs["xfail"]["metadata"]["labels"] == ["pytest", "xfailed", "xfail"]
    assert docs["xfail"]["metadata"]["test_status"] == "succeeded"
    assert docs["xpass"]["metadata"]["labels"] == ["pytest", "xpassed", "xfail"]
    assert docs["xpass"]["metadata"]["labels"] != docs["xfail"]["metadata"]["labels"]
    assert docs[params[0]]["metadata"]["labels"] == ["pytest", "passed", "slow"]
    assert docs["async"]["metadata"]["labels"] == ["pytest", "passed", "asyncio"]
    unit = docs["CalcTest theta"]["metadata"]
    assert unit["source_location"] == (
        f"test_unit.py:{line_of(pytester.path / 'test_unit.py', 'def test_theta')}"
    )

    # file names: the node id, file-safe; parameters (and anything lossy) get 8 hex of the
    # node id's sha256, so a/b vs a_b and é vs ü stay apart; long names are capped
    names = sorted(files)
    assert "test_suite.py_test_passes.trace.json" in names
    assert "test_unit.py_CalcTest_test_theta.trace.json" in names
    assert len({n for n in names if "test_param" in n}) == len(PARAMS)
    for value in PARAMS:
        nodeid = f"test_suite.py::test_param[{value}]"
        digest = hashlib.sha256(nodeid.encode()).hexdigest()[:8]
        assert f"{safe_file_name(f'{nodeid} {digest}')}.trace.json" in names
    assert "test_suite.py_test_param_a_b_840c222f.trace.json" in names  # a/b
    assert max(len(n) for n in names) <= 140
    assert all(".." not in n and "/" not in n for n in names)


def test_skipped_tests_are_saved_on_request(pytester: pytest.Pytester) -> None:
    out = make_project(pytester)
    result = pytester.runpytest_subprocess(
        "--trace-record", "--trace-record-skipped", "-k", "skipped"
    )
    result.assert_outcomes(skipped=2)
    docs = by_name(read_recordings(out))
    assert set(docs) == {"skipped in body", "skipped by marker"}
    body = docs["skipped in body"]
    assert body["metadata"]["labels"] == ["pytest", "skipped"]
    assert body["metadata"]["test_status"] == "succeeded"
    assert functions(body) == ["mypkg.iota"]
    marker = docs["skipped by marker"]
    assert marker["metadata"]["labels"] == ["pytest", "skipped", "skip"]
    assert functions(marker) == []


def test_rerun_replaces_the_same_files_and_selection_options_work(
    pytester: pytest.Pytester,
) -> None:
    out = make_project(pytester)
    first = pytester.runpytest_subprocess("--trace-record", "-k", "passes or fails")
    first.assert_outcomes(passed=1, failed=1)
    before = read_recordings(out)
    assert sorted(before) == [
        "test_suite.py_test_fails.trace.json",
        "test_suite.py_test_passes.trace.json",
    ]
    # --lf runs only the failed test again: its file is replaced (an atomic rename: a new
    # inode), the other stays as it was
    passes = out / "test_suite.py_test_passes.trace.json"
    fails = out / "test_suite.py_test_fails.trace.json"
    kept, replaced = passes.stat().st_ino, fails.stat().st_ino
    second = pytester.runpytest_subprocess("--trace-record", "--lf", "-k", "passes or fails")
    second.assert_outcomes(failed=1)
    second.stdout.fnmatch_lines(["tracetool: 1 recording written to *"])
    after = read_recordings(out)
    assert sorted(after) == sorted(before)
    assert passes.stat().st_ino == kept and after[passes.name] == before[passes.name]
    assert fails.stat().st_ino != replaced
    assert after[fails.name]["metadata"] == before[fails.name]["metadata"]
    assert not list(out.glob(".*.tmp"))


@pytest.mark.parametrize(
    ("how", "args"),
    [("env", ()), ("ini", ()), ("trace-dir", ("--trace-record", "--trace-dir", "recs"))],
)
def test_other_ways_to_switch_recording_on(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str, args: tuple
) -> None:
    ini = INI + ("trace_record = true\n" if how == "ini" else "")
    out = make_project(pytester, ini)
    if how == "env":
        monkeypatch.setenv("TRACETOOL", "true")
    if how == "trace-dir":
        out = pytester.path / "recs" / "pytest"
    result = pytester.runpytest_subprocess(*args, "-k", "passes")
    result.assert_outcomes(passed=1)
    docs = by_name(read_recordings(out))
    assert functions(docs["passes"]) == ["mypkg.prepare", "mypkg.alpha", "mypkg.cleanup"]


def test_xdist_workers_each_write_their_own_tests(pytester: pytest.Pytester) -> None:
    out = make_project(pytester)
    result = pytester.runpytest_subprocess("--trace-record", "-n", "2", "-k", "param or passes")
    result.assert_outcomes(passed=len(PARAMS) + 1)
    docs = by_name(read_recordings(out))
    assert len(docs) == len(PARAMS) + 1
    result.stdout.fnmatch_lines([f"tracetool: {len(docs)} recordings written to {out}"])
    assert functions(docs["passes"]) == ["mypkg.prepare", "mypkg.alpha", "mypkg.cleanup"]
    for value in PARAMS:
        assert functions(docs[f"param [{value}]"]) == ["mypkg.epsilon"]
    assert not list(out.glob(".*.tmp"))


WEB = """
from flask import Flask
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

flask_app = Flask("mypkg")


@flask_app.get("/hello/<name>")
def hello(name):
    return {"hello": name}


async def star(request):
    return JSONResponse({"star": request.path_params["n"]})


def plain(request):
    return JSONResponse({"plain": 1})


star_app = Starlette(routes=[Route("/star/{n}", star), Route("/plain", plain)])
"""

WEB_TESTS = """
from starlette.testclient import TestClient

from mypkg.web import flask_app, star_app


def test_flask_client():
    assert flask_app.test_client().get("/hello/bob").get_json() == {"hello": "bob"}


def test_starlette_client():
    client = TestClient(star_app)
    assert client.get("/star/3").json() == {"star": "3"}
    assert client.get("/plain").json() == {"plain": 1}
"""


def test_requests_to_apps_in_process_belong_to_the_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Flask's test client runs the app in the test's thread, Starlette's TestClient in a portal
    # thread (sync views in a threadpool beyond it): all of it is in the test's document, and
    # per-request recording, even when switched on, writes nothing of its own.
    monkeypatch.setenv("TRACETOOL_RECORD_REQUESTS", "true")
    pytester.makefile(".yml", trace=TRACE_YML)
    pytester.makeini(INI)
    pkg = pytester.mkpydir("mypkg")
    (pkg / "web.py").write_text(WEB, encoding="utf-8")
    pytester.makepyfile(test_web=WEB_TESTS)
    result = pytester.runpytest_subprocess("--trace-record")
    result.assert_outcomes(passed=2)
    out = pytester.path / "tmp" / "trace"
    assert sorted(p.name for p in out.iterdir()) == ["pytest"]
    docs = by_name(read_recordings(out / "pytest"))

    def requests(doc: dict[str, Any]) -> list[tuple[str, str, int]]:
        calls = {e["id"]: e for e in doc["events"] if "http_server_request" in e}
        return [
            (
                calls[e["parent_id"]]["http_server_request"]["request_method"],
                calls[e["parent_id"]]["http_server_request"]["path_info"],
                e["http_server_response"]["status_code"],
            )
            for e in doc["events"]
            if "http_server_response" in e
        ]

    flask_doc = docs["flask client"]
    assert requests(flask_doc) == [("GET", "/hello/bob", 200)]
    assert "mypkg.web.hello" in functions(flask_doc)
    frameworks = [f["name"].lower() for f in flask_doc["metadata"]["frameworks"]]
    assert frameworks[0] == "pytest" and "flask" in frameworks
    star_doc = docs["starlette client"]
    assert requests(star_doc) == [("GET", "/star/3", 200), ("GET", "/plain", 200)]
    assert {"mypkg.web.star", "mypkg.web.plain"} <= set(functions(star_doc))
