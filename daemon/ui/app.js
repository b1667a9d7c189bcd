// tracetool UI: a single-page app over the JSON endpoints of `tracetool query ui`.
// Plain browser JavaScript, no dependencies. Pages are chosen by the URL hash:
//   #/                      dashboard          #/hotspots?by=queries   hotspots
//   #/endpoints?status=5xx  endpoints          #/recordings?text=users traces (search)
//   #/recording/<path>      one recording: facts, call tree, related recordings
// Every value from the server is put in the page as text (never as HTML).
"use strict";

const main = document.getElementById("main");
let renderToken = 0;

// ---------------------------------------------------------------- helpers

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "style") el.style.cssText = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(name, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== "" && value !== null && value !== undefined) query.set(key, value);
  }
  const qs = query.toString();
  const response = await fetch(`/api/${name}${qs ? "?" + qs : ""}`, {
    headers: { Accept: "application/json" },
  });
  let body;
  try {
    body = await response.json();
  } catch (err) {
    throw new ApiError(response.status, `${response.status} ${response.statusText}`);
  }
  if (!response.ok) throw new ApiError(response.status, body.error || response.statusText);
  return body;
}

const numberFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
const ms = (v) => (v === null || v === undefined ? "" : numberFormat.format(v));
const count = (v) => (v === null || v === undefined ? "" : numberFormat.format(v));
const when = (iso) => (iso ? iso.replace("T", " ").replace("Z", " UTC") : "");

function recordingLink(path, label) {
  return h("a", { href: "#/recording/" + encodeURIComponent(path), title: path }, label || path);
}

function pageLink(page, params, label) {
  const qs = new URLSearchParams(params).toString();
  return h("a", { href: `#/${page}${qs ? "?" + qs : ""}` }, label);
}

function statusChip(status, n) {
  const cls = status >= 500 ? "s5" : status >= 400 ? "s4" : status >= 300 ? "s3" : "s2";
  return h("span", { class: `chip ${cls}` }, n === undefined ? status : `${status} ×${n}`);
}

function testChip(status) {
  if (!status) return "";
  return h("span", { class: `chip ${status === "failed" ? "s5" : "s2"}` }, status);
}

function bar(value, max) {
  const pct = max > 0 && value ? Math.max(1, Math.round((100 * value) / max)) : 0;
  return h("span", { class: "bar" }, h("span", { style: `width:${pct}%` }));
}

// columns: [{label, key | cell(row), num}]
function table(columns, rows, emptyText) {
  if (!rows.length) return h("p", { class: "empty" }, emptyText || "No matching rows.");
  return h(
    "table",
    { class: "grid" },
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: c.num ? "num" : "" }, c.label)))),
    h(
      "tbody",
      {},
      rows.map((row) =>
        h(
          "tr",
          {},
          columns.map((c) => h("td", { class: c.num ? "num" : "" }, c.cell ? c.cell(row) : row[c.key])),
        ),
      ),
    ),
  );
}

// A filter form whose submit rewrites the hash (so every view is a shareable URL).
function filterForm(page, fields, params) {
  const form = h("form", { class: "filters" });
  for (const f of fields) {
    const value = params.get(f.name) || "";
    let input;
    if (f.choices) {
      input = h(
        "select",
        { name: f.name },
        f.choices.map((c) => h("option", { value: c, selected: c === (value || f.choices[0]) }, c)),
      );
      input.addEventListener("change", () => form.requestSubmit());
    } else {
      input = h("input", {
        name: f.name,
        value,
        placeholder: f.placeholder || "",
        type: f.type || "text",
        size: f.size || 14,
      });
    }
    form.append(h("label", {}, h("span", {}, f.label), input));
  }
  form.append(h("button", { type: "submit" }, "Apply"));
  form.append(h("a", { class: "reset", href: `#/${page}` }, "Reset"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [key, value] of new FormData(form)) if (value) next.set(key, value);
    const qs = next.toString();
    location.hash = `#/${page}${qs ? "?" + qs : ""}`;
  });
  return form;
}

function errorBox(err) {
  const box = h("div", { class: "error", role: "alert" }, h("strong", {}, "Error: "), err.message);
  if (err.status === 503) box.append(h("p", {}, "Run `tracetool index`, then reload this page."));
  return box;
}

function params() {
  return Object.fromEntries(currentRoute().params);
}

// ---------------------------------------------------------------- pages

async function dashboard() {
  const [summary, endpoints, hotspots, recent] = await Promise.all([
    api("summary"),
    api("endpoints"),
    api("hotspots", { limit: 8 }),
    api("recordings", { limit: 8 }),
  ]);
  const cards = [
    ["Recordings", summary.recordings, "recordings"],
    ["HTTP requests", summary.requests, "endpoints"],
    ["Routes", summary.routes, "endpoints"],
    ["SQL queries", summary.queries, "hotspots?by=queries"],
    ["Function calls", summary.function_calls, "hotspots"],
    ["Exceptions", summary.exceptions, null],
  ];
  const slowest = [...endpoints.rows].sort((a, b) => (b.p95_ms || 0) - (a.p95_ms || 0)).slice(0, 8);
  const maxHot = Math.max(0, ...hotspots.rows.map((r) => r.total_ms || 0));
  return [
    h("h1", {}, "Dashboard"),
    h(
      "section",
      { class: "cards" },
      cards.map(([label, value, link]) =>
        h(
          link ? "a" : "div",
          { class: "card", href: link ? `#/${link}` : null },
          h("span", { class: "value" }, count(value)),
          h("span", { class: "label" }, label),
        ),
      ),
    ),
    h(
      "section",
      { class: "facts" },
      fact(
        "Tests",
        Object.entries(summary.by_test_status).map(([s, n]) =>
          h("span", { class: `chip ${s === "failed" ? "s5" : "s2"}` }, `${s} ${n}`),
        ),
      ),
      fact(
        "Responses",
        Object.entries(summary.by_status_class).map(([s, n]) =>
          h("span", { class: `chip s${s[0]}` }, `${s} ${n}`),
        ),
      ),
      fact(
        "Branches",
        summary.by_branch.map((b) =>
          h(
            "span",
            { class: "chip" },
            b.branch ? pageLink("recordings", { branch: b.branch }, b.branch) : "(none)",
            ` ${b.recordings}`,
          ),
        ),
      ),
      h("span", { class: "muted" }, `Indexed ${when(summary.indexed_at)}`),
    ),
    h(
      "div",
      { class: "panels" },
      h(
        "section",
        { class: "panel" },
        h("h2", {}, "Slowest endpoints (p95)"),
        table(
          [
            { label: "Route", cell: (r) => routeCell(r) },
            { label: "Count", key: "count", num: true },
            { label: "p95 ms", cell: (r) => ms(r.p95_ms), num: true },
          ],
          slowest,
          "No HTTP requests recorded.",
        ),
      ),
      h(
        "section",
        { class: "panel" },
        h("h2", {}, "Hotspots (functions, total time)"),
        table(
          [
            { label: "Function", cell: (r) => h("span", { class: "code", title: r.name }, r.name) },
            { label: "Total ms", cell: (r) => [bar(r.total_ms, maxHot), ms(r.total_ms)], num: true },
          ],
          hotspots.rows,
        ),
      ),
      h(
        "section",
        { class: "panel wide" },
        h("h2", {}, "Latest recordings"),
        recordingsTable(recent.rows),
      ),
    ),
  ];
}

function fact(label, items) {
  return h("span", { class: "fact" }, h("span", { class: "muted" }, `${label}: `), items.length ? items : "—");
}

function routeCell(row) {
  const route = `${row.method} ${row.route}`;
  return [
    h("span", { class: "method" }, row.method),
    " ",
    pageLink("recordings", { route }, row.route),
  ];
}

async function endpointsPage(p) {
  const result = await api("endpoints", p);
  const maxP95 = Math.max(0, ...result.rows.map((r) => r.p95_ms || 0));
  return [
    h("h1", {}, "Endpoints"),
    filterForm(
      "endpoints",
      [
        { name: "route", label: "Route", placeholder: "GET /users/{id}", size: 20 },
        { name: "status", label: "Status", placeholder: ">=400, 5xx", size: 8 },
        { name: "duration", label: "Duration", placeholder: ">100ms", size: 8 },
        { name: "branch", label: "Branch", size: 10 },
        { name: "since", label: "Since", placeholder: "2d, 2024-05-01", size: 13 },
      ],
      currentRoute().params,
    ),
    h("p", { class: "muted" }, `${result.count} routes`),
    table(
      [
        { label: "Route", cell: routeCell },
        { label: "Count", key: "count", num: true },
        {
          label: "Statuses",
          cell: (r) => Object.entries(r.statuses || {}).map(([s, n]) => statusChip(Number(s), n)),
        },
        { label: "p50 ms", cell: (r) => ms(r.p50_ms), num: true },
        { label: "p95 ms", cell: (r) => [bar(r.p95_ms, maxP95), ms(r.p95_ms)], num: true },
        { label: "max ms", cell: (r) => ms(r.max_ms), num: true },
        { label: "SQL / req", cell: (r) => ms(r.sql_per_request), num: true },
      ],
      result.rows,
    ),
  ];
}

async function hotspotsPage(p) {
  const by = p.by || "functions";
  const result = await api("hotspots", { limit: 50, ...p });
  const maxTotal = Math.max(0, ...result.rows.map((r) => r.total_ms || 0));
  return [
    h("h1", {}, "Hotspots"),
    filterForm(
      "hotspots",
      [
        { name: "by", label: "Rank", choices: ["functions", "queries"] },
        { name: "sort", label: "By time", choices: ["total", "self"] },
        { name: "route", label: "Route", placeholder: "GET /users/{id}", size: 18 },
        { name: "class", label: "Class", size: 12 },
        { name: "table", label: "Table", size: 10 },
        { name: "branch", label: "Branch", size: 10 },
      ],
      currentRoute().params,
    ),
    table(
      [
        {
          label: by === "queries" ? "SQL" : "Function",
          cell: (r) => h("span", { class: "code", title: r.name }, r.name),
        },
        { label: "Count", key: "count", num: true },
        { label: "Total ms", cell: (r) => [bar(r.total_ms, maxTotal), ms(r.total_ms)], num: true },
        { label: "Self ms", cell: (r) => ms(r.self_ms), num: true },
        { label: "Avg ms", cell: (r) => ms(r.avg_ms), num: true },
        { label: "Recordings", key: "recordings", num: true },
        {
          label: "Top recording",
          cell: (r) => (r.top_recordings && r.top_recordings[0] ? recordingLink(r.top_recordings[0]) : ""),
        },
      ],
      result.rows,
    ),
  ];
}

function recordingsTable(rows) {
  return table(
    [
      {
        label: "Recording",
        cell: (r) => [recordingLink(r.recording, r.name), h("div", { class: "path" }, r.recording)],
      },
      { label: "Test", cell: (r) => testChip(r.test_status) },
      { label: "Branch", key: "branch" },
      { label: "Recorded", cell: (r) => when(r.recorded_at) },
      { label: "Requests", key: "requests", num: true },
      { label: "Queries", key: "queries", num: true },
      { label: "Exceptions", key: "exceptions", num: true },
      { label: "ms", cell: (r) => ms(r.elapsed_ms), num: true },
    ],
    rows,
    "No recordings match.",
  );
}

async function recordingsPage(p) {
  const result = await api("recordings", { limit: 200, ...p });
  return [
    h("h1", {}, "Traces"),
    filterForm(
      "recordings",
      [
        { name: "text", label: "Search", placeholder: "words in names, routes, code, SQL", size: 26, type: "search" },
        { name: "route", label: "Route", placeholder: "GET /users/{id}", size: 16 },
        { name: "status", label: "HTTP status", placeholder: "5xx", size: 6 },
        { name: "branch", label: "Branch", size: 10 },
        { name: "duration", label: "Duration", placeholder: ">100ms", size: 8 },
      ],
      currentRoute().params,
    ),
    h("p", { class: "muted" }, `${result.count} recordings`),
    recordingsTable(result.rows),
  ];
}

const KIND_LABEL = { http_server: "HTTP", http_client: "client", sql: "SQL", function: "fn", message: "msg" };

async function recordingPage(path, p) {
  const [info, tree, related] = await Promise.all([
    api("recording", { appmap: path }),
    api("tree", { appmap: path, fold: p.fold, depth: p.depth, limit: 2000 }),
    api("related", { appmap: path, limit: 6 }),
  ]);
  const maxRoot = Math.max(0, ...tree.rows.filter((r) => r.depth === 0).map((r) => r.elapsed_ms || 0));
  const facts = [
    ["Test", testChip(info.test_status)],
    ["Branch", info.branch ? `${info.branch}${info.commit ? " @ " + info.commit.slice(0, 10) : ""}` : ""],
    ["Recorded", when(info.recorded_at)],
    ["Recorder", info.recorder || ""],
    ["Events", count(info.events)],
    ["Requests", count(info.requests)],
    ["SQL queries", count(info.queries)],
    ["Exceptions", count(info.exceptions)],
    ["Elapsed", info.elapsed_ms === null ? "" : `${ms(info.elapsed_ms)} ms`],
  ];
  return [
    h("h1", {}, info.name),
    h("p", { class: "path" }, info.recording, info.labels.length ? ` · ${info.labels.join(", ")}` : ""),
    info.failure ? h("div", { class: "error" }, h("strong", {}, "Failure: "), info.failure) : null,
    h("dl", { class: "facts-grid" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("h2", {}, "Call tree"),
    filterForm(
      `recording/${encodeURIComponent(path)}`,
      [
        { name: "depth", label: "Depth", placeholder: "all", size: 4, type: "number" },
        { name: "fold", label: "Fold repeats", choices: ["true", "false"] },
      ],
      currentRoute().params,
    ),
    tree.rows.length
      ? h(
          "div",
          { class: "tree" },
          tree.rows.map((r) =>
            h(
              "div",
              { class: `node k-${r.kind}`, style: `padding-left:${0.4 + r.depth * 1.1}rem` },
              h("span", { class: "kind" }, KIND_LABEL[r.kind] || r.kind),
              h("span", { class: "label", title: r.label }, r.label),
              r.status ? statusChip(r.status) : "",
              r.count > 1 ? h("span", { class: "times" }, `×${r.count}`) : "",
              h("span", { class: "ms" }, r.elapsed_ms === null ? "" : `${ms(r.elapsed_ms)} ms`),
              r.depth === 0 ? bar(r.elapsed_ms, maxRoot) : "",
            ),
          ),
        )
      : h("p", { class: "empty" }, "No events recorded."),
    tree.count >= 2000 ? h("p", { class: "muted" }, "First 2000 rows; lower the depth to see more.") : null,
    h("h2", {}, "Related recordings"),
    table(
      [
        { label: "Recording", cell: (r) => recordingLink(r.recording, r.name) },
        { label: "Score", key: "score", num: true },
        { label: "Shared", cell: (r) => (r.examples || []).slice(0, 3).join(", ") },
      ],
      related.rows,
      "No related recordings.",
    ),
  ];
}

// ---------------------------------------------------------------- routing

function currentRoute() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [pathPart, query] = raw.split("?", 2);
  const segments = pathPart.split("/");
  return {
    page: segments[0] || "dashboard",
    arg: segments.length > 1 ? decodeURIComponent(segments.slice(1).join("/")) : "",
    params: new URLSearchParams(query || ""),
  };
}

const PAGES = {
  dashboard: () => dashboard(),
  endpoints: () => endpointsPage(params()),
  hotspots: () => hotspotsPage(params()),
  recordings: () => recordingsPage(params()),
  recording: (route) => recordingPage(route.arg, params()),
};

async function render() {
  const token = ++renderToken;
  const route = currentRoute();
  const page = PAGES[route.page] ? route.page : "dashboard";
  for (const link of document.querySelectorAll("nav a")) {
    const active = link.dataset.page === page || (page === "recording" && link.dataset.page === "recordings");
    link.classList.toggle("active", active);
  }
  document.body.removeAttribute("data-ready");
  main.replaceChildren(h("p", { class: "loading" }, "Loading…"));
  let content;
  try {
    content = await PAGES[page](route);
  } catch (err) {
    content = errorBox(err);
    document.body.dataset.error = err.message;
  }
  if (token !== renderToken) return; // a newer navigation won
  main.replaceChildren(...[content].flat().filter(Boolean));
  document.title = `tracetool · ${page === "recording" ? route.arg : page}`;
  document.body.dataset.ready = page;
}

async function showWhere() {
  try {
    const s = await api("summary");
    document.getElementById("where").textContent = s.trace_dir || "";
  } catch (err) {
    // the page itself shows the error
  }
}

window.addEventListener("hashchange", render);
showWhere();
render();
