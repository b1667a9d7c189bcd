"""The explicit API (tracetool.agent), the writer and the metadata."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from tracetool import agent
from tracetool.agent import metadata
from tracetool.agent.writer import MAX_NAME, recording_path, safe_file_name, save_recording
from tracetool.errors import UsageError

from .conftest import names


@pytest.fixture
def app(project: Any) -> Any:
    project.write(
        "calc", "def add(a, b):\n    return a + b\n\ndef boom():\n    raise KeyError('k')\n"
    )
    project.configure(f"name: calc-app\ntrace_dir: {project.root / 'traces'}\npackages: [PKG]\n")
    return project.load("calc")


def test_record_block_saves_under_trace_dir(app: Any, project: Any) -> None:
    with agent.record("adding numbers") as block:
        assert agent.enabled()
        assert app.add(1, 2) == 3
    assert block.path == project.root / "traces" / "code" / "adding_numbers.trace.json"
    doc = orjson.loads(block.path.read_bytes())
    assert doc["metadata"]["name"] == "adding numbers"
    assert doc["metadata"]["app"] == "calc-app"
    assert doc["metadata"]["recorder"] == {"name": "explicit", "type": "code"}
    assert names(doc) == ["calc.add"]
    assert block.document["events"] == doc["events"]


def test_record_block_to_explicit_path_even_when_it_raises(app: Any, tmp_path: Path) -> None:
    target = tmp_path / "x" / "boom.trace.json"
    with pytest.raises(KeyError), agent.record("boom", path=target):
        app.boom()
    doc = orjson.loads(target.read_bytes())
    assert doc["metadata"]["exception"] == {"class": "KeyError", "message": "'k'"}
    ret = doc["events"][1]
    assert ret["exceptions"][0]["class"] == "builtins.KeyError"


def test_start_and_stop_recording(app: Any) -> None:
    agent.start_recording("manual")
    with pytest.raises(UsageError):
        agent.start_recording()
    app.add(2, 2)
    doc = agent.stop_recording()
    assert doc["metadata"]["name"] == "manual"
    assert names(doc) == ["calc.add"]
    with pytest.raises(UsageError):
        agent.stop_recording()


def test_labels_decorator_keeps_the_function() -> None:
    def f(x: int) -> int:
        return x

    assert agent.labels("a", "b")(f) is f


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("test_checkout[tea-3]", "test_checkout_tea-3"),
        ("GET /orders/{id}", "GET_orders_id"),
        ("..", "recording"),
        ("", "recording"),
        ("ünïcode näme", "n_code_n_me"),
    ],
)
def test_safe_file_name(name: str, expected: str) -> None:
    assert safe_file_name(name) == expected


def test_long_names_are_cut_and_stay_distinct() -> None:
    a, b = "x" * 300 + "a", "x" * 300 + "b"
    assert safe_file_name(a) != safe_file_name(b)
    assert len(safe_file_name(a)) == MAX_NAME + 9


def test_save_recording_writes_a_dict_atomically(tmp_path: Path) -> None:
    doc = {"version": "1.12", "metadata": {}, "classMap": [], "events": []}
    path = save_recording(doc, "a test", subdir="pytest", trace_dir=tmp_path)
    assert path == tmp_path / "pytest" / "a_test.trace.json"
    assert orjson.loads(path.read_bytes()) == doc
    assert [p.name for p in path.parent.iterdir()] == ["a_test.trace.json"]  # no temp files
    assert recording_path("a test", "pytest", tmp_path) == path


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_git_metadata(project: Any) -> None:
    root = project.root
    project.configure()
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.email=a@b", "-c", "user.name=a", "add", "trace.yml")
    git(root, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init")
    git(root, "remote", "add", "origin", "https://user:s3cret@example.com/acme/shop.git")
    metadata.reset_git_cache()
    try:
        md = metadata.base_metadata("pytest", "tests", "t")
    finally:
        metadata.reset_git_cache()
    assert md["git"]["repository"] == "https://example.com/acme/shop.git"
    assert md["git"]["branch"] == "main"
    assert len(md["git"]["commit"]) == 40
    assert "?? " + project.pkg + "/" in md["git"]["status"]
    assert md["name"] == "t"
    assert md["recorder"] == {"name": "pytest", "type": "tests"}


def test_no_git_no_git_metadata(project: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    project.configure()
    monkeypatch.setenv("PATH", "")
    metadata.reset_git_cache()
    try:
        md = metadata.base_metadata("remote", "remote")
    finally:
        metadata.reset_git_cache()
    assert "git" not in md
    assert md["language"]["name"] == "python"


def test_frameworks_registered_by_integrations(project: Any) -> None:
    project.configure()
    metadata.add_framework("flask", "3.0.0")
    try:
        assert {"name": "flask", "version": "3.0.0"} in metadata.base_metadata("r", "r")[
            "frameworks"
        ]
    finally:
        metadata._frameworks.pop("flask", None)
