"""What the editors' recording viewer shows of one recording, in one answer.

Contract: `recording_view(source, filter=None, options=None)` loads a recording (path or
document), applies `filter` (`tracetool.filters.FilterState`) and returns

    {"name", "svg": interactive SVG of the sequence diagram (`tracetool.diagram.svg`),
     "actors": [{"id", "name", "expandable"}], "expanded": [package ids], "loops": bool,
     "actions": number of diagram actions, "exchanges": [HTTP request/response pairs],
     "filter": the filter's encoded state (what `prune --filter` takes; "" for none),
     "filterJson": its JSON object}

An exchange: `{event_id, kind: "server"|"client", method, path, route?, status, elapsed_ms,
request: {headers, params}, response: {headers, mime_type?}}` (absent parts are empty).
Actors whose id starts with `package:` are `expandable` (a view may pass them back in
`options.expand`). Nothing here touches the index: the call tree comes from `tracetool.query.tree`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracetool.diagram.builder import DiagramOptions, build_diagram
from tracetool.diagram.svg import render_svg
from tracetool.filters import FilterState
from tracetool.filters.state import encode, to_json
from tracetool.trace.document import TraceDocument


def _params(call: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in call.get("message") or []:
        if isinstance(p, dict):
            out.append({"name": p.get("name"), "class": p.get("class"), "value": p.get("value")})
    return out


def exchanges(doc: TraceDocument) -> list[dict[str, Any]]:
    """HTTP requests the recording served or made, with their responses (in call order)."""
    found: dict[Any, dict[str, Any]] = {}
    for event in doc.events:
        if event.get("event") == "call":
            server = event.get("http_server_request")
            client = event.get("http_client_request")
            req = server if isinstance(server, dict) else client
            if not isinstance(req, dict):
                continue
            found[event.get("id")] = {
                "event_id": event.get("id"),
                "kind": "server" if req is server else "client",
                "method": req.get("request_method"),
                "path": req.get("path_info") or req.get("url"),
                "route": req.get("normalized_path_info"),
                "status": None,
                "elapsed_ms": None,
                "request": {"headers": req.get("headers") or {}, "params": _params(event)},
                "response": {"headers": {}},
            }
        elif event.get("event") == "return" and event.get("parent_id") in found:
            ex = found[event.get("parent_id")]
            resp = event.get("http_server_response") or event.get("http_client_response")
            if isinstance(resp, dict):
                ex["status"] = resp.get("status_code", resp.get("status"))
                ex["response"] = {
                    "headers": resp.get("headers") or {},
                    "mime_type": resp.get("mime_type"),
                }
            elapsed = event.get("elapsed")
            if isinstance(elapsed, (int, float)):
                ex["elapsed_ms"] = round(elapsed * 1000, 3)
    return list(found.values())


def recording_view(
    source: Path | str | TraceDocument,
    filter: FilterState | None = None,
    options: DiagramOptions | None = None,
) -> dict[str, Any]:
    """The viewer's data for one recording (module doc)."""
    # A full load: the request/response part shows headers and parameters, which the slim
    # loader of the diagram commands leaves out.
    from tracetool.trace import load

    doc = source if isinstance(source, TraceDocument) else load(Path(source))
    options = options or DiagramOptions()
    diagram = build_diagram(doc, options, filter if filter and not filter.is_default else None)
    state = filter or FilterState()
    metadata = doc.data.get("metadata") or {}
    return {
        "name": metadata.get("name"),
        "svg": render_svg(diagram, interactive=True),
        "actors": [
            {"id": a.id, "name": a.name, "expandable": a.id.startswith("package:")}
            for a in diagram.actors
        ],
        "expanded": list(options.expand),
        "loops": options.loops,
        "actions": len(diagram),
        "exchanges": exchanges(doc),
        "filter": encode(state) if not state.is_default else "",
        "filterJson": to_json(state),
    }
