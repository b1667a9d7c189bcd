"""The single writer of query.db: inserts, replaces, renames and deletes recordings.

Used only while holding the writer lock. Work is batched: `Writer` opens a transaction on the
first change and `maybe_commit()` commits every `batch_seconds` (readers see progress; a crash
loses at most one batch). A recording keeps its row id when it changes, so ids stay stable for
the daemon's clients. Code-object fqids are interned in `code_objects`; ids are cached here, and
every code object row received in the run is kept: a worker sends each row once per run and
names it with None after that (`tracetool.index.worker._sent_once`).
"""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

import orjson

from tracetool.index.source import Source, apply
from tracetool.index.worker import Indexed

_CHILD_TABLES = (
    "http_requests",
    "sql_queries",
    "function_calls",
    "exceptions",
    "log_messages",
    "recording_code_objects",
    "overhead",
)

_RECORDING_COLUMNS = (
    "path",
    "name",
    "labels",
    "test_status",
    "recorder_type",
    "recorder_name",
    "language",
    "app",
    "branch",
    "git_commit",
    "source_location",
    "failure",
    "recorded_at",
    "indexed_at",
    "size",
    "mtime_ns",
    "sha256",
    "events",
    "requests",
    "queries",
    "calls",
    "exceptions",
    "items",
    "elapsed_ms",
    "diagram_digest",
    "origin",
    "repository",
    "source_branch",
    "source_commit",
    "ci_run",
)
_INSERT_RECORDING = (
    f"INSERT INTO recordings ({', '.join(_RECORDING_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _RECORDING_COLUMNS)})"
)
_INSERT_CODE_OBJECT = (
    "INSERT INTO code_objects (fqid, type, name, class_id, class_name, method, static, location, "
    "labels, operation, tables, database_type) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE_RECORDING = (
    f"UPDATE recordings SET {', '.join(f'{c} = ?' for c in _RECORDING_COLUMNS)} WHERE id = ?"
)
_SELECT_RECORDING = f"SELECT {', '.join(_RECORDING_COLUMNS)} FROM recordings WHERE id = ?"
# the child tables' columns, recording_id first: as inserted, and as read back by `_same`
_REQUEST_COLUMNS = (
    "recording_id, event_id, method, route, path, status, duration_ms, sql_count, sql_ms, "
    "route_shape"
)
_QUERY_COLUMNS = "recording_id, event_id, request_event_id, code_object_id, duration_ms, caller_id"
_CALL_COLUMNS = "recording_id, code_object_id, count, total_ms, self_ms, max_ms"
_EXCEPTION_COLUMNS = (
    "recording_id, event_id, request_event_id, class, message, location, function_id"
)
_LOG_COLUMNS = "recording_id, event_id, request_event_id, level, logger_id, caller_id, message"


# meta key present while a run that changed recordings has not finished its code objects
_STALE_KEY = "code_objects_pending"
# Above this many touched code objects, looking at all of them is as cheap.
_FEW_CODE_OBJECTS = 5000
_CHUNK = 500


# Rows per INSERT statement (`_insert`): a VALUES list of many rows is one trip through the
# sqlite3 module and one sqlite3_step (GIL released and taken, mutexes, statement reset) instead
# of one per row. Measured per table on a cold load of 1000 recordings: ~30% less for
# sql_queries and function_calls (~110 and ~140 narrow rows per recording, into rowid tables);
# nothing gained for log_messages and http_requests (10 columns, mostly text): those stay one
# statement per row. recording_code_objects goes in as one INSERT ... SELECT over a JSON array
# (`Writer._insert_code_objects`). 64 rows of at most 15 columns stay below SQLite's oldest
# limit on parameters (999).
_ROWS = 64
_FTS_HEAD = "INSERT INTO recordings_fts (rowid, name, labels, routes, code, sql, messages)"
_INSERT_FTS_ROW = f"{_FTS_HEAD} VALUES (?, ?, ?, ?, ?, ?, ?)"
_INSERT_CODE_OBJECTS = (
    "INSERT INTO recording_code_objects (code_object_id, recording_id) VALUES (?, ?)"
)
_INSERT_CODE_OBJECTS_JSON = (
    "INSERT INTO recording_code_objects (code_object_id, recording_id) "
    "SELECT value, ?1 FROM json_each(?2)"
)


@functools.cache
def _values(head: str, width: int, rows: int) -> str:
    """`head` + VALUES of `rows` rows of `width` parameters."""
    row = f"({', '.join('?' * width)})"
    return f"{head} VALUES {', '.join([row] * rows)}"


def _insert(conn: sqlite3.Connection, head: str, width: int, rows: list[tuple[Any, ...]]) -> None:
    """Insert `rows` (tuples of `width` values) with `head` ("INSERT INTO t (columns)"), in order
    (ids are assigned as one statement per row would): `_ROWS` rows per statement, then the rest
    by 32, 16, ... 1 (a few statement shapes, all cached by the sqlite3 module). A statement
    that fails inserted none of its rows; those and the rest are then inserted one by one, so
    the error raised, and the rows in before it, are those of one statement per row (and
    should the many-row form fail where single rows do not, the rows still go in)."""
    n = len(rows)
    if n < 2 or not set(map(len, rows)) <= {width}:  # (a wrong width: the error as it was)
        conn.executemany(_values(head, width, 1), rows)
        return
    flat = list(chain.from_iterable(rows))
    done = 0
    size = _ROWS
    try:
        while done < n:
            while n - done < size:
                size //= 2
            conn.execute(_values(head, width, size), flat[done * width : (done + size) * width])
            done += size
    except Exception:
        conn.executemany(_values(head, width, 1), rows[done:])


@dataclass(frozen=True)
class Known:
    """What the database knows of a recording file."""

    id: int
    size: int
    mtime_ns: int
    sha256: str


class _CodeIds(dict[Any, Any]):
    """Code object ids of one recording's fqids (None -> None); a missing fqid is interned."""

    def __init__(
        self,
        ids: Iterable[tuple[str, int | None]],
        intern: Callable[[str | None, dict[str, tuple[Any, ...]]], int | None],
        items: dict[str, tuple[Any, ...]],
    ) -> None:
        super().__init__(ids)
        self[None] = None
        self._intern = intern
        self._items = items

    def __missing__(self, fqid: str) -> int | None:
        cid = self[fqid] = self._intern(fqid, self._items)
        return cid


class Writer:
    def __init__(
        self, conn: sqlite3.Connection, *, batch_seconds: float = 1.0, source: Source = Source()
    ) -> None:
        self.conn = conn
        self.batch_seconds = batch_seconds
        self.source = source
        self._in_tx = False
        self._tx_started = 0.0
        self._codes: dict[str, int] = dict(
            (fqid, cid) for cid, fqid in conn.execute("SELECT id, fqid FROM code_objects")
        )
        # Code objects whose recordings changed in this run (interned, referenced by a recording
        # written, or by one replaced or deleted): what `prune_code_objects` and
        # `count_recordings` look at, unless a run that changed recordings never got to them
        # (interrupted: `_STALE` is still in meta) — then they look at every code object.
        self._touched: set[int] = set()
        self._stale = self._shared or _STALE_KEY in dict(
            conn.execute("SELECT key, value FROM meta WHERE key = ?", (_STALE_KEY,)).fetchall()
        )
        self._marked = False
        self._json_each = not self._shared  # (`_insert_code_objects`)
        # `put`: the id of the recording being added (undone by deleting it if it fails), and
        # whether savepoints guard each recording instead (after the first undo of a run)
        self._adding: int | None = None
        self._savepoints = False
        # Every code object row received in this run: a worker sends each row once per run,
        # later recordings name it with None in `Extract.items` (`worker._sent_once`).
        self._rows: dict[str, tuple[Any, ...]] = {}
        # Full-text rows of this transaction not inserted yet (`_add_fts`).
        self._fts: list[tuple[Any, ...]] = []

    # --- transactions -------------------------------------------------------------------------

    @property
    def _shared(self) -> bool:
        return bool(getattr(self.conn, "shared", False))

    def _begin(self) -> None:
        if not self._in_tx:
            self.conn.execute("BEGIN IMMEDIATE")
            self._in_tx = True
            self._tx_started = time.monotonic()
            if self._shared:  # other writers may have interned or pruned
                self._codes = dict(
                    (fqid, cid)
                    for cid, fqid in self.conn.execute("SELECT id, fqid FROM code_objects")
                )

    def commit(self) -> None:
        if self._in_tx:
            self._flush_fts()
            self.conn.execute("COMMIT")
            self._in_tx = False

    def rollback(self) -> None:
        self._fts.clear()
        if self._in_tx:
            self.conn.execute("ROLLBACK")
            self._in_tx = False

    def maybe_commit(self) -> None:
        if self._in_tx and time.monotonic() - self._tx_started >= self.batch_seconds:
            self.commit()

    # --- reads ----------------------------------------------------------------------------------

    def known(self) -> dict[str, Known]:
        return {
            path: Known(rid, size, mtime_ns, sha)
            for rid, path, size, mtime_ns, sha in self.conn.execute(
                "SELECT id, path, size, mtime_ns, sha256 FROM recordings WHERE origin = ?",
                (self.source.origin,),
            )
        }

    # --- writes ---------------------------------------------------------------------------------

    def _code_id(self, fqid: str | None, items: dict[str, tuple[Any, ...]]) -> int | None:
        if fqid is None:
            return None
        cid = self._codes.get(fqid)
        if cid is None:
            attrs = items.get(fqid)
            if attrs is None:
                if fqid in items:  # a row its worker sent with an earlier recording
                    attrs = self._rows[fqid]
                else:
                    attrs = ("function", fqid.split(":", 1)[-1], *(None,) * 9)
            cur = self.conn.execute(_INSERT_CODE_OBJECT, (fqid, *attrs))
            cid = int(cur.lastrowid or 0)
            self._codes[fqid] = cid
            self._touched.add(cid)
            if attrs[0] == "query" and attrs[9]:
                self.conn.executemany(
                    "INSERT OR IGNORE INTO query_tables (name, code_object_id) VALUES (?, ?)",
                    [(name, cid) for name in attrs[9].split(",")],
                )
        return cid

    def _mark_stale(self) -> None:
        """Note in the database that code objects await `finish_code_objects` (module doc)."""
        if not self._marked:
            self.conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_STALE_KEY, "1")
            )
            self._marked = True

    def _clear_children(self, rid: int) -> None:
        self._touched.update(
            cid
            for (cid,) in self.conn.execute(
                "SELECT code_object_id FROM recording_code_objects WHERE recording_id = ?", (rid,)
            )
        )
        for table in _CHILD_TABLES:
            self.conn.execute(f"DELETE FROM {table} WHERE recording_id = ?", (rid,))
        self._flush_fts()
        self.conn.execute("DELETE FROM recordings_fts WHERE rowid = ?", (rid,))

    def put(self, result: Indexed, *, replace_id: int | None = None, fresh: bool = False) -> int:
        """Insert a recording (or replace the one with `replace_id`); returns its id.

        All or nothing per recording: a value the database refuses (a null event id, a list
        where text belongs) undoes this recording's rows and raises; the batch goes on.

        A new recording's rows all carry its new id, so they are undone by deleting them, not
        under a savepoint: a savepoint copies every page it touches first, ~0.3 ms per
        recording of a cold load. After one such undo (whose deletes may scan whole tables: a
        cold load builds the recording_id indexes last), savepoints guard the rest of the run.
        """
        self._begin()
        self._mark_stale()
        if replace_id is None and not self._savepoints and not self._shared:
            self._adding = None
            try:
                return self._put(result, None, fresh)
            except Exception:
                # (its code objects stay interned: `finish_code_objects` forgets unused ones)
                if self._adding is not None:
                    self.delete(self._adding)
                self._savepoints = True
                raise
        codes = dict(self._codes)
        # (the full-text rows held for recordings already written go in first: inserted under
        # this savepoint, a rollback to it would drop them with this recording's rows)
        self._flush_fts()
        self.conn.execute("SAVEPOINT put_recording")
        try:
            rid = self._put(result, replace_id, fresh)
        except BaseException:
            self.conn.execute("ROLLBACK TO put_recording")
            self.conn.execute("RELEASE put_recording")
            self._codes = codes
            raise
        self.conn.execute("RELEASE put_recording")
        return rid

    def _put(self, result: Indexed, replace_id: int | None, fresh: bool) -> int:
        data = result.data
        rows = self._rows
        for fqid, row in data.items.items():  # (first: kept even if this recording fails)
            if row is not None:
                rows[fqid] = row
        rec: dict[str, Any] = dict(data.recording)
        rec.update(
            path=result.relpath,
            labels=orjson.dumps(rec.get("labels") or []).decode(),
            recorded_at=rec.get("recorded_at") or result.mtime_ns / 1e9,
            indexed_at=time.time(),
            size=result.size,
            mtime_ns=result.mtime_ns,
            sha256=result.sha256,
            diagram_digest=result.digests.get("sequence_diagram"),
        )
        apply(self.source, rec)
        values = [rec.get(c) for c in _RECORDING_COLUMNS]
        conn = self.conn
        # A replaced recording keeps the rows that did not change (`_same`), so a re-index
        # writes only the pages of what changed (with its secondary indexes' entries).
        replacing = replace_id is not None and not fresh
        if replace_id is not None:
            rid = replace_id
            self._update_recording(rid, values, replacing)
        else:
            rid = self._adding = int(conn.execute(_INSERT_RECORDING, values).lastrowid or 0)
        items = data.items
        codes = self._codes
        if not codes.keys() >= items.keys():  # (a C loop: nearly always all interned)
            for fqid in [f for f in items if f not in codes]:  # (in order: ids are assigned)
                self._code_id(fqid, items)
        cids = list(map(codes.__getitem__, items))
        # fqid (or None) -> code object id, by plain subscription: the rows below name code
        # objects hundreds of thousands of times, nearly always one of `items`.
        code = _CodeIds(zip(items, cids), self._code_id, items)
        cids.sort()  # (in the table's key order: appended, a page after another)
        if not replacing or not self._same_code_objects(rid, cids):
            self._insert_code_objects(rid, cids)
            self._touched.update(cids)
        new: list[tuple[Any, ...]] = [(rid, *row) for row in data.requests]
        if not replacing or not self._same("http_requests", _REQUEST_COLUMNS, rid, new):
            conn.executemany(
                f"INSERT INTO http_requests ({_REQUEST_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                new,
            )
        new = [(rid, e, r, code[q], ms, code[c]) for e, r, q, ms, c in data.queries]
        if not replacing or not self._same("sql_queries", _QUERY_COLUMNS, rid, new):
            _insert(conn, f"INSERT INTO sql_queries ({_QUERY_COLUMNS})", 6, new)
        new = [(rid, code[f], n, total, own, top) for f, n, total, own, top in data.functions]
        if not replacing or not self._same("function_calls", _CALL_COLUMNS, rid, new):
            _insert(conn, f"INSERT INTO function_calls ({_CALL_COLUMNS})", 6, new)
        new = [(rid, *row[:5], code[row[5]]) for row in data.exceptions]
        if not replacing or not self._same("exceptions", _EXCEPTION_COLUMNS, rid, new):
            conn.executemany(
                f"INSERT INTO exceptions ({_EXCEPTION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                new,
            )
        new = [
            (rid, e, r, level, code[logger], code[caller], message)
            for e, r, level, logger, caller, message in data.logs
        ]
        if not replacing or not self._same("log_messages", _LOG_COLUMNS, rid, new):
            conn.executemany(
                f"INSERT INTO log_messages ({_LOG_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", new
            )
        new = [] if result.overhead is None else [(rid, result.overhead)]
        if not replacing or not self._same("overhead", "recording_id, sums", rid, new):
            conn.executemany("INSERT INTO overhead (recording_id, sums) VALUES (?, ?)", new)
        fts = (rid, *data.fts)
        if not replacing or not self._same_fts(fts):
            self._add_fts(fts)
        return rid

    # --- the full-text rows ------------------------------------------------------------------
    #
    # FTS5 writes the terms it holds in memory to its index whenever a later statement of the
    # transaction opens a statement savepoint, as most inserts do: each recording's full-text
    # row, inserted among its other rows, was flushed (and merged) on its own, ~4% of the
    # parent's instructions in a cold load (2.4% net once held back). Held back and inserted
    # together as the transaction commits, a batch's rows are flushed once. Only rows of text
    # are held (what the extract makes): a value SQLite would refuse still fails the
    # recording it belongs to, inserted at once. A shared store inserts at once as well.

    def _add_fts(self, row: tuple[Any, ...]) -> None:
        if self._shared or not all(v is None or v.__class__ is str for v in row[1:]):
            self.conn.execute(_INSERT_FTS_ROW, row)
        else:
            self._fts.append(row)

    def _flush_fts(self) -> None:
        """Insert the held full-text rows (before the transaction commits, and before any
        statement that reads or deletes full-text rows)."""
        if self._fts:
            rows, self._fts = self._fts, []
            _insert(self.conn, _FTS_HEAD, 7, rows)

    # --- a replaced recording: what changed only --------------------------------------------
    #
    # Re-indexing a recording that changed a little (a recording re-made by the same test, a
    # file touched by an editor) used to delete and re-insert all its rows: ~1,000 pages with
    # their secondary indexes' entries for one recording of 300 KB. Each table's stored rows
    # are compared instead, and a table whose rows are the same is left alone. Rows compare
    # with Python's `==`, under which a value and what SQLite stores of it in its column are
    # equal (3 and 3.0 in a REAL column); where they are not (a number in a TEXT column, NaN),
    # the rows are simply written again. Left alone, rows also keep their ids.

    def _update_recording(self, rid: int, values: list[Any], replacing: bool) -> None:
        """Set the recording's columns: only those whose value changed when `replacing`
        (each index of an unchanged column keeps its page)."""
        old = self.conn.execute(_SELECT_RECORDING, (rid,)).fetchone() if replacing else None
        if old is None:
            self.conn.execute(_UPDATE_RECORDING, (*values, rid))
            return
        changed = [i for i, (was, now) in enumerate(zip(old, values)) if was != now]
        if changed:
            sets = ", ".join(f"{_RECORDING_COLUMNS[i]} = ?" for i in changed)
            self.conn.execute(
                f"UPDATE recordings SET {sets} WHERE id = ?", (*[values[i] for i in changed], rid)
            )

    def _same(self, table: str, columns: str, rid: int, rows: list[tuple[Any, ...]]) -> bool:
        """Whether `table` holds `rows` (in order) for recording `rid` already; if not, its
        rows of `rid` are deleted, for `rows` to be inserted."""
        old = self.conn.execute(
            f"SELECT {columns} FROM {table} WHERE recording_id = ? ORDER BY rowid", (rid,)
        ).fetchall()
        if old == rows:
            return True
        if old:
            self.conn.execute(f"DELETE FROM {table} WHERE recording_id = ?", (rid,))
        return False

    def _insert_code_objects(self, rid: int, cids: list[int]) -> None:
        """The recording's rows of recording_code_objects (`cids` sorted), in one statement
        over a JSON array where SQLite has `json_each`: one INSERT ... SELECT keeps its cursor
        at the end of the table, where the rows go, instead of seeking from the root for each
        row as one statement per row does (~250 rows per recording: a cold load of 1000
        recordings spends ~0.27 s there instead of ~0.7 s). One statement per row elsewhere (a
        shared store, an SQLite built without JSON)."""
        if self._json_each and cids:
            try:
                self.conn.execute(_INSERT_CODE_OBJECTS_JSON, (rid, orjson.dumps(cids).decode()))
                return
            except sqlite3.OperationalError as exc:
                if "json_each" not in str(exc):
                    raise
                self._json_each = False
        self.conn.executemany(_INSERT_CODE_OBJECTS, zip(cids, repeat(rid)))

    def _same_code_objects(self, rid: int, cids: list[int]) -> bool:
        """`_same` for recording_code_objects (`cids` sorted); a change touches the code
        objects of both sides (their recording counts may change), no change none."""
        old = [
            cid
            for (cid,) in self.conn.execute(
                "SELECT code_object_id FROM recording_code_objects WHERE recording_id = ? "
                "ORDER BY code_object_id",
                (rid,),
            )
        ]
        if old == cids:
            return True
        self._touched.update(old)
        if old:
            self.conn.execute("DELETE FROM recording_code_objects WHERE recording_id = ?", (rid,))
        return False

    def _same_fts(self, row: tuple[Any, ...]) -> bool:
        """`_same` for the recording's full-text row (`row` = rowid and columns)."""
        self._flush_fts()
        old = self.conn.execute(
            "SELECT rowid, name, labels, routes, code, sql, messages FROM recordings_fts "
            "WHERE rowid = ?",
            (row[0],),
        ).fetchone()
        if old == row:
            return True
        if old is not None:
            self.conn.execute("DELETE FROM recordings_fts WHERE rowid = ?", (row[0],))
        return False

    def touch(self, rid: int, size: int, mtime_ns: int) -> None:
        """Same content, new file times (copied, restored, `touch`ed)."""
        self._begin()
        self.conn.execute(
            "UPDATE recordings SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, rid)
        )

    def rename(self, rid: int, relpath: str, size: int, mtime_ns: int) -> None:
        self._begin()
        self.conn.execute(
            "UPDATE recordings SET path = ?, size = ?, mtime_ns = ? WHERE id = ?",
            (relpath, size, mtime_ns, rid),
        )

    def delete(self, rid: int) -> None:
        self._begin()
        self._mark_stale()
        self._clear_children(rid)
        self.conn.execute("DELETE FROM recordings WHERE id = ?", (rid,))

    def finish_code_objects(self, *, everything: bool = False) -> None:
        """Forget code objects no recording touches any more and refresh how many recordings
        touch each (`code_objects.recordings`): those touched in this run, or every one when
        `everything` (a cold load), when the database is shared, or when an earlier run was
        interrupted before doing it."""
        self._begin()
        # Counted first, then those counted 0 forgotten: one pass over recording_code_objects
        # (a cold load's is ~250 rows per recording), where finding the unused ones by it
        # took two more.
        if everything or self._stale or len(self._touched) > _FEW_CODE_OBJECTS:
            self._count(None)
            self._prune(None)
        else:
            touched = sorted(self._touched)
            for start in range(0, len(touched), _CHUNK):
                chunk = touched[start : start + _CHUNK]
                self._count(chunk)
                self._prune(chunk)
        self._codes = dict(
            (fqid, cid) for cid, fqid in self.conn.execute("SELECT id, fqid FROM code_objects")
        )
        self.conn.execute("DELETE FROM meta WHERE key = ?", (_STALE_KEY,))
        self._touched.clear()
        self._stale = self._marked = False

    def _prune(self, ids: list[int] | None) -> None:
        """Forget the code objects (of `ids`, or all) that `_count` found in no recording."""
        unused = "SELECT id FROM code_objects WHERE recordings = 0"
        args: tuple[int, ...] = ()
        if ids is not None:
            marks = ", ".join("?" for _ in ids)
            unused = f"SELECT id FROM code_objects WHERE id IN ({marks}) AND recordings = 0"
            args = tuple(ids)
        self.conn.execute(f"DELETE FROM query_tables WHERE code_object_id IN ({unused})", args)
        self.conn.execute(f"DELETE FROM code_objects WHERE id IN ({unused})", args)

    def _count(self, ids: list[int] | None) -> None:
        count = (
            "(SELECT count(*) FROM recording_code_objects WHERE code_object_id = code_objects.id)"
        )
        where = ""
        args: tuple[int, ...] = ()
        if ids is not None:
            # (a row whose count did not change is not written: its page stays clean)
            where = f" WHERE id IN ({', '.join('?' for _ in ids)}) AND recordings != {count}"
            args = tuple(ids)
        self.conn.execute(f"UPDATE code_objects SET recordings = {count}" + where, args)

    def set_meta(self, **values: Any) -> None:
        self._begin()
        self.conn.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [(k, None if v is None else str(v)) for k, v in values.items()],
        )
