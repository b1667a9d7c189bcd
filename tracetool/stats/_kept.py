"""The per-recording sums `stats` needs, as `tracetool index` kept them in query.db.

The index keeps, for each recording it indexes, the result of the very pass directory-mode stats
runs on it (`tracetool.stats._collect.file_overhead`; summed from the index's own parse where it
can, `tracetool.index.overhead`, which is held to the same result) in the `overhead` table: one
row per recording, `sums` = JSON `[[name, calls, seconds, sql], ...]` (code-object names, SQL already
named, no SQL text). A recording stats would skip as malformed has no row (stats reads it and
warns), as has one the index skipped.

`kept_sums(root, files, query_db)` returns the rows of the files the index holds exactly as they
are now: the database found as `inspect` finds it (`--query-db`, the configured one, else the
default of `root`), a local SQLite file of the current schema (`open_reader`; another version is
not read), whose `trace_dir` contains `root`; and each file with the size and mtime_ns of its
row. Anything else (no or unreadable database, a shared PostgreSQL one, a file new, changed,
renamed or skipped since) is left out: stats reads those files.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

Rows = list[list[Any]]


def kept_sums(
    root: Path, files: Sequence[tuple[Path, int, int]], query_db: Path | str | None = None
) -> dict[Path, Rows]:
    """path -> kept rows for the `(path, size, mtime_ns)` files the index holds as they are."""
    if not files:
        return {}
    rows = _read(root, query_db)
    if not rows:
        return {}
    base, indexed = rows
    out: dict[Path, Rows] = {}
    for path, size, mtime_ns in files:
        try:
            rel = path.relative_to(root).as_posix()
        except ValueError:
            continue
        row = indexed.get(base + rel)
        if row is not None and row[0] == size and row[1] == mtime_ns:
            try:
                sums = orjson.loads(row[2])
            except orjson.JSONDecodeError:
                continue
            if isinstance(sums, list):
                out[path] = sums
    return out


def _read(
    root: Path, query_db: Path | str | None
) -> tuple[str, dict[str, tuple[int, int, Any]]] | None:
    """(prefix of `root` below the database's trace_dir, path -> (size, mtime_ns, sums)), or
    None when the database cannot be used (module doc)."""
    from tracetool import store
    from tracetool.errors import IndexMissingError, TraceToolError
    from tracetool.index.schema import open_reader
    from tracetool.paths import query_db_path

    try:
        location = store.location(query_db, root) or query_db_path(root)
    except TraceToolError:
        return None
    if store.url_for(location) is not None:
        return None  # a shared database: its rows are per origin; stats reads the files
    try:
        conn = open_reader(Path(location))
    except IndexMissingError:
        return None
    conn.row_factory = None  # plain tuples: every recording's row is read
    try:
        meta = conn.execute("SELECT value FROM meta WHERE key = 'trace_dir'").fetchone()
        if meta is None or not meta[0]:
            return None
        try:
            below = root.expanduser().resolve().relative_to(Path(str(meta[0]))).as_posix()
        except ValueError:
            return None  # the index of another directory
        base = "" if below == "." else below + "/"
        indexed = {
            str(path): (size, mtime_ns, sums)
            for path, size, mtime_ns, sums in conn.execute(
                "SELECT r.path, r.size, r.mtime_ns, o.sums FROM overhead o "
                "JOIN recordings r ON r.id = o.recording_id WHERE r.origin = ''"
            )
        }
    except sqlite3.Error:
        return None  # a database being rebuilt or damaged: reading the files is always right
    finally:
        conn.close()
    return base, indexed
