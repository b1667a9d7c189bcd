"""The source-rewriting mechanism (3.9–3.11): its bytecode cache and its fallback."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tracetool.agent import instrument, rewrite_cache
from tracetool.agent.recorder import get_recorder

from .conftest import names

pytestmark = pytest.mark.skipif(
    instrument.choose_mechanism() != instrument.REWRITE,
    reason="this interpreter records with sys.monitoring",
)

SOURCE = "def double(x):\n    return 2 * x\n"


def record(func: Any) -> dict:
    scope = get_recorder().start_scoped("t")
    try:
        func()
    finally:
        recording = scope.stop()
    return recording.to_dict()


def forget(module: str) -> None:
    sys.modules.pop(module, None)


def cache_file(path: Path) -> Path:
    return Path(rewrite_cache._path(str(path)) or "")


@pytest.fixture(autouse=True)
def write_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # (PYTHONDONTWRITEBYTECODE is honoured)


def test_rewritten_module_is_cached_and_reused(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write("calc", SOURCE)
    project.configure()
    assert project.load("calc").double(2) == 4
    source = project.root / project.pkg / "calc.py"
    cached = cache_file(source)
    assert cached.is_file() and ".opt-tracetool" in cached.name

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("rewrote although the cache is fresh")

    monkeypatch.setattr("tracetool.agent.rewrite.rewrite_module", fail)
    forget(f"{project.pkg}.calc")
    calc = project.load("calc")
    doc = record(lambda: calc.double(21))
    assert names(doc) == ["calc.double"]
    assert doc["events"][1]["return_value"]["value"] == "42"


def test_stale_cache_is_rewritten(project: Any) -> None:
    project.write("calc", SOURCE)
    project.configure()
    project.load("calc")
    forget(f"{project.pkg}.calc")
    source = project.root / project.pkg / "calc.py"
    assert cache_file(source).is_file()
    source.write_text("def triple(x):\n    return 3 * x\n")
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))
    calc = project.load("calc")
    doc = record(lambda: calc.triple(1))
    assert names(doc) == ["calc.triple"]


def test_failed_rewrite_runs_the_module_unrecorded(
    project: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("rewrite bug")

    monkeypatch.setattr("tracetool.agent.rewrite.rewrite_module", broken)
    project.write("calc", SOURCE)
    project.configure()
    calc = project.load("calc")
    assert calc.double(5) == 10
    assert "not instrumented (rewrite bug)" in capsys.readouterr().err
    assert record(lambda: calc.double(1))["events"] == []


def test_no_cache_when_bytecode_writing_is_off(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    project.write("calc", SOURCE)
    project.configure()
    project.load("calc")
    assert not cache_file(project.root / project.pkg / "calc.py").exists()


def test_syntax_errors_are_the_modules_own(project: Any) -> None:
    project.write("bad", "def broken(:\n    pass\n")
    project.configure()
    with pytest.raises(SyntaxError) as info:
        project.load("bad")
    assert info.value.filename.endswith("bad.py")
