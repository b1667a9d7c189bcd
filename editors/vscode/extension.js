// tracetool for VS Code: starts `tracetool-lsp` (the tracetool language server) with
// vscode-languageclient and turns its data commands into views.
//
// The server provides code lenses, hovers and diagnostics by itself. Its workspace commands
// return data (tracetool.showRecordings, tracetool.sequenceDiagram, tracetool.functionDetail,
// tracetool.refresh); vscode-languageclient registers them under those ids. This file adds
// the client side: a lens click opens a quick pick of the function's recordings, and picking
// one opens its sequence diagram (PlantUML) in an editor.
//
// Plain JavaScript, no build step. Install the dependency with `npm install` in this folder.

"use strict";

const path = require("path");
const vscode = require("vscode");
const {
  LanguageClient,
  TransportKind,
  ExecuteCommandRequest,
} = require("vscode-languageclient/node");

let client = null;
let output = null;

function settings() {
  return vscode.workspace.getConfiguration("tracetool");
}

function serverCommand() {
  const configured = settings().get("serverPath") || "tracetool-lsp";
  const folders = vscode.workspace.workspaceFolders;
  // "tracetool-lsp" is looked up on PATH; ".venv/bin/tracetool-lsp" is relative to the project.
  if (configured.includes("/") || configured.includes("\\")) {
    if (!path.isAbsolute(configured) && folders && folders.length > 0) {
      return path.join(folders[0].uri.fsPath, configured);
    }
  }
  return configured;
}

function initializationOptions() {
  const s = settings();
  return {
    queryDb: s.get("queryDb") || null,
    traceDir: s.get("traceDir") || null,
    pollInterval: s.get("pollInterval"),
    nPlusOneThreshold: s.get("nPlusOneThreshold"),
    exceptionDiagnostics: s.get("exceptionDiagnostics"),
  };
}

// Ask the server to run one of its data commands and return the result.
function serverData(command, arg) {
  if (!client) {
    return Promise.reject(new Error("the tracetool language server is not running"));
  }
  return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] });
}

function formatMs(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(3)} ms`;
}

async function openDiagram(uri, recording) {
  const result = await serverData("tracetool.sequenceDiagram", {
    uri,
    recording,
    format: "plantuml",
  });
  const doc = await vscode.workspace.openTextDocument({
    content: result.diagram,
    language: "plantuml",
  });
  await vscode.window.showTextDocument(doc, { preview: true });
}

// A lens click: {uri, fqid} → quick pick of recordings → sequence diagram of the chosen one.
async function pickRecording(arg) {
  try {
    const result = await serverData("tracetool.showRecordings", arg);
    const items = result.recordings.map((r) => ({
      label: r.name,
      description: `${r.count}× · ${formatMs(r.total_ms)}${r.test_status ? ` · ${r.test_status}` : ""}`,
      detail: r.recording,
      recording: r.recording,
    }));
    const picked = await vscode.window.showQuickPick(items, {
      title: `${result.name} — ${result.count} recording(s)`,
      placeHolder: "Open the sequence diagram of a recording",
      matchOnDetail: true,
    });
    if (picked) {
      await openDiagram(arg && arg.uri, picked.recording);
    }
  } catch (err) {
    vscode.window.showErrorMessage(`tracetool: ${err.message || err}`);
  }
}

async function openSequenceDiagram() {
  const editor = vscode.window.activeTextEditor;
  const name = editor && editor.document.uri.fsPath;
  let recording = null;
  if (name && /\.(trace|appmap)\.json$/.test(name)) {
    recording = name;
  } else {
    recording = await vscode.window.showInputBox({
      prompt: "Recording: its name, or its path relative to trace_dir",
    });
  }
  if (!recording) return;
  const uri = editor ? editor.document.uri.toString() : undefined;
  try {
    await openDiagram(uri && uri.endsWith(".py") ? uri : undefined, recording);
  } catch (err) {
    vscode.window.showErrorMessage(`tracetool: ${err.message || err}`);
  }
}

function makeClient() {
  const serverOptions = {
    command: serverCommand(),
    args: settings().get("serverArgs") || [],
    transport: TransportKind.stdio,
  };
  const clientOptions = {
    documentSelector: [{ scheme: "file", language: "python" }],
    initializationOptions: initializationOptions(),
    outputChannel: output,
    middleware: {
      // Lenses carry the server's data command; clicking should show something, so they run
      // the client command that presents the data instead.
      provideCodeLenses: async (document, token, next) => {
        const lenses = await next(document, token);
        for (const lens of lenses || []) {
          if (lens.command && lens.command.command === "tracetool.showRecordings") {
            lens.command = {
              title: lens.command.title,
              command: "tracetool.pickRecording",
              arguments: lens.command.arguments,
            };
          }
        }
        return lenses;
      },
    },
  };
  return new LanguageClient("tracetool", "tracetool", serverOptions, clientOptions);
}

async function start() {
  client = makeClient();
  try {
    await client.start();
  } catch (err) {
    const command = serverCommand();
    client = null;
    vscode.window.showErrorMessage(
      `tracetool: could not start the language server \`${command}\` (${err.message || err}). ` +
        "Install the tracetool tool (its binary, or `uv tool install` / `pipx install`; see the README) or set `tracetool.serverPath`."
    );
  }
}

async function stop() {
  if (client) {
    const running = client;
    client = null;
    await running.stop();
  }
}

async function restart() {
  await stop();
  await start();
}

function activate(context) {
  output = vscode.window.createOutputChannel("tracetool");
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand("tracetool.pickRecording", pickRecording),
    vscode.commands.registerCommand("tracetool.openSequenceDiagram", openSequenceDiagram),
    vscode.commands.registerCommand("tracetool.restartServer", restart),
    vscode.commands.registerCommand("tracetool.reload", async () => {
      try {
        const result = await serverData("tracetool.refresh", {});
        const missing = result.projects.filter((p) => !p.indexed);
        if (missing.length > 0) {
          vscode.window.showWarningMessage(`tracetool: ${missing[0].missing}`);
        }
      } catch (err) {
        vscode.window.showErrorMessage(`tracetool: ${err.message || err}`);
      }
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("tracetool") && !event.affectsConfiguration("tracetool.trace")) {
        restart();
      }
    }),
    { dispose: () => stop() }
  );
  return start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
