"""Finding and opening the query database, and naming recordings in it.

`open_db(trace_dir=None, query_db=None)` opens query.db read-only: `--query-db` when given, else
the default location for the recordings directory (flag > $TRACETOOL_TRACE_DIR > trace.yml >
`tmp/trace`). A missing or outdated database raises `IndexMissingError` telling the user to run
`tracetool index`.

`resolve_recording(db, ref)` turns what a user types for `<appmap>` into a recording row: its
path relative to trace_dir (with or without the `.trace.json` / `.appmap.json` suffix), a file
path (absolute or relative to the current directory), or its metadata name.
"""

from __future__ import annotations

import math
import socket
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from tracetool.errors import NotFoundError, UsageError
from tracetool.index.indexer import default_query_db
from tracetool.index.schema import open_reader
from tracetool.trace import TRACE_SUFFIXES


def query_db_path(trace_dir: Path | str | None = None, query_db: Path | str | None = None) -> Path:
    from tracetool import store
    from tracetool.config import resolve_trace_dir

    root = resolve_trace_dir(str(trace_dir) if trace_dir else None)
    return store.location(query_db, root) or default_query_db(root)


def open_db(
    trace_dir: Path | str | None = None, query_db: Path | str | None = None
) -> sqlite3.Connection:
    """A read-only connection (rows as `sqlite3.Row`) to an up-to-date query database."""
    return open_reader(query_db_path(trace_dir, query_db))


def trace_dir_of(db: sqlite3.Connection) -> Path | None:
    row = db.execute("SELECT value FROM meta WHERE key = 'trace_dir'").fetchone()
    return Path(row[0]) if row and row[0] else None


def resolve_recording(db: sqlite3.Connection, ref: str) -> sqlite3.Row:
    """The recordings row `ref` names (see module doc), or NotFoundError / UsageError."""
    text = ref.strip()
    if not text:
        raise UsageError("no recording given")
    candidates = [text]
    if not text.endswith(TRACE_SUFFIXES):
        candidates += [text + suffix for suffix in TRACE_SUFFIXES]
    root = trace_dir_of(db)
    as_file = Path(text).expanduser()
    if root is not None and as_file.exists():
        try:
            candidates.insert(0, as_file.resolve().relative_to(root).as_posix())
        except ValueError:
            pass
    for candidate in candidates:
        row = db.execute(  # several origins of a shared database: the latest indexed
            "SELECT * FROM recordings WHERE path = ? ORDER BY indexed_at DESC, id DESC LIMIT 1",
            (candidate,),
        ).fetchone()
        if row is not None:
            return row  # type: ignore[no-any-return]
    rows = db.execute("SELECT * FROM recordings WHERE name = ? ORDER BY path", (text,)).fetchall()
    if len(rows) == 1:
        return rows[0]  # type: ignore[no-any-return]
    if len(rows) > 1:
        paths = ", ".join(r["path"] for r in rows[:5])
        raise UsageError(f"{text!r} names {len(rows)} recordings ({paths}); give a path instead")
    # A unique file-name stem anywhere in the tree ("show_user" for "a/b/show_user.trace.json").
    stem_rows = db.execute(
        "SELECT * FROM recordings WHERE path GLOB ? OR path GLOB ? OR path GLOB ? OR path GLOB ?",
        tuple(f"{p}{text}{s}" for p in ("*/", "") for s in TRACE_SUFFIXES),
    ).fetchall()
    if len(stem_rows) == 1:
        return stem_rows[0]  # type: ignore[no-any-return]
    raise NotFoundError(f"{text}: no such recording in the index (run `tracetool index`?)")


def recording_file(db: sqlite3.Connection, row: sqlite3.Row) -> Path:
    """Absolute path of an indexed recording's file (in its own recordings directory when a
    shared database holds several: `origin` is `<host>:<directory>`, tracetool.index.source)."""
    origin = row["origin"] if "origin" in row.keys() else ""
    host, _, folder = (origin or "").partition(":")
    if folder and host == socket.gethostname():
        return Path(folder) / row["path"]
    root = trace_dir_of(db)
    path = Path(row["path"])
    return path if root is None else root / path


def round_ms(value: float | None) -> float | None:
    """Milliseconds to 3 decimals, halves away from zero (as SQLite's round() in `find`)."""
    if value is None:
        return None
    scaled = math.floor(abs(value) * 1000.0 + 0.5) / 1000.0
    return scaled if value >= 0 else -scaled


def iso(ts: float | None) -> str | None:
    """Epoch seconds as an ISO 8601 UTC string (second precision)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
