// The recording viewer page (runs in the VS Code webview, or in any browser with a host object).
// It shows what the daemon's `appmap.view` returns: the sequence diagram (SVG drawn by
// tracetool's own renderer), the call tree with timings and SQL, and the HTTP requests and
// responses. It talks to its host with messages only:
//   page → host  {type: "ready"} | {type: "view", params: {filter, diagramOptions}}
//                | {type: "openSource", location, label} | {type: "copy", text}
//   host → page  {type: "data", data} | {type: "error", message}
// In VS Code the host is the extension (acquireVsCodeApi); elsewhere `window.tracetoolHost`
// (media/http-host.js talks to a daemon over HTTP).

(function () {
  "use strict";
  const host = typeof acquireVsCodeApi === "function" ? acquireVsCodeApi() : window.tracetoolHost;
  const state = { data: null, expand: [], loops: true, hideName: [], hideUnder: null, closed: new Set(), tab: "sequence" };
  const $ = (sel) => document.querySelector(sel);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      node.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return node;
  }

  function ms(v) {
    if (v === null || v === undefined) return "";
    if (v >= 1000) return `${(v / 1000).toFixed(2)} s`;
    if (v >= 100) return `${v.toFixed(0)} ms`;
    if (v >= 10) return `${v.toFixed(1)} ms`;
    return `${v.toFixed(2)} ms`;
  }

  function filterObject() {
    const f = {};
    if (state.hideName.length) f.hideName = state.hideName;
    if (state.hideUnder) f.hideElapsedTimeUnder = state.hideUnder;
    return f;
  }

  function request() {
    $("#status").textContent = "loading…";
    host.postMessage({
      type: "view",
      params: { filter: filterObject(), diagramOptions: { expand: state.expand, loops: state.loops } },
    });
  }

  function openSource(row) {
    if (row && row.location) host.postMessage({ type: "openSource", location: row.location, label: row.label });
  }

  function rowByEvent(id) {
    const tree = (state.data && state.data.tree) || [];
    const exact = tree.find((r) => r.event_id === id);
    if (exact) return exact;
    // a folded call's later ids: the nearest function row at or before it
    let best = null;
    for (const r of tree) if (r.event_id <= id && r.location) best = r;
    return best;
  }

  // -- toolbar ---------------------------------------------------------------------------------

  function toolbar(data) {
    const names = el("input", {
      id: "hide-names",
      type: "text",
      placeholder: "hide names (comma separated, e.g. shop.db.connect)",
      value: state.hideName.join(", "),
      onchange: (e) => {
        state.hideName = e.target.value.split(",").map((s) => s.trim()).filter(Boolean);
        request();
      },
    });
    const under = el("input", {
      id: "hide-under",
      type: "number",
      min: "0",
      placeholder: "hide under ms",
      value: state.hideUnder || "",
      onchange: (e) => {
        state.hideUnder = Number(e.target.value) || null;
        request();
      },
    });
    const chips = state.expand.map((id) =>
      el("button", { class: "chip", "data-collapse": id, title: "collapse this package again", onclick: () => {
        state.expand = state.expand.filter((x) => x !== id);
        request();
      } }, `${id.replace(/^package:/, "")} ✕`)
    );
    return el(
      "div",
      { class: "toolbar" },
      el("button", { id: "toggle-loops", onclick: () => { state.loops = !state.loops; request(); } },
        state.loops ? "Expand loops" : "Collapse loops"),
      names,
      under,
      el("button", { id: "copy-filter", title: "copy the filter state (what `tracetool prune --filter` takes)",
        onclick: () => host.postMessage({ type: "copy", text: data.filter }) }, "Copy filter"),
      el("code", { id: "filter-state", title: "encoded filter state" }, data.filter || "(no filter)"),
      ...chips
    );
  }

  // -- panes -----------------------------------------------------------------------------------

  function sequencePane(data) {
    const pane = el("div", { id: "sequence", class: "pane" });
    pane.innerHTML = data.svg; // drawn by tracetool.diagram.svg: escaped text, no scripts
    pane.addEventListener("click", (e) => {
      const call = e.target.closest(".call");
      if (call) return openSource(rowByEvent(Number(call.getAttribute("data-event"))));
      if (e.target.closest(".loop")) {
        state.loops = !state.loops;
        return request();
      }
      const actor = e.target.closest(".actor");
      if (actor) {
        const id = actor.getAttribute("data-actor");
        if (id.startsWith("package:") && !state.expand.includes(id)) {
          state.expand = [...state.expand, id];
          request();
        }
      }
    });
    return pane;
  }

  function treePane(data) {
    const rows = data.tree || [];
    const list = el("div", { id: "calls", class: "pane" });
    let hiddenBelow = null;
    rows.forEach((r, i) => {
      if (hiddenBelow !== null && r.depth > hiddenBelow) return;
      hiddenBelow = null;
      const hasKids = i + 1 < rows.length && rows[i + 1].depth > r.depth;
      const closed = state.closed.has(r.event_id);
      if (hasKids && closed) hiddenBelow = r.depth;
      const toggle = hasKids
        ? el("span", { class: "toggle", "data-toggle": r.event_id, onclick: (e) => {
            e.stopPropagation();
            if (closed) state.closed.delete(r.event_id); else state.closed.add(r.event_id);
            render();
          } }, closed ? "▸" : "▾")
        : el("span", { class: "toggle" }, "");
      const status = r.status ? el("span", { class: r.status >= 400 ? "bad" : "muted" }, ` ${r.status}`) : null;
      list.append(
        el("div", { class: `row kind-${r.kind}${r.location ? " linked" : ""}`, style: `padding-left:${r.depth * 16}px`,
          "data-event": r.event_id, title: r.location || "", onclick: () => openSource(r) },
          toggle,
          el("span", { class: "kind" }, r.kind === "sql" ? "SQL" : r.kind === "http_server" ? "HTTP" : r.kind === "http_client" ? "→HTTP" : "ƒ"),
          el("span", { class: "label" }, r.label),
          r.count > 1 ? el("span", { class: "count" }, ` ×${r.count}`) : null,
          status,
          el("span", { class: "time" }, ms(r.elapsed_ms)))
      );
    });
    return list;
  }

  function headersTable(h) {
    const entries = Object.entries(h || {});
    if (!entries.length) return el("div", { class: "muted" }, "(none)");
    return el("table", {}, ...entries.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, String(v)))));
  }

  function httpPane(data) {
    const pane = el("div", { id: "http", class: "pane" });
    if (!data.exchanges.length) pane.append(el("div", { class: "muted" }, "No HTTP requests in this recording."));
    for (const x of data.exchanges) {
      const params = x.request.params || [];
      pane.append(
        el("section", { class: "exchange", "data-event": x.event_id },
          el("h3", {}, `${x.kind === "client" ? "→ " : ""}${x.method} ${x.path} `,
            el("span", { class: x.status >= 400 ? "bad" : "ok" }, String(x.status ?? "")),
            el("span", { class: "time" }, ` ${ms(x.elapsed_ms)}`)),
          x.route ? el("div", { class: "muted" }, `route ${x.route}`) : null,
          el("h4", {}, "Request headers"), headersTable(x.request.headers),
          params.length ? el("h4", {}, "Parameters") : null,
          params.length ? el("table", {}, ...params.map((p) => el("tr", {}, el("th", {}, p.name || ""), el("td", {}, String(p.value ?? ""))))) : null,
          el("h4", {}, `Response${x.response.mime_type ? ` (${x.response.mime_type})` : ""}`), headersTable(x.response.headers))
      );
    }
    return pane;
  }

  function render() {
    const data = state.data;
    const root = $("#app");
    root.textContent = "";
    if (!data) return;
    const tabs = el("nav", { class: "tabs" },
      ...[["sequence", "Sequence diagram"], ["calls", `Calls (${data.tree.length})`], ["http", `HTTP (${data.exchanges.length})`]].map(([id, label]) =>
        el("button", { class: state.tab === id ? "tab active" : "tab", "data-tab": id, onclick: () => { state.tab = id; render(); } }, label)));
    const panes = { sequence: sequencePane, calls: treePane, http: httpPane };
    root.append(
      el("header", {}, el("h2", {}, data.name || data.recording), el("div", { class: "muted" }, data.recording)),
      toolbar(data),
      tabs,
      panes[state.tab](data)
    );
    document.body.setAttribute("data-ready", state.tab);
  }

  window.addEventListener("message", (event) => {
    const msg = event.data || {};
    if (msg.type === "data") {
      state.data = msg.data;
      state.expand = msg.data.expanded || [];
      state.loops = msg.data.loops !== false;
      $("#status").textContent = "";
      render();
    } else if (msg.type === "error") {
      $("#status").textContent = msg.message;
      document.body.setAttribute("data-error", msg.message);
    } else if (msg.type === "tab") {
      state.tab = msg.tab;
      render();
    }
  });
  host.postMessage({ type: "ready" });
})();
