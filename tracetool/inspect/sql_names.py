"""The normalized text and tables of a recording's SQL calls, from query.db when it holds them.

A match's context lists the normalized SQL and the tables of the queries below it; naming a SQL
callee normalizes its query too. `tracetool.sql.analyze` gives both, at the price of importing
sqlglot (~0.1 s of CPU per process) and tokenizing each distinct statement. The index already
did that work for every SQL call of every recording it holds: `sql_queries` keeps, per call
event id, the `query:<normalized SQL>` code object, and `query_tables` that object's tables.

- `IndexedSql(db)` is what a worker is given: the database path and, per recording file, the
  (recording id, size, mtime_ns) the index holds. `IndexedSql.open()` gives an `IndexReader`
  (None if the database cannot be read); `IndexReader.names(rid)` → `SqlNames` of that recording.
- `SqlNames.info(call)` → (normalized, tables), `SqlNames.normalized(call)`: the index's values
  when they are exactly what `tracetool.sql.analyze(ev.sql_text(call), ev.database_type(call))`
  gives, else that call. The index's row for a call is used only when the call is a SQL call
  (`ev.kind`: an HTTP request with a `sql_query` is none) whose id is an `int` held by one SQL row
  of the recording (sqlite turns `"14"` into 14); its tables only when the query's code object
  was indexed with the call's own `database_type` (tables depend on the dialect; the normalized
  text does not name it) and no quoted identifier of the statement holds a comma (the index
  stores the tables comma-joined). `SqlNames(None)` always analyzes.
- The scan uses the index's rows only for a recording read whole, without `eventUpdates` (the
  index applies them, inspect reads the events as written), whose size and mtime are the
  index's (`tracetool.inspect.scan`).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracetool.trace import events as ev

# Quoted identifiers (and string literals) left to right, as a tokenizer pairs them.
_QUOTED = re.compile(r'"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\]|\'(?:[^\']|\'\')*\'')

# event id -> (normalized SQL, its tables or None when the index's cannot be trusted, the
# database_type the query's code object was indexed with)
Rows = dict[int, tuple[str, "tuple[str, ...] | None", Any]]


class SqlNames:
    """(normalized, tables) of one recording's SQL calls (module doc)."""

    __slots__ = ("ids", "reader", "rows")

    def __init__(
        self,
        rows: Rows | None,
        ids: dict[int, int] | None = None,
        reader: IndexReader | None = None,
    ) -> None:
        """`rows`: the index's values per event id; or `ids`, the query code object id per event
        id (each held once), whose values `reader` gives when a call asks (`IndexReader.query`)."""
        self.rows = rows
        self.ids = ids
        self.reader = reader

    def _row(self, call: Any) -> tuple[str, tuple[str, ...] | None, Any] | None:
        rows, ids = self.rows, self.ids
        if not rows and not ids:
            return None
        eid = call.get("id")
        if type(eid) is not int or ev.kind(call) != ev.SQL:  # the index has rows for SQL calls
            return None
        if rows:
            return rows.get(eid)
        cid = ids.get(eid) if ids else None
        if cid is None or self.reader is None:
            return None
        try:
            found: tuple[str, tuple[str, ...] | None, Any] | None = self.reader.query(cid)
        except sqlite3.Error:
            return None  # analyzed, as a recording whose rows cannot be read
        return found

    def info(self, call: Any) -> tuple[str, Iterable[str]]:
        row = self._row(call)
        if row is not None and row[1] is not None and row[2] == ev.database_type(call):
            return row[0], row[1]
        from tracetool import sql

        info = sql.analyze(ev.sql_text(call), ev.database_type(call))
        return info.normalized, info.tables

    def normalized(self, call: Any) -> str:
        row = self._row(call)
        if row is not None:
            return row[0]
        from tracetool import sql

        return sql.normalize(ev.sql_text(call), ev.database_type(call))


ANALYZE = SqlNames(None)


@dataclass(frozen=True)
class IndexedSql:
    """Where the index is and which recording files it holds (module doc)."""

    db: Path
    # recording path relative to trace_dir -> (recording id, size, mtime_ns)
    indexed: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    def open(self) -> IndexReader | None:
        from tracetool.errors import IndexMissingError
        from tracetool.index.schema import open_reader

        try:
            conn = open_reader(self.db)
        except (IndexMissingError, sqlite3.Error):
            return None
        conn.row_factory = None  # plain tuples: a recording's rows are read in bulk
        return IndexReader(conn)


class IndexReader:
    """A read-only connection and the SQL names of the query code objects met so far."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.tables: dict[int, tuple[str, ...]] | None = None
        # query code object id -> (normalized, tables, database_type), None if not a query
        self.queries: dict[int, Any] = {}

    def names(self, rid: int) -> SqlNames:
        """The recording's SQL names, or `ANALYZE` when the index cannot give them. Its rows are
        read in bulk (the common case: each event id held once), and a query's values resolved
        only when a call asks (`query`): a context names a few of a recording's SQL calls."""
        try:
            pairs = self.conn.execute(
                "SELECT event_id, code_object_id FROM sql_queries "
                "WHERE recording_id = ? AND typeof(event_id) = 'integer'",
                (rid,),
            ).fetchall()
            ids = dict(pairs)
            if len(ids) == len(pairs):
                return SqlNames(None, ids, self)
            return SqlNames(self._rows(pairs))
        except sqlite3.Error:
            return ANALYZE

    def query(self, cid: int) -> Any:
        """`_query(cid)`, once per query code object."""
        queries = self.queries
        query = queries.get(cid, False)
        if query is False:
            query = queries[cid] = self._query(cid)
        return query

    def _query(self, cid: int) -> Any:
        """(normalized, tables or None, database_type) of a query code object, or None."""
        if self.tables is None:
            by_query: dict[int, list[str]] = {}
            for qid, name in self.conn.execute("SELECT code_object_id, name FROM query_tables"):
                by_query.setdefault(int(qid), []).append(str(name))
            self.tables = {qid: tuple(names) for qid, names in by_query.items()}
        row = self.conn.execute(
            "SELECT fqid, database_type FROM code_objects WHERE id = ?", (cid,)
        ).fetchone()
        if row is None or not isinstance(row[0], str) or not row[0].startswith("query:"):
            return None
        normalized = row[0][len("query:") :]
        tables: tuple[str, ...] | None = self.tables.get(cid, ())
        if any("," in q.group() for q in _QUOTED.finditer(normalized)):
            tables = None
        return (normalized, tables, row[1])

    def _rows(self, pairs: Iterable[tuple[int, int]]) -> Rows:
        """The values per event id of (event id, query code object id) rows; an event id held
        by two rows naming a query has none."""
        rows: Rows = {}
        ambiguous: set[int] = set()
        for eid, cid in pairs:
            query = self.query(cid)
            if query is None:
                continue
            if eid in rows:
                ambiguous.add(eid)
                continue
            rows[eid] = query
        for eid in ambiguous:
            del rows[eid]
        return rows

    def close(self) -> None:
        self.conn.close()


__all__ = ["ANALYZE", "IndexReader", "IndexedSql", "SqlNames"]
