"""Questions about indexed recordings: one pure function per `tracetool query` verb.

Every front end — the CLI, JSON-RPC, MCP, LSP and the web UI — calls these and renders the
returned rows (plain dicts, JSON-ready). Open the database with `open_db`, build filters from
user text with `parse_filters`, then:

- `endpoints(db, filters) -> list[dict]` — one row per route: method, route, count, statuses,
  p50_ms, p95_ms, max_ms, sql_per_request;
- `find(db, type, filters) -> list[dict]` — rows of `appmaps` (alias `recordings`),
  `requests`, `queries`, `calls`, `exceptions` or `logs`;
- `tree(db, appmap, depth=None, fold=True, limit=1000) -> list[dict]` — call tree rows;
- `related(db, appmap, limit=10) -> list[dict]` — similar recordings with score and shared items;
- `hotspots(db, kind="functions"|"queries", filters, sort="total"|"self") -> list[dict]`;
- `compare(db, branch_a, branch_b, filters) -> list[dict]` — per-route latency deltas;
- `search(db, text, limit=10) -> list[dict]` — recordings by full-text relevance;
- `summary(db) -> dict` — counts and breakdowns of the whole index (the UI's dashboard);
- `recording(db, appmap) -> dict` — one recording's indexed facts;
- `functions_in_file(db, paths)`, `function_detail(db, fqid)`, `function_recordings(db, fqid)`,
  `function_exceptions(db, fqids)`, `repeated_queries(db, fqids, threshold)` — recorded functions
  by source location (what editors show; `tracetool.query.source`), with `function_tests` and
  `slow_queries`;
- `recording_groups(db, text=None, n_plus_one=10)` — recordings grouped by test file / route
  with status flags (the editors' recordings tree; `tracetool.query.browse`).

Errors are `UsageError` (bad filter, filter not applicable), `NotFoundError` (unknown recording
or branch) and `IndexMissingError` (no or outdated database: run `tracetool index`).
"""

from __future__ import annotations

from tracetool.query.browse import recording_groups
from tracetool.query.db import open_db, query_db_path, resolve_recording
from tracetool.query.endpoints import compare, endpoints, percentile
from tracetool.query.filters import Filters, parse_filters
from tracetool.query.find import TYPES, find, search
from tracetool.query.hotspots import hotspots
from tracetool.query.related import related
from tracetool.query.source import (
    function_detail,
    function_exceptions,
    function_recordings,
    function_tests,
    functions_in_file,
    repeated_queries,
    slow_queries,
)
from tracetool.query.summary import recording, summary
from tracetool.query.tree import tree

__all__ = [
    "TYPES",
    "Filters",
    "compare",
    "endpoints",
    "find",
    "function_detail",
    "function_exceptions",
    "function_recordings",
    "function_tests",
    "functions_in_file",
    "recording_groups",
    "slow_queries",
    "hotspots",
    "open_db",
    "parse_filters",
    "percentile",
    "query_db_path",
    "recording",
    "related",
    "repeated_queries",
    "resolve_recording",
    "search",
    "summary",
    "tree",
]
