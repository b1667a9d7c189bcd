"""Diagrams are views remade from their recordings: written atomically, but not fsynced
(`tracetool.diagram.service`'s doc). What a command cannot remake still is (a recording)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from tests.diagram.conftest import REVOKE, app
from tracetool.cli import cli
from tracetool.diagram import build_diagram
from tracetool.diagram import streamed as streamed_module
from tracetool.diagram.model import to_json
from tracetool.trace import atomic, load
from tracetool.trace.document import save


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the process asks of the disk, in order: "fsync" for any fsync, "writeback" for each
    writeback the atomic writer starts."""
    seen: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        seen.append("fsync")
        real(fd)

    def writeback(*args: object) -> None:
        seen.append("writeback")

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(atomic, "_start_writeback", writeback)
    return seen


def _no_temporaries(folder: Path) -> None:
    assert not [p for p in folder.rglob("*") if p.name.endswith(atomic.TEMP_SUFFIX)]


@pytest.mark.parametrize(
    ("fmt", "streamed"),
    [("json", False), ("json", True), ("plantuml", False), ("plantuml", True), ("png", False)],
)
def test_a_diagram_is_written_without_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, syncs: list[str], fmt: str, streamed: bool
) -> None:
    taken: list[bool] = []
    if streamed:
        real = streamed_module.stream_diagram

        def spy(*args: Any, **kwargs: Any) -> Any:
            taken.append(True)
            return real(*args, **kwargs)

        monkeypatch.setattr(streamed_module, "STREAM_THRESHOLD", 0)
        monkeypatch.setattr(streamed_module, "WHOLE_LIMIT", 0)
        monkeypatch.setattr(streamed_module, "stream_diagram", spy)
    out = tmp_path / "out"
    out.mkdir()
    ext = {"json": "json", "plantuml": "uml", "png": "png"}[fmt]
    target = out / f"revoke_api_key.sequence.{ext}"
    target.write_bytes(b"an older diagram")
    args = ["sequence-diagram", str(REVOKE), "-f", fmt, "--output-dir", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert syncs == []
    assert taken == ([True] if streamed else [])
    body = target.read_bytes()
    if fmt == "json":
        assert len(orjson.loads(body)["rootActions"]) == 3
    elif fmt == "plantuml":
        assert body.startswith(b"@startuml") and body.rstrip().endswith(b"@enduml")
    else:
        assert body.startswith(b"\x89PNG")
    _no_temporaries(tmp_path)


def test_a_diff_diagram_is_written_without_fsync(tmp_path: Path, syncs: list[str]) -> None:
    base, head = tmp_path / "base", tmp_path / "head"
    for side, name in ((base, "user_not_found"), (head, "show_user")):
        side.mkdir()
        (side / "user.sequence.json").write_bytes(
            orjson.dumps(to_json(build_diagram(load(app(name)))))
        )
    out = tmp_path / "out"
    args = ["sequence-diagram-diff", str(base), str(head), "--output-dir", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert syncs == []
    assert (out / "user.diff.sequence.uml").read_text().startswith("@startuml")
    _no_temporaries(tmp_path)


def test_a_recording_is_still_fsynced(tmp_path: Path, syncs: list[str]) -> None:
    doc = load(REVOKE)
    target = tmp_path / "copy.appmap.json"
    save(doc, target)
    assert syncs == ["fsync"]
    assert load(target).events == doc.events
