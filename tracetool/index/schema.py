"""The query database (`query.db`): schema, version, migrations, connections.

One SQLite file per recordings directory. Its schema version is `PRAGMA user_version`; a database
of another version is never read as if it were current (DESIGN.md §4):

- the writer (`open_writer`) migrates an older database step by step when `MIGRATIONS` has every
  step, and otherwise rebuilds it from scratch (delete, create, re-index everything);
- readers (`open_reader`) refuse a database of another version with `IndexMissingError`, whose
  message tells the user to run `tracetool index`.

Journal mode is WAL, so readers keep a consistent snapshot while the single writer (see
`tracetool.index.lock`) commits batches. Paths in the database are POSIX paths relative to the
recordings directory, so a moved directory keeps a valid database.

Tables (all durations in milliseconds, timestamps in epoch seconds):

- `recordings`: one row per recording file — path, name, labels (JSON array), test_status,
  recorder, language, app, branch, git_commit, recorded_at, indexed_at, size, mtime_ns, sha256,
  counts (events, requests, queries, calls, exceptions, items), elapsed_ms, diagram_digest, and
  its source (`tracetool.index.source`): origin (`<host>:<recordings directory>`, unique with
  path: writers sharing a database each own their origin's rows), repository, source_branch,
  source_commit, ci_run (version 3).
- `code_objects`: every fqid seen (function, class, route, query, table, external route) with
  its attributes — class id and name, method, location, labels for functions; operation,
  tables and database type for queries; `recordings` = how many recordings touch it. Rows
  below refer to code objects by id, so their text is stored once.
  `query_tables` maps query code objects to table names; `recording_code_objects` says which
  recording touches which code object (the basis of `related`; version 5 keys it by
  recording, and indexes it by code object).
- `http_requests`: HTTP server requests — method, route (template `{param}` form,
  `tracetool.route_model.server_template`), path, status, duration_ms, sql_count, sql_ms, and
  route_shape (`route_model.shape`: every parameter `{}`; route lookups compare this).
  Version 2 added route_shape and the route model (guessed parameters named, e.g. `{user_id}`).
- `sql_queries`: one row per SQL call — its query code object, duration_ms, calling function
  (caller_id) and enclosing HTTP request (request_event_id).
- `function_calls`: per recording and function — count, total_ms (recursion counted once),
  self_ms and max_ms.
- `exceptions`, `log_messages`: one row per exception raised / log call, with the function and
  the enclosing request.
- `overhead` (version 4): per recording, what directory-mode `stats` sums of it — JSON
  `[[code-object name, calls that returned, seconds of elapsed_instrumentation, is SQL], ...]`
  (`tracetool.stats._collect.file_overhead`, or the same from the index's parse,
  `tracetool.index.overhead`; read by `tracetool.stats._kept`). No row for a
  recording `stats` would skip as malformed.
- `recordings_fts`: FTS5 over name, labels, routes, code, SQL and messages, rowid = recording id.
- `meta`: key/value facts about the database (trace_dir, tracetool version, last run).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from tracetool.errors import IndexMissingError

SCHEMA_VERSION = 5

TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS recordings (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL,
  name TEXT NOT NULL,
  labels TEXT NOT NULL DEFAULT '[]',
  test_status TEXT,
  recorder_type TEXT,
  recorder_name TEXT,
  language TEXT,
  app TEXT,
  branch TEXT,
  git_commit TEXT,
  source_location TEXT,
  failure TEXT,
  recorded_at REAL,
  indexed_at REAL,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  events INTEGER NOT NULL DEFAULT 0,
  requests INTEGER NOT NULL DEFAULT 0,
  queries INTEGER NOT NULL DEFAULT 0,
  calls INTEGER NOT NULL DEFAULT 0,
  exceptions INTEGER NOT NULL DEFAULT 0,
  items INTEGER NOT NULL DEFAULT 0,
  elapsed_ms REAL,
  diagram_digest TEXT,
  origin TEXT NOT NULL DEFAULT '',
  repository TEXT,
  source_branch TEXT,
  source_commit TEXT,
  ci_run TEXT,
  UNIQUE (origin, path)
);
CREATE TABLE IF NOT EXISTS code_objects (
  id INTEGER PRIMARY KEY,
  fqid TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL,
  name TEXT NOT NULL,
  class_id TEXT,
  class_name TEXT,
  method TEXT,
  static INTEGER,
  location TEXT,
  labels TEXT,
  operation TEXT,
  tables TEXT,
  database_type TEXT,
  recordings INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS query_tables (
  name TEXT NOT NULL,
  code_object_id INTEGER NOT NULL,
  PRIMARY KEY (name, code_object_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS recording_code_objects (
  code_object_id INTEGER NOT NULL,
  recording_id INTEGER NOT NULL,
  PRIMARY KEY (recording_id, code_object_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS http_requests (
  id INTEGER PRIMARY KEY,
  recording_id INTEGER NOT NULL,
  event_id INTEGER NOT NULL,
  method TEXT NOT NULL,
  route TEXT NOT NULL,
  path TEXT NOT NULL,
  status INTEGER,
  duration_ms REAL,
  sql_count INTEGER NOT NULL DEFAULT 0,
  sql_ms REAL NOT NULL DEFAULT 0,
  route_shape TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS sql_queries (
  id INTEGER PRIMARY KEY,
  recording_id INTEGER NOT NULL,
  event_id INTEGER NOT NULL,
  request_event_id INTEGER,
  code_object_id INTEGER NOT NULL,
  duration_ms REAL,
  caller_id INTEGER
);
CREATE TABLE IF NOT EXISTS function_calls (
  recording_id INTEGER NOT NULL,
  code_object_id INTEGER NOT NULL,
  count INTEGER NOT NULL,
  total_ms REAL NOT NULL,
  self_ms REAL NOT NULL,
  max_ms REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS exceptions (
  id INTEGER PRIMARY KEY,
  recording_id INTEGER NOT NULL,
  event_id INTEGER NOT NULL,
  request_event_id INTEGER,
  class TEXT NOT NULL,
  message TEXT,
  location TEXT,
  function_id INTEGER
);
CREATE TABLE IF NOT EXISTS log_messages (
  id INTEGER PRIMARY KEY,
  recording_id INTEGER NOT NULL,
  event_id INTEGER NOT NULL,
  request_event_id INTEGER,
  level TEXT,
  logger_id INTEGER,
  caller_id INTEGER,
  message TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS overhead (
  recording_id INTEGER PRIMARY KEY,
  sums TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS recordings_fts USING fts5(
  name, labels, routes, code, sql, messages, tokenize = 'unicode61 tokenchars ''_'''
);
"""

# Secondary indexes: one per filter of `tracetool query`, covering indexes for the aggregations
# (endpoints, hotspots), and the recording_id used by re-indexing. Kept apart so a cold index
# can load rows first and build indexes once (`LATE_INDEXES`), but for those that lead with the
# recording (`LOAD_INDEXES`): a cold load gives recordings increasing ids, so their entries are
# appended at the end, as the rows are, which costs less than sorting them after the load, at
# its end, where nothing else runs (~0.2 s less of a cold load of 1000 recordings).
LOAD_INDEXES = """
CREATE INDEX IF NOT EXISTS http_requests_recording
  ON http_requests (recording_id, event_id, method, route, status, duration_ms, sql_count);
CREATE INDEX IF NOT EXISTS sql_queries_recording ON sql_queries (recording_id, request_event_id);
CREATE INDEX IF NOT EXISTS function_calls_recording ON function_calls (recording_id);
CREATE INDEX IF NOT EXISTS exceptions_recording ON exceptions (recording_id);
CREATE INDEX IF NOT EXISTS log_messages_recording ON log_messages (recording_id);
"""
LATE_INDEXES = """
CREATE INDEX IF NOT EXISTS recordings_branch ON recordings (branch, recorded_at);
CREATE INDEX IF NOT EXISTS recordings_path ON recordings (path);
CREATE INDEX IF NOT EXISTS recordings_commit ON recordings (git_commit);
CREATE INDEX IF NOT EXISTS recordings_recorded_at ON recordings (recorded_at);
CREATE INDEX IF NOT EXISTS recordings_name ON recordings (name);
CREATE INDEX IF NOT EXISTS recordings_sha256 ON recordings (sha256);
CREATE INDEX IF NOT EXISTS code_objects_class ON code_objects (class_name, method);
CREATE INDEX IF NOT EXISTS code_objects_method ON code_objects (method);
CREATE INDEX IF NOT EXISTS recording_code_objects_code
  ON recording_code_objects (code_object_id, recording_id);
CREATE INDEX IF NOT EXISTS http_requests_route
  ON http_requests (route, method, status, duration_ms, sql_count);
CREATE INDEX IF NOT EXISTS http_requests_shape ON http_requests (route_shape, method);
CREATE INDEX IF NOT EXISTS http_requests_status ON http_requests (status);
CREATE INDEX IF NOT EXISTS http_requests_duration ON http_requests (duration_ms);
CREATE INDEX IF NOT EXISTS sql_queries_code_object
  ON sql_queries (code_object_id, duration_ms, recording_id);
CREATE INDEX IF NOT EXISTS sql_queries_caller ON sql_queries (caller_id);
CREATE INDEX IF NOT EXISTS sql_queries_duration ON sql_queries (duration_ms);
CREATE INDEX IF NOT EXISTS function_calls_code_object
  ON function_calls (code_object_id, total_ms, self_ms, count, max_ms, recording_id);
CREATE INDEX IF NOT EXISTS function_calls_total ON function_calls (total_ms);
CREATE INDEX IF NOT EXISTS exceptions_class ON exceptions (class);
CREATE INDEX IF NOT EXISTS exceptions_function ON exceptions (function_id);
CREATE INDEX IF NOT EXISTS log_messages_caller ON log_messages (caller_id);
"""
INDEXES = LOAD_INDEXES + LATE_INDEXES

# MIGRATIONS[v] upgrades a database from version v to v + 1 in place. A missing step means
# "rebuild": the database is a cache of the recordings, so rebuilding loses nothing.
Migration = Callable[[sqlite3.Connection], None]


def _code_objects_by_recording(conn: sqlite3.Connection) -> None:
    """4 → 5: `recording_code_objects` keyed by recording first, indexed by code object (it
    was the other way round). A cold load then appends each recording's rows to the table
    instead of inserting them at ~250 random places, ~40% of the writer's cost of that
    table; the index by code object is sorted once at the end, as every other index is.
    A shared PostgreSQL store keeps its table: its primary key is only an index there, and
    it keeps the index by recording as well."""
    if getattr(conn, "shared", False):
        return
    conn.execute("ALTER TABLE recording_code_objects RENAME TO recording_code_objects_4")
    (create,) = [t for t in TABLES.split(";") if "TABLE IF NOT EXISTS recording_code_obj" in t]
    conn.execute(create)  # (the very text a new database has)
    conn.execute(
        "INSERT INTO recording_code_objects (code_object_id, recording_id) "
        "SELECT code_object_id, recording_id FROM recording_code_objects_4 "
        "ORDER BY recording_id, code_object_id"
    )
    conn.execute("DROP TABLE recording_code_objects_4")  # (with its index by recording)


MIGRATIONS: dict[int, Migration] = {4: _code_objects_by_recording}


def _configure(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA temp_store = MEMORY")
    # The writer mostly appends: a small page cache keeps its memory flat on big corpora
    # (4 MB: the pages a cold load touches at random, code_objects' and the FTS index's, fit;
    # more is memory beside the workers for nothing).
    conn.execute("PRAGMA cache_size = -4000")


def connect(path: Path | str, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection with our settings; `readonly` opens with `mode=ro` (no file is created)."""
    if readonly:
        conn = sqlite3.connect(f"file:{Path(path).as_posix()}?mode=ro", uri=True)
        conn.execute("PRAGMA query_only = 1")
        conn.execute("PRAGMA cache_size = -32000")
    else:
        conn = sqlite3.connect(str(path), isolation_level=None)
        _configure(conn)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def is_empty(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()
    return int(row[0]) == 0


def create(conn: sqlite3.Connection, *, indexes: bool = True) -> None:
    """Create every table and index, but for `LATE_INDEXES` when `indexes` is False (a cold
    load: `create_indexes` makes them after it), and stamp the version."""
    conn.executescript(TABLES)
    conn.executescript(INDEXES if indexes else LOAD_INDEXES)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def create_indexes(conn: sqlite3.Connection, *, threads: int = 0) -> None:
    """Create the secondary indexes (after a bulk load) in one transaction.

    With `threads`, SQLite's sorter sorts each index's keys on that many helper threads as
    well as this one: a cold load builds its indexes after the last worker process has
    finished, so the other cores are idle and the build (~0.7 s per 1000 recordings, most of
    it sorting) is wall time the run adds directly. The sorter only uses threads with temp
    files (`temp_store = FILE`: it spills sorted runs there, in the page cache); where no
    temporary file can be made, the build is done again in memory on this thread.
    """
    if threads > 0:
        conn.execute("PRAGMA temp_store = FILE")
        conn.execute(f"PRAGMA threads = {int(threads)}")
        try:
            _create_indexes(conn)
            return
        except sqlite3.OperationalError:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        finally:
            conn.execute("PRAGMA threads = 0")
            conn.execute("PRAGMA temp_store = MEMORY")
    _create_indexes(conn)


def _create_indexes(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    for statement in INDEXES.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("COMMIT")


def remove_database(path: Path) -> None:
    """Delete a database file with its WAL and shared-memory companions."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def open_writer(path: Path) -> tuple[sqlite3.Connection, bool]:
    """Open (creating, migrating or rebuilding) the database for writing.

    Returns (connection, fresh): `fresh` is True when the database starts empty, in which case
    the secondary indexes are not created yet (call `create_indexes` after the bulk load).
    The caller must hold the writer lock. A location standing for a PostgreSQL URL opens that
    server instead (`tracetool.store`).
    """
    from tracetool import store

    url = store.url_for(path)
    if url is not None:
        return store.open_writer(url)  # type: ignore[return-value]
    path.parent.mkdir(parents=True, exist_ok=True)
    conn: sqlite3.Connection | None = None
    try:
        conn = connect(path)
        if is_empty(conn):
            create(conn, indexes=False)
            return conn, True
        version = user_version(conn)
        if version == SCHEMA_VERSION:
            conn.executescript(TABLES)  # idempotent: repairs a half-created database
            conn.executescript(INDEXES)
            return conn, False
        if version < SCHEMA_VERSION and all(
            v in MIGRATIONS for v in range(version, SCHEMA_VERSION)
        ):
            for v in range(version, SCHEMA_VERSION):
                conn.execute("BEGIN IMMEDIATE")
                MIGRATIONS[v](conn)
                conn.execute(f"PRAGMA user_version = {v + 1}")
                conn.execute("COMMIT")
            conn.executescript(INDEXES)  # (those a migration dropped with their table)
            return conn, False
    except sqlite3.DatabaseError:
        pass  # not a database, or corrupt: rebuilt below
    if conn is not None:
        conn.close()
    remove_database(path)
    conn = connect(path)
    create(conn, indexes=False)
    return conn, True


def open_reader(path: Path) -> sqlite3.Connection:
    """Open an existing, current database read-only, or raise `IndexMissingError`."""
    from tracetool import store

    url = store.url_for(path)
    if url is not None:
        return store.open_reader(url)  # type: ignore[return-value]
    if not path.is_file():
        raise IndexMissingError(f"no query database at {path}; run `tracetool index` to build it")
    try:
        conn = connect(path, readonly=True)
        version = user_version(conn)
    except sqlite3.DatabaseError as exc:
        raise IndexMissingError(
            f"{path}: unreadable query database ({exc}); run `tracetool index` to rebuild it"
        ) from None
    if version != SCHEMA_VERSION:
        conn.close()
        raise IndexMissingError(
            f"{path}: query database has schema version {version}, this tracetool needs "
            f"{SCHEMA_VERSION}; run `tracetool index` to rebuild it"
        )
    conn.row_factory = sqlite3.Row
    return conn
