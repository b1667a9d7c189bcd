// The recording viewer: a webview panel per recording running media/viewer.js. The extension
// answers the page's messages: `view` → the daemon's `appmap.view` (with the page's filter and
// diagram options), `openSource` → opens the file at the call's line, `copy` → the encoded filter
// state to the clipboard (what `tracetool prune --filter` takes).

"use strict";

const path = require("path");
const vscode = require("vscode");

const panels = new Map(); // `${directory}::${recording}` → panel

function nonce() {
  let text = "";
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (let i = 0; i < 32; i++) text += chars.charAt(Math.floor(Math.random() * chars.length));
  return text;
}

function html(webview, extensionUri) {
  const media = (name) => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "media", name));
  const n = nonce();
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${webview.cspSource} data:; style-src ${webview.cspSource} 'unsafe-inline'; script-src 'nonce-${n}';">
<link rel="stylesheet" href="${media("viewer.css")}">
<title>tracetool recording</title></head>
<body><div id="status"></div><div id="app"></div>
<script nonce="${n}" src="${media("viewer.js")}"></script></body></html>`;
}

async function openSource(directory, location) {
  const at = location.lastIndexOf(":");
  const file = at > 0 ? location.slice(0, at) : location;
  const line = at > 0 ? Number(location.slice(at + 1)) || 1 : 1;
  const full = path.isAbsolute(file) ? file : path.join(directory, file);
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(full));
  const pos = new vscode.Position(Math.max(line - 1, 0), 0);
  await vscode.window.showTextDocument(doc, {
    viewColumn: vscode.ViewColumn.One,
    selection: new vscode.Range(pos, pos),
    preserveFocus: false,
  });
}

function openViewer(context, project, recording, name) {
  const key = `${project.directory}::${recording}`;
  const existing = panels.get(key);
  if (existing) {
    existing.reveal();
    return existing;
  }
  const panel = vscode.window.createWebviewPanel(
    "tracetool.recording",
    name || path.basename(recording),
    vscode.ViewColumn.Beside,
    {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [vscode.Uri.joinPath(context.extensionUri, "media")],
    }
  );
  panels.set(key, panel);
  panel.onDidDispose(() => panels.delete(key));
  let last = {};
  const load = async (params) => {
    last = params || last;
    try {
      const data = await project.daemon.call("appmap.view", { appmap: recording, ...last });
      panel.title = data.name || name || recording;
      panel.webview.postMessage({ type: "data", data });
    } catch (e) {
      panel.webview.postMessage({ type: "error", message: `tracetool: ${e.message}` });
    }
  };
  panel.webview.onDidReceiveMessage(async (msg) => {
    try {
      if (msg.type === "ready") await load(last);
      else if (msg.type === "view") await load(msg.params);
      else if (msg.type === "openSource") await openSource(project.directory, msg.location);
      else if (msg.type === "copy") {
        await vscode.env.clipboard.writeText(msg.text || "");
        vscode.window.showInformationMessage(
          msg.text ? `tracetool: filter state copied (tracetool prune --filter ${msg.text})` : "tracetool: no filter set"
        );
      }
    } catch (e) {
      vscode.window.showErrorMessage(`tracetool: ${e.message || e}`);
    }
  });
  panel.webview.html = html(panel.webview, context.extensionUri);
  return panel;
}

module.exports = { openViewer, openSource, html };
