"""Per-request recording (`TRACETOOL_RECORD_REQUESTS=true`): one trace document per HTTP request.

The HTTP server middleware calls `start()` before it records a request and `finish(...)` after
the response; in between, a recording scoped to the request's thread/task (the recorder's
`start_scoped`, which follows tasks and context-copying thread hand-offs) collects what the
request did. Remote and process sessions get the same events as usual.

Each document gets `metadata.name` "<METHOD> <route template, else path>" (e.g.
`GET /products/{id}`), recorder `{name: requests, type: requests}` plus the usual app, git,
frameworks and language metadata, and is saved as
`<trace_dir>/requests/<time>_<METHOD>_<route>.trace.json` (file-safe; the time prefix keeps one
file per request and sorts them in order).

Not started when the request runs inside a scoped recording already, or while a test runner's
ambient recording runs (a test recorded by the pytest plugin calling the app in-process, or
driving a live server in a thread): the test's document holds the request then.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

from tracetool.agent.clock import wall_time

ENV = "TRACETOOL_RECORD_REQUESTS"


def enabled() -> bool:
    from tracetool.agent.config import env_flag

    return env_flag(ENV)


def start() -> Optional[Any]:
    """A recording scoped to this request, or None (per-request recording off, or nested)."""
    if not enabled():
        return None
    from tracetool.agent import recorder

    rec = recorder.get_recorder()
    if recorder._SCOPE.get() or rec._ambient:
        return None
    return rec.start_scoped(recorder_name="requests", recorder_type="requests")


def finish(
    scope: Any, method: str, route: Optional[str], path: str, status: Optional[int] = None
) -> Optional[Path]:
    """End the request's recording and save it; the saved file (None if it failed)."""
    recording = scope.stop()
    name = f"{method.upper()} {route or path}"
    recording.metadata["name"] = name
    now = wall_time()  # (the real clock: a frozen one would give every file one name)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(now)) + f"{now % 1:.6f}"[1:]
    try:
        return recording.save(f"{stamp}_{name}", subdir="requests")  # type: ignore[no-any-return]
    except Exception as exc:
        from tracetool.agent.integrations._common import warn

        warn(f"per-request recording {name!r} not saved: {exc!r}")
        return None
