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

The names are imported on first use (`import_all` imports them all at once): a command that
only reads the index (`inspect`, `stats`: `tracetool.index.schema`) does not pay for the
indexer, its workers and the extractor (~15 ms of start-up). `extract` is both a submodule and
the function: the package's attribute is always the function, as when these were eager imports.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# public name -> (submodule, its name there)
_EXPORTS: dict[str, tuple[str, str]] = {
    "ALGORITHMS": ("canonical", "ALGORITHMS"),
    "DIGEST_HOOKS": ("worker", "DIGEST_HOOKS"),
    "Extract": ("extract", "Extract"),
    "IndexBusyError": ("lock", "IndexBusyError"),
    "IndexOptions": ("indexer", "IndexOptions"),
    "IndexResult": ("indexer", "IndexResult"),
    "SCHEMA_VERSION": ("schema", "SCHEMA_VERSION"),
    "SIDECAR_VERSION": ("sidecar", "SIDECAR_VERSION"),
    "Skip": ("indexer", "Skip"),
    "WriterLock": ("lock", "WriterLock"),
    "default_max_bytes": ("indexer", "default_max_bytes"),
    "default_query_db": ("indexer", "default_query_db"),
    "extract": ("extract", "extract"),
    "index_directory": ("indexer", "index_directory"),
    "index_paths": ("indexer", "index_paths"),
    "open_reader": ("schema", "open_reader"),
    "read_sidecar": ("sidecar", "read"),
    "sidecar_path": ("sidecar", "sidecar_path"),
}

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
    "import_all",
    "index_directory",
    "index_paths",
    "open_reader",
    "read_sidecar",
    "sidecar_path",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    submodule, attr = _EXPORTS[name]
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), attr)
    globals()[name] = value
    return value


def import_all() -> None:
    """Import every public name now (the daemon does, before its threads start: two threads
    importing these modules at once could be handed a partially initialized one)."""
    for name in _EXPORTS:
        __getattr__(name)


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        # importing the submodule `tracetool.index.extract` binds it here: keep the function
        if name == "extract" and isinstance(value, types.ModuleType):
            value = value.extract
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
