// The Recordings view: a tree from the daemon's `appmap.groups` — folders (when several), then
// test files / routes, then recordings with status icons. A filter (the view's search button)
// is passed to the daemon as `text`; `index.status` is polled so the tree follows new
// recordings while tests run.

"use strict";

const vscode = require("vscode");

const STATUS_ICONS = {
  failed: ["error", "testing.iconFailed"],
  exception: ["warning", "problemsWarningIcon.foreground"],
  "n+1": ["database", "problemsWarningIcon.foreground"],
  ok: ["pass", "testing.iconPassed"],
};
const KIND_ICONS = { test: "beaker", route: "globe", other: "record" };

function formatMs(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(2)} ms`;
}

function statusText(r) {
  const parts = [];
  if (r.failed) parts.push("test failed");
  if (r.exceptions) parts.push(`${r.exceptions} exception${r.exceptions === 1 ? "" : "s"}`);
  if (r.n_plus_one) parts.push(`N+1: one query ${r.n_plus_one}×`);
  return parts.join(" · ");
}

class RecordingsProvider {
  constructor(projects) {
    this.projects = projects; // [{name, daemon}]
    this.filter = "";
    this.stamps = new Map();
    this.changed = new vscode.EventEmitter();
    this.onDidChangeTreeData = this.changed.event;
  }

  setFilter(text) {
    this.filter = text || "";
    this.refresh();
  }

  refresh() {
    this.changed.fire(undefined);
  }

  // Called every few seconds: refresh when any daemon indexed something.
  async poll() {
    let changed = false;
    for (const project of this.projects) {
      try {
        const s = await project.daemon.call("index.status");
        const stamp = `${s.numProcessed}/${s.lastIndexedAt}/${s.recordings}`;
        if (this.stamps.get(project.name) !== stamp) {
          changed = changed || this.stamps.has(project.name);
          this.stamps.set(project.name, stamp);
        }
      } catch (e) {
        // reported when the tree asks
      }
    }
    if (changed) this.refresh();
    return changed;
  }

  getTreeItem(node) {
    return node.item;
  }

  async getChildren(node) {
    if (!node) {
      if (this.projects.length === 1) return this.groups(this.projects[0]);
      return this.projects.map((project) => {
        const item = new vscode.TreeItem(project.name, vscode.TreeItemCollapsibleState.Expanded);
        item.iconPath = new vscode.ThemeIcon("folder");
        item.contextValue = "project";
        return { item, project };
      });
    }
    if (node.project && !node.group) return this.groups(node.project);
    if (node.group) return node.group.recordings.map((r) => this.recordingNode(node.project, r));
    return [];
  }

  async groups(project) {
    let result;
    try {
      result = await project.daemon.call("appmap.groups", { text: this.filter || undefined });
    } catch (e) {
      const item = new vscode.TreeItem(`tracetool: ${e.message}`);
      item.iconPath = new vscode.ThemeIcon("error");
      return [{ item }];
    }
    if (result.groups.length === 0) {
      const text = this.filter ? `No recordings match “${this.filter}”` : "No recordings yet";
      const item = new vscode.TreeItem(text);
      item.iconPath = new vscode.ThemeIcon("info");
      return [{ item }];
    }
    return result.groups.map((group) => {
      const item = new vscode.TreeItem(group.label, vscode.TreeItemCollapsibleState.Expanded);
      const flags = [];
      if (group.failed) flags.push(`${group.failed} failed`);
      if (group.exceptions) flags.push(`${group.exceptions} with exceptions`);
      if (group.nPlusOne) flags.push(`${group.nPlusOne} N+1`);
      item.description = [`${group.recordings.length}`, ...flags].join(" · ");
      item.iconPath = new vscode.ThemeIcon(KIND_ICONS[group.kind] || "record");
      item.contextValue = `group-${group.kind}`;
      item.id = `${project.name}::${group.kind}::${group.label}`;
      return { item, project, group };
    });
  }

  recordingNode(project, r) {
    const item = new vscode.TreeItem(r.name || r.recording, vscode.TreeItemCollapsibleState.None);
    const [icon, color] = STATUS_ICONS[r.status] || STATUS_ICONS.ok;
    item.iconPath = new vscode.ThemeIcon(icon, new vscode.ThemeColor(color));
    const status = statusText(r);
    item.description = [formatMs(r.elapsed_ms), status].filter(Boolean).join(" · ");
    item.tooltip = new vscode.MarkdownString(
      [`**${r.name}**`, r.route ? `route \`${r.route}\`` : "", r.source_location ? `test \`${r.source_location}\`` : "",
        `${r.requests} requests · ${r.queries} queries · ${formatMs(r.elapsed_ms)}`, status, `\`${r.recording}\``]
        .filter(Boolean)
        .join("\n\n")
    );
    item.contextValue = `recording-${r.status}`;
    item.id = `${project.name}::${r.recording}`;
    item.command = {
      command: "tracetool.openRecording",
      title: "Open Recording",
      arguments: [{ directory: project.directory, recording: r.recording, name: r.name }],
    };
    return { item, project, recording: r };
  }
}

module.exports = { RecordingsProvider, formatMs };
