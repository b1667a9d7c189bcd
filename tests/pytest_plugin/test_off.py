"""With recording off the plugin is inert: no agent import, no files, no summary line."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.usefixtures("clean_env")

CHECK_IMPORTS = """
import sys

def pytest_sessionfinish(session):
    loaded = sorted(m for m in sys.modules if m.startswith(("tracetool", "pytest_tracetool")))
    print("LOADED:", ",".join(loaded))
"""


@pytest.mark.parametrize(
    ("args", "env"),
    [
        ((), {}),
        (("--no-trace-record",), {"TRACETOOL": "true"}),
        ((), {"TRACETOOL": "false"}),
        (("--no-trace-record",), {"TRACETOOL_URL": "http://127.0.0.1:9"}),
    ],
    ids=["default", "flag-beats-env", "env-false", "flag-beats-url"],
)
def test_off_imports_nothing_and_writes_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple, env: dict
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makeconftest(CHECK_IMPORTS)
    pytester.makepyfile("def test_a():\n    pass\n")
    result = pytester.runpytest_subprocess("-s", *args)
    result.assert_outcomes(passed=1)
    (loaded,) = re.findall(r"LOADED: (\S*)", result.stdout.str())
    modules = loaded.split(",")
    assert [m for m in modules if m.startswith("pytest_tracetool")] == [
        "pytest_tracetool",
        "pytest_tracetool.plugin",
    ]
    if "TRACETOOL" not in env:
        # (with TRACETOOL set, the agent's .pth start-up hook looks for a trace.yml itself)
        assert [m for m in modules if m.startswith("tracetool")] == []
    assert "tracetool:" not in result.stdout.str()
    assert not (pytester.path / "tmp").exists()


def test_options_are_listed_in_help(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(
        [
            "tracetool recording (one trace document per test):",
            "*--trace-record*",
            "*--no-trace-record*",
            "*--trace-url=URL*",
            "*--trace-dir=DIR*",
            "*--trace-record-skipped*",
        ]
    )
    result.stdout.fnmatch_lines(["*trace_record (bool):*"])
