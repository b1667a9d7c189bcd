"""The web UI's JSON endpoints: `GET /api/<name>?<arguments>` → one query tool.

Contract:

- `ROUTES` maps each endpoint to a tool of `tracetool_daemon.query_tools` (one implementation
  for MCP and the UI) plus fixed arguments:

  | endpoint | tool | notes |
  |---|---|---|
  | /api/summary | summary | dashboard counts |
  | /api/recording?appmap= | recording | one recording's facts |
  | /api/endpoints | endpoints | route filters, limit |
  | /api/hotspots | hotspots | by, sort, filters, limit |
  | /api/recordings | find type=appmaps | text (full-text search), filters, limit |
  | /api/find?type= | find | any row type |
  | /api/tree?appmap= | tree | depth, fold, limit |
  | /api/related?appmap= | related | limit |
  | /api/compare?branch_a=&branch_b= | compare | filters, limit |
  | /api/search?text= | search | limit |

- Query-string values are typed by the tool's schema (`arguments_from_strings`); the last of a
  repeated key wins. `trace_dir` and `query_db` are refused: the index is fixed at start.
- `handle(path, query, query_db)` returns `(status, body)`: 200 with the tool's JSON, or an
  error object `{"error": message}` with 400 (bad argument), 404 (unknown endpoint or
  recording), 503 (index missing or outdated: run `tracetool index`) or 500 (a bug; logged).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from tracetool_daemon import query_tools

from tracetool.errors import IndexMissingError, NotFoundError, TraceToolError, UsageError

log = logging.getLogger("tracetool.daemon.ui")

ROUTES: dict[str, tuple[str, dict[str, Any]]] = {
    "/api/summary": ("summary", {}),
    "/api/recording": ("recording", {}),
    "/api/endpoints": ("endpoints", {}),
    "/api/hotspots": ("hotspots", {}),
    "/api/recordings": ("find", {"type": "appmaps"}),
    "/api/find": ("find", {}),
    "/api/tree": ("tree", {}),
    "/api/related": ("related", {}),
    "/api/compare": ("compare", {}),
    "/api/search": ("search", {}),
}


def parse_query(query: str) -> dict[str, str]:
    """`a=1&b=2&a=3` → {"a": "3", "b": "2"} (blank values dropped)."""
    return {key: values[-1] for key, values in parse_qs(query, keep_blank_values=False).items()}


def _status(exc: TraceToolError) -> int:
    if isinstance(exc, IndexMissingError):
        return 503
    if isinstance(exc, NotFoundError):
        return 404
    return 400


def handle(path: str, query: Mapping[str, str], query_db: str) -> tuple[int, Any]:
    """Answer one API request (module doc)."""
    route = ROUTES.get(path.rstrip("/") or "/")
    if route is None:
        return 404, {"error": f"no such endpoint {path}; endpoints: {', '.join(ROUTES)}"}
    name, fixed = route
    try:
        fixed_db = sorted(query_tools.DB_KEYS & set(query))
        if fixed_db:
            raise UsageError(f"{', '.join(fixed_db)} cannot be set here: the UI's index is fixed")
        overridden = sorted(set(fixed) & set(query))
        if overridden:
            raise UsageError(f"{path} does not take {', '.join(overridden)}")
        args = {**query_tools.arguments_from_strings(name, query), **fixed}
        return 200, query_tools.call_tool(name, args, query_db=query_db)
    except TraceToolError as exc:
        return _status(exc), {"error": str(exc)}
    except Exception as exc:  # a bug must not take the server down
        log.exception("%s failed", path)
        return 500, {"error": f"internal error ({type(exc).__name__}): {exc}"}
