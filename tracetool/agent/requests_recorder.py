"""Per-request recording (`TRACETOOL_RECORD_REQUESTS=true`): one trace document per HTTP request.

The HTTP server middleware calls `start()` before it records a request and `finish(method,
route, path)` after the response; in between, a recording scoped to the request's thread/task
collects what the request did (the global remote recording, if any, gets the events too). The
document gets `metadata.name` "<METHOD> <route template or path>" (e.g. `GET /products/{id}`),
recorder `{name: requests, type: requests}` and the usual git/frameworks/language metadata, and
is saved as `<trace_dir>/requests/<timestamp>_<METHOD> <route>.trace.json` (file-safe).
"""

from __future__ import annotations

import os
import time
from typing import Optional

ENV = "TRACETOOL_RECORD_REQUESTS"
_TRUE = ("1", "true", "yes", "on")


def enabled() -> bool:
    return os.environ.get(ENV, "").strip().lower() in _TRUE


def start() -> bool:
    """Begin a recording scoped to this request; False when per-request recording is off."""
    if not enabled():
        return False
    from tracetool.agent.recorder import get_recorder

    get_recorder().start_scoped(recorder_name="requests", recorder_type="requests")
    return True


def finish(method: str, route: Optional[str], path: str) -> Optional[str]:
    """End the request's recording and save it; returns the saved path (None if nothing)."""
    from tracetool.agent.recorder import get_recorder

    doc = get_recorder().stop_scoped()
    if not doc:
        return None
    name = f"{method.upper()} {route or path}"
    doc.setdefault("metadata", {})["name"] = name
    from tracetool.agent.writer import save_recording

    stamp = time.strftime("%Y%m%dT%H%M%S") + f"{time.time() % 1:.3f}"[1:]
    return str(save_recording(doc, f"{stamp} {name}", subdir="requests"))
