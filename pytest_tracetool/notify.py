"""Tell a running tracetool daemon about new recordings, so they are indexed at once.

Contract (the daemon side implements it):

- Discovery: ``~/.trace/data/<sha256 of the resolved trace_dir>/daemon.json`` =
  ``{"pid": int, "port": int, "version": str}`` (computed by `tracetool.paths`). A missing,
  malformed or stale file (its pid is gone) means no daemon runs: nothing is sent.
- Request: ``POST http://127.0.0.1:<port>/`` with a JSON-RPC 2.0 body
  ``{"jsonrpc": "2.0", "method": "index.files", "params": {"paths": [absolute paths]}, "id": 1}``;
  the plugin sends it once per process at session end (batched), with a 0.5 s timeout.
- Any failure (refused, timeout, error response) is ignored; it is logged at debug level only.
  The daemon's file watcher picks the files up later anyway.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger(__name__)

NOTIFY_TIMEOUT = 0.5
METHOD = "index.files"


def notify_daemon(trace_dir: Path, paths: Sequence[Path]) -> bool:
    """Send `paths` to the daemon serving `trace_dir`, if one runs. True if it accepted them."""
    if not paths:
        return False
    from tracetool.paths import read_discovery

    info = read_discovery(trace_dir)
    if info is None:
        return False
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": METHOD,
            "params": {"paths": [str(p) for p in paths]},
            "id": 1,
        }
    ).encode("utf-8")
    request = urllib.request.Request(
        f"http://127.0.0.1:{info.port}/",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    # No proxies: the daemon is on loopback.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=NOTIFY_TIMEOUT) as response:
            answer = json.loads(response.read() or b"null")
    except (OSError, ValueError) as exc:
        log.debug("tracetool daemon on port %s not told about new files: %s", info.port, exc)
        return False
    if isinstance(answer, dict) and "error" in answer:
        log.debug("tracetool daemon refused index.files: %s", answer["error"])
        return False
    return True
