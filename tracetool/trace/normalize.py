"""Normalization: one canonical, balanced event list.

`normalize(doc)` changes the document in place and returns the map of old to new event ids:
1. `eventUpdates` are applied: an update *replaces* the whole event with the same id (as AppMap's
   builder does), then the key is removed.
2. Legacy shapes are coerced: `status` → `status_code`, array `path_info` /
   `normalized_path_info` → text, an empty `normalized_path_info` removed.
3. Returns are paired with calls per thread: a return without `parent_id` is matched to the
   innermost open call of its thread; a return whose call is unknown, or already returned, is
   dropped (counted in `doc.warnings`); calls left open when an outer call returns, or at the end,
   get synthetic returns `{id, event: "return", thread_id, parent_id}`.
4. Ids are renumbered 1..N in document order and every `parent_id` rewritten.

Original order is kept (AppMap regroups by thread; we do not), so event indices stay meaningful.
"""

from __future__ import annotations

from typing import Any

from tracetool.trace.document import TraceDocument
from tracetool.trace.events import Event


def apply_event_updates(doc: TraceDocument) -> int:
    """Replace events by their `eventUpdates` entries; returns how many were replaced."""
    updates = doc.data.pop("eventUpdates", None)
    if not isinstance(updates, dict) or not updates:
        return 0
    replaced = 0
    events = doc.events
    for i, event in enumerate(events):
        update = updates.get(str(event.get("id")))
        if isinstance(update, dict):
            events[i] = update
            replaced += 1
    return replaced


def _coerce(event: Event) -> None:
    req = event.get("http_server_request")
    if isinstance(req, dict):
        for key in ("path_info", "normalized_path_info"):
            value = req.get(key)
            if isinstance(value, list):
                req[key] = ",".join(str(v) for v in value)
        if "normalized_path_info" in req and not req["normalized_path_info"]:
            del req["normalized_path_info"]
    for key in ("http_server_response", "http_client_response"):
        resp = event.get(key)
        if isinstance(resp, dict) and "status" in resp and "status_code" not in resp:
            resp["status_code"] = resp.pop("status")


# Public name for event-at-a-time normalizers (tracetool.trace.rawdoc) that apply the same
# coercions while streaming a document without holding it.
coerce_event = _coerce


def _signature_agrees(call: Event, ret: Event) -> bool:
    for key in ("defined_class", "method_id", "path", "static"):
        if key in ret and ret.get(key) != call.get(key):
            return False
    return True


def balance(events: list[Event], *, coerce: bool = True) -> tuple[list[Event], int]:
    """Pair returns with calls (see module doc). Returns (new list, number of dropped returns).

    `coerce=False` skips the legacy-shape coercion, for callers that pair lightweight event
    heads and coerce the full events themselves (tracetool.trace.rawdoc).
    """
    out: list[Event] = []
    stacks: dict[Any, list[Event]] = {}
    open_calls: dict[Any, Event] = {}  # call id -> call, while open
    dropped = 0

    def synth(call: Event) -> Event:
        return {
            "id": None,
            "event": "return",
            "thread_id": call.get("thread_id"),
            "parent_id": call.get("id"),
        }

    for event in events:
        if coerce:
            _coerce(event)
        ev_kind = event.get("event")
        if ev_kind == "call":
            stacks.setdefault(event.get("thread_id"), []).append(event)
            open_calls[event.get("id")] = event
            out.append(event)
            continue
        if ev_kind != "return":
            out.append(event)
            continue
        parent_id = event.get("parent_id")
        if parent_id is None:
            stack = stacks.get(event.get("thread_id"))
            if stack and _signature_agrees(stack[-1], event):
                call = stack[-1]
                event["parent_id"] = call.get("id")
                parent_id = call.get("id")
            else:
                dropped += 1
                continue
        if parent_id not in open_calls:
            dropped += 1
            continue
        call = open_calls.pop(parent_id)
        # An open call is always on its own thread's stack; calls opened inside it that never
        # returned are closed first.
        stack = stacks[call.get("thread_id")]
        while stack and stack[-1] is not call:
            inner = stack.pop()
            open_calls.pop(inner.get("id"), None)
            out.append(synth(inner))
        if stack:
            stack.pop()
        out.append(event)
    for stack in stacks.values():
        while stack:
            call = stack.pop()
            if open_calls.pop(call.get("id"), None) is not None:
                out.append(synth(call))
    return out, dropped


def renumber(events: list[Event]) -> dict[Any, int]:
    """Ids 1..N in list order, parent links rewritten; returns old call id -> new id."""
    id_map: dict[Any, int] = {}
    for new_id, event in enumerate(events, start=1):
        if event.get("event") == "call":
            id_map[event.get("id")] = new_id
        event["id"] = new_id
    for event in events:
        if event.get("event") == "return" and "parent_id" in event:
            event["parent_id"] = id_map.get(event["parent_id"], event["parent_id"])
    return id_map


def normalize(doc: TraceDocument, *, renumber_ids: bool = True) -> dict[Any, int]:
    """Normalize `doc` in place (module doc); returns the id map (empty if not renumbered)."""
    apply_event_updates(doc)
    events, dropped = balance(doc.events)
    if dropped:
        doc.warnings.append(f"dropped {dropped} return events without a matching call")
    doc.events = events
    if renumber_ids:
        return renumber(events)
    # synthetic returns still need ids
    next_id = max((e["id"] for e in events if isinstance(e.get("id"), int)), default=0) + 1
    for event in events:
        if event.get("id") is None:
            event["id"] = next_id
            next_id += 1
    return {}
