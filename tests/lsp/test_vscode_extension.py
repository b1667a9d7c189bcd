"""editors/vscode: package.json has what VS Code needs, and extension.js does what it says.

extension.js is run by node (when installed) against small stand-ins for the `vscode` and
`vscode-languageclient/node` modules: the harness activates it, records the commands it
registers and the client it builds, clicks a lens through the middleware and picks a recording.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path
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
    assert hidden == SERVER_COMMANDS | {"tracetool.pickRecording"}


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
    ):
        setting = f"tracetool.{option}"
        assert setting in props, setting
        assert f'{option}: s.get("{option}")' in js


HARNESS = textwrap.dedent(
    r"""
    const Module = require("module");
    const registered = {};
    const requests = [];
    const opened = [];
    let built = null;
    const vscode = {
      window: {
        createOutputChannel: () => ({ dispose() {} }),
        showQuickPick: async (items, options) => { vscode.lastPick = { items, options }; return items[0]; },
        showTextDocument: async () => {},
        showErrorMessage: (m) => { throw new Error("unexpected error: " + m); },
        showWarningMessage: () => {},
        showInputBox: async () => null,
        activeTextEditor: undefined,
      },
      workspace: {
        workspaceFolders: [{ uri: { fsPath: "/project" } }],
        getConfiguration: () => ({ get: (key) => ({ serverPath: ".venv/bin/tracetool-lsp",
          serverArgs: ["--log-level", "INFO"], pollInterval: 2, nPlusOneThreshold: 10,
          exceptionDiagnostics: true })[key] }),
        onDidChangeConfiguration: () => ({ dispose() {} }),
        openTextDocument: async (options) => { opened.push(options); return {}; },
      },
      commands: { registerCommand: (id, fn) => { registered[id] = fn; return { dispose() {} }; } },
    };
    class LanguageClient {
      constructor(id, name, serverOptions, clientOptions) {
        built = { id, name, serverOptions, clientOptions };
      }
      async start() {}
      async stop() {}
      async sendRequest(type, params) {
        requests.push(params);
        if (params.command === "tracetool.showRecordings") {
          return { name: "shop/store/Store#names", count: 1, recordings: [
            { name: "list items", recording: "code/list_items.trace.json", count: 1,
              total_ms: 0.07, test_status: null }] };
        }
        if (params.command === "tracetool.sequenceDiagram") {
          return { diagram: "@startuml\n@enduml\n", format: "plantuml" };
        }
        throw new Error("unexpected " + params.command);
      }
    }
    const stubs = {
      vscode,
      "vscode-languageclient/node": {
        LanguageClient, TransportKind: { stdio: 0 },
        ExecuteCommandRequest: { type: "workspace/executeCommand" },
      },
    };
    const load = Module._load;
    Module._load = function (request, ...rest) {
      return request in stubs ? stubs[request] : load.call(this, request, ...rest);
    };
    (async () => {
      const ext = require(process.argv[2]);
      await ext.activate({ subscriptions: [] });
      const lens = { command: { title: "▶ called 1×", command: "tracetool.showRecordings",
                                arguments: [{ uri: "file:///project/shop/store.py", fqid: "f" }] } };
      const lenses = await built.clientOptions.middleware.provideCodeLenses(
        {}, null, async () => [lens]);
      await registered["tracetool.pickRecording"](...lenses[0].command.arguments);
      console.log(JSON.stringify({
        registered: Object.keys(registered).sort(),
        serverOptions: built.serverOptions,
        selector: built.clientOptions.documentSelector,
        init: built.clientOptions.initializationOptions,
        lens: lenses[0].command,
        requests,
        opened,
        pick: vscode.lastPick.items.map((i) => i.label),
      }));
    })().catch((err) => { console.error(err); process.exit(1); });
    """
)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_extension_in_node_with_stand_ins(tmp_path: Path) -> None:
    harness = tmp_path / "harness.js"
    harness.write_text(HARNESS, encoding="utf-8")
    result = subprocess.run(
        ["node", str(harness), str(EXTENSION / "extension.js")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out["registered"]) == CLIENT_COMMANDS
    assert out["serverOptions"] == {
        "command": "/project/.venv/bin/tracetool-lsp",
        "args": ["--log-level", "INFO"],
        "transport": 0,
    }
    assert out["selector"] == [{"scheme": "file", "language": "python"}]
    assert out["init"] == {
        "queryDb": None,
        "traceDir": None,
        "pollInterval": 2,
        "nPlusOneThreshold": 10,
        "exceptionDiagnostics": True,
    }
    # the lens runs the client command with the server's arguments
    assert out["lens"]["command"] == "tracetool.pickRecording"
    assert out["lens"]["title"] == "▶ called 1×"
    uri = "file:///project/shop/store.py"
    assert out["requests"] == [
        {"command": SHOW_RECORDINGS, "arguments": [{"uri": uri, "fqid": "f"}]},
        {
            "command": SEQUENCE_DIAGRAM,
            "arguments": [
                {"uri": uri, "recording": "code/list_items.trace.json", "format": "plantuml"}
            ],
        },
    ]
    assert out["pick"] == ["list items"]
    assert out["opened"] == [{"content": "@startuml\n@enduml\n", "language": "plantuml"}]
