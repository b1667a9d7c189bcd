"""editors/vscode: package.json has what VS Code needs.

What the extension does is tested in a real VS Code (tests/editor/test_real_vscode.py, when
scripts/install-vscode-parts installed code-server) and its viewer page in headless Chromium
against a real daemon (tests/editor/test_viewer_chromium.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from tracetool_daemon.lsp.server import (
    FUNCTION_DETAIL,
    REFRESH,
    SEQUENCE_DIAGRAM,
    SHOW_RECORDINGS,
)

from tests.conftest import ROOT

EXTENSION = ROOT / "editors" / "vscode"
SERVER_COMMANDS = {SHOW_RECORDINGS, SEQUENCE_DIAGRAM, FUNCTION_DETAIL, REFRESH}
CLIENT_COMMANDS = {
    "tracetool.openRecording",
    "tracetool.filterRecordings",
    "tracetool.clearFilter",
    "tracetool.refreshRecordings",
    "tracetool.pickRecording",
    "tracetool.openSequenceDiagram",
    "tracetool.reload",
    "tracetool.restartServer",
}


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    data = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_manifest_fields(manifest: dict[str, Any]) -> None:
    for key in ("name", "displayName", "description", "version", "publisher", "main"):
        assert isinstance(manifest[key], str) and manifest[key], key
    assert re.fullmatch(r"[a-z0-9][a-z0-9._-]*", manifest["name"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert re.fullmatch(r"\^\d+\.\d+\.\d+", manifest["engines"]["vscode"])
    assert (EXTENSION / manifest["main"]).is_file()
    assert "onLanguage:python" in manifest["activationEvents"]
    assert manifest["dependencies"]["vscode-languageclient"].startswith("^9.")
    # no build step and no vendored modules
    assert "scripts" not in manifest or "compile" not in manifest["scripts"]
    assert not (EXTENSION / "node_modules").exists()
    assert (EXTENSION / "README.md").is_file()


def test_manifest_declares_every_command(manifest: dict[str, Any]) -> None:
    commands = manifest["contributes"]["commands"]
    ids = [c["command"] for c in commands]
    assert len(ids) == len(set(ids))
    assert set(ids) == SERVER_COMMANDS | CLIENT_COMMANDS
    for entry in commands:
        assert entry["title"] and entry["category"] == "tracetool"
    hidden = {m["command"] for m in manifest["contributes"]["menus"]["commandPalette"]}
    # data commands need arguments: not offered in the command palette
    assert hidden == SERVER_COMMANDS | {"tracetool.pickRecording", "tracetool.openRecording"}


def test_manifest_recordings_view(manifest: dict[str, Any]) -> None:
    contributes = manifest["contributes"]
    [container] = contributes["viewsContainers"]["activitybar"]
    assert (EXTENSION / container["icon"]).is_file()
    [view] = contributes["views"][container["id"]]
    assert view["id"] == "tracetool.recordings"
    titles = {m["command"] for m in contributes["menus"]["view/title"]}
    assert {"tracetool.filterRecordings", "tracetool.refreshRecordings"} <= titles
    js = (EXTENSION / "extension.js").read_text(encoding="utf-8")
    for module in ("./daemon", "./recordings", "./viewer"):
        assert f'require("{module}")' in js
        assert (EXTENSION / f"{module[2:]}.js").is_file()
    for name in ("viewer.js", "viewer.css", "http-host.js", "standalone.html"):
        assert (EXTENSION / "media" / name).is_file(), name


def test_manifest_configuration(manifest: dict[str, Any]) -> None:
    props = manifest["contributes"]["configuration"]["properties"]
    assert props["tracetool.serverPath"]["default"] == "tracetool-lsp"
    for name, spec in props.items():
        assert name.startswith("tracetool.")
        assert "type" in spec and "default" in spec and spec["description"], name
    # every initialization option the server reads has a setting
    js = (EXTENSION / "extension.js").read_text(encoding="utf-8")
    for option in (
        "queryDb",
        "traceDir",
        "pollInterval",
        "nPlusOneThreshold",
        "exceptionDiagnostics",
        "slowQueryMs",
    ):
        setting = f"tracetool.{option}"
        assert setting in props, setting
        assert f'{option}: s.get("{option}")' in js
