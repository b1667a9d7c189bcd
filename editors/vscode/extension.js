// tracetool for VS Code.
//
// - For each workspace folder with a trace.yml, the daemon that serves its recordings
//   (daemon.js: the running one, else `tracetool rpc -d FOLDER` started here and stopped on
//   deactivate). The Recordings view (recordings.js) and the recording viewer (viewer.js +
//   media/viewer.js) get their data from it over JSON-RPC.
// - `tracetool-lsp` (the tracetool language server) with vscode-languageclient: code lenses,
//   hovers and diagnostics. It asks the same daemon (found by its discovery file) for its data.
//   A lens click opens a quick pick of the function's recordings; picking one opens the viewer.
//
// Plain JavaScript, no build step. Install the dependency with `npm install` in this folder.

"use strict";

const fs = require("fs");
const path = require("path");
const vscode = require("vscode");
const { Daemon } = require("./daemon");
const { RecordingsProvider } = require("./recordings");
const { openViewer } = require("./viewer");
const {
  LanguageClient,
  TransportKind,
  ExecuteCommandRequest,
} = require("vscode-languageclient/node");

let client = null;
let output = null;
let projects = []; // [{name, directory, daemon}]
let recordings = null;
let pollTimer = null;
let extensionContext = null;

function settings() {
  return vscode.workspace.getConfiguration("tracetool");
}

function resolveExecutable(configured) {
  const folders = vscode.workspace.workspaceFolders;
  if (configured.includes("/") || configured.includes("\\")) {
    if (!path.isAbsolute(configured) && folders && folders.length > 0) {
      return path.join(folders[0].uri.fsPath, configured);
    }
  }
  return configured;
}

function cliCommand() {
  return resolveExecutable(settings().get("cliPath") || "tracetool");
}

// Workspace folders with a trace.yml (the folder itself or its parents up to the filesystem root).
function findProjects() {
  const out = [];
  for (const folder of vscode.workspace.workspaceFolders || []) {
    let dir = folder.uri.fsPath;
    while (true) {
      if (fs.existsSync(path.join(dir, "trace.yml"))) {
        if (!out.some((p) => p.directory === dir)) {
          const log = (line) => output && output.appendLine(line);
          out.push({ name: path.basename(dir), directory: dir, daemon: new Daemon(dir, cliCommand(), log) });
        }
        break;
      }
      const parent = path.dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  return out;
}

function projectOf(directory) {
  return projects.find((p) => p.directory === directory) || projects[0];
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
    slowQueryMs: s.get("slowQueryMs"),
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

function fileProject(uri) {
  const file = uri && uri.startsWith("file:") ? vscode.Uri.parse(uri).fsPath : null;
  if (file) {
    const own = projects
      .filter((p) => file === p.directory || file.startsWith(p.directory + path.sep))
      .sort((a, b) => b.directory.length - a.directory.length);
    if (own.length > 0) return own[0];
  }
  return projects[0];
}

async function openDiagram(uri, recording) {
  const project = fileProject(uri);
  if (!project) throw new Error("no trace.yml in the workspace");
  openViewer(extensionContext, project, recording, null);
}

async function openRecording(arg) {
  if (!arg || !arg.recording) return;
  const project = projectOf(arg.directory);
  if (!project) {
    vscode.window.showErrorMessage("tracetool: no trace.yml in the workspace");
    return;
  }
  openViewer(extensionContext, project, arg.recording, arg.name);
}

async function filterRecordings() {
  const text = await vscode.window.showInputBox({
    title: "Filter recordings",
    prompt: "Name, path, route or test file contains… (empty: show all)",
    value: recordings ? recordings.filter : "",
  });
  if (text === undefined || !recordings) return;
  recordings.setFilter(text.trim());
  vscode.commands.executeCommand("setContext", "tracetool.filtered", Boolean(text.trim()));
  if (treeView) treeView.message = text.trim() ? `Filter: ${text.trim()}` : undefined;
}

let treeView = null;

function startRecordingsView(context) {
  projects = findProjects();
  recordings = new RecordingsProvider(projects);
  treeView = vscode.window.createTreeView("tracetool.recordings", {
    treeDataProvider: recordings,
    showCollapseAll: true,
  });
  const seconds = Number(settings().get("pollInterval")) || 2;
  pollTimer = setInterval(() => recordings.poll(), seconds * 1000);
  context.subscriptions.push(treeView, {
    dispose: () => {
      clearInterval(pollTimer);
      for (const p of projects) p.daemon.stop();
    },
  });
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
      placeHolder: "Open a recording (sequence diagram, calls, HTTP)",
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
    // hovers link recordings to `command:tracetool.openRecording` (the viewer)
    markdown: { isTrusted: { enabledCommands: ["tracetool.openRecording"] } },
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
  extensionContext = context;
  output = vscode.window.createOutputChannel("tracetool");
  startRecordingsView(context);
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand("tracetool.openRecording", openRecording),
    vscode.commands.registerCommand("tracetool.filterRecordings", filterRecordings),
    vscode.commands.registerCommand("tracetool.clearFilter", () => {
      if (recordings) recordings.setFilter("");
      if (treeView) treeView.message = undefined;
      vscode.commands.executeCommand("setContext", "tracetool.filtered", false);
    }),
    vscode.commands.registerCommand("tracetool.refreshRecordings", () => recordings && recordings.refresh()),
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
  if (pollTimer) clearInterval(pollTimer);
  for (const p of projects) p.daemon.stop();
  return stop();
}

module.exports = { activate, deactivate, api: () => ({ projects, recordings }) };
