"""Indexing recordings: fingerprints, sidecars and the query database.

Public API (the CLI, the daemon and `archive` use these; nothing else is needed):

- `index_directory(trace_dir, IndexOptions(...), progress=, report=) -> IndexResult` — bring
  query.db and the sidecars up to date with a recordings directory (incremental).
- `index_paths(trace_dir, paths, IndexOptions(...), removed_dirs=, report=) -> IndexResult` —
  the same work for a few files only (the daemon's live updates, `index.files`).
- `default_query_db(trace_dir) -> Path` — `~/.trace/data/<sha>/query.db`.
- `sidecar_path(query_db, relpath)`, `read_sidecar(path)` — a recording's index sidecar.
- `extract(doc, source) -> Extract` — the rows and canonical forms of one document (pure).
- `open_reader(query_db)` — read-only connection, `IndexMissingError` if absent or stale.
- `SCHEMA_VERSION`, `SIDECAR_VERSION`, `DIGEST_HOOKS` (where the sequence-diagram digest plugs in).
"""

from __future__ import annotations

from tracetool.index.canonical import ALGORITHMS
from tracetool.index.extract import Extract, extract
from tracetool.index.indexer import (
    IndexOptions,
    IndexResult,
    Skip,
    default_max_bytes,
    default_query_db,
    index_directory,
    index_paths,
)
from tracetool.index.lock import IndexBusyError, WriterLock
from tracetool.index.schema import SCHEMA_VERSION, open_reader
from tracetool.index.sidecar import SIDECAR_VERSION, sidecar_path
from tracetool.index.sidecar import read as read_sidecar
from tracetool.index.worker import DIGEST_HOOKS

__all__ = [
    "ALGORITHMS",
    "DIGEST_HOOKS",
    "SCHEMA_VERSION",
    "SIDECAR_VERSION",
    "Extract",
    "IndexBusyError",
    "IndexOptions",
    "IndexResult",
    "Skip",
    "WriterLock",
    "default_max_bytes",
    "default_query_db",
    "extract",
    "index_directory",
    "index_paths",
    "open_reader",
    "read_sidecar",
    "sidecar_path",
]
