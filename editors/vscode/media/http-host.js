// The viewer's host outside VS Code (tests, screenshots): answers the page's messages by calling
// the daemon's `appmap.view` over HTTP (POST `rpc` relative to the page, JSON-RPC 2.0).
// The page is media/standalone.html?appmap=<recording>. Messages the page sent are kept in
// `window.tracetoolSent` (and an `openSource` / `copy` is shown in #host-log).

(function () {
  "use strict";
  const params = new URLSearchParams(location.search);
  const appmap = params.get("appmap");
  let last = { filter: {}, diagramOptions: {} };
  window.tracetoolSent = [];

  function deliver(msg) {
    window.postMessage(msg, "*");
  }

  async function view(p) {
    last = p || last;
    const body = { jsonrpc: "2.0", id: Date.now(), method: "appmap.view", params: { appmap, ...last } };
    try {
      const res = await fetch("rpc", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      const answer = await res.json();
      if (answer.error) deliver({ type: "error", message: answer.error.message });
      else deliver({ type: "data", data: answer.result });
    } catch (e) {
      deliver({ type: "error", message: String(e) });
    }
  }

  window.tracetoolHost = {
    postMessage(msg) {
      window.tracetoolSent.push(msg);
      if (msg.type === "ready") view(last);
      else if (msg.type === "view") view(msg.params);
      else {
        const log = document.getElementById("host-log");
        if (log) log.textContent = JSON.stringify(window.tracetoolSent.filter((m) => m.type !== "ready" && m.type !== "view"));
      }
    },
  };
})();
