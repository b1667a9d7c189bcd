"""Choosing which recordings `inspect` must read, from the query database when there is one.

`select(ref, trace_dir, query_db=None)` opens query.db (`--query-db`, else
`tracetool.paths.query_db_path(trace_dir)` under ``$HOME``) and returns a `Selection`, or None
when the index cannot help — no or outdated database, unreadable, or a code-object type the
database does not describe (`external-service`, `external-route`, and `function:event`, the name
given to message/other calls that the index does not keep). None means: scan every recording.

The index only chooses files; matching stays in `tracetool.inspect.scan`. So a selection is a
superset of the files that can match: `Selection.must_read(recording, path)` is False only for a
recording the index holds with the file's current size and mtime and whose rows show it cannot
contain the code object. Files missing from the index (added or skipped since indexing) or changed
since are always read, so nothing is missed. Lookups per type (their SQL errs on the side of more):

- function: recordings touching code object ``function:<id>``;
- class: recordings touching ``class:<id>`` or a class nested in it (``class:<id>::…``), the
  index keeps each function's nearest class and nested ids extend their parent's;
- package: recordings touching a function whose fqid starts with ``function:<package>``
  (a code object's id extends its package's);
- database / http: recordings with any SQL query / HTTP server request;
- table: recordings with a query on a table named ``<name>`` or ``<schema>.<name>``;
- query: recordings touching ``query:<normalized SQL>``;
- function, class, package: compared by `tracetool.identifiers.loose` (any of `/ . # ::`).
- route: recordings with a request of that method whose `route_shape` equals the route's
  (`tracetool.route_model`, the one model the index and the scan share).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tracetool.errors import IndexMissingError
from tracetool.inspect.refs import CodeObjectRef
from tracetool.inspect.sql_names import IndexedSql


@dataclass(frozen=True)
class Selection:
    """What the index knows: fingerprint of each indexed recording and which may match."""

    # recording path relative to trace_dir -> (recording id, size, mtime_ns)
    indexed: dict[str, tuple[int, int, int]]
    # ids of indexed recordings whose rows say they may contain the code object
    candidates: frozenset[int]
    db: Path | None = None  # the database these come from

    def sql_names(self, recordings: Iterable[str]) -> IndexedSql | None:
        """What the scan of these recordings needs to take their SQL names from the index
        (`tracetool.inspect.sql_names`): the ones it holds, with their fingerprints."""
        if self.db is None:
            return None
        held = {r: self.indexed[r] for r in recordings if r in self.indexed}
        return IndexedSql(self.db, held) if held else None

    def must_read(self, recording: str, path: Path) -> bool:
        row = self.indexed.get(recording)
        if row is None:
            return True  # not indexed (new, skipped, or another layout): scan it
        rid, size, mtime_ns = row
        if rid in self.candidates:
            return True
        try:
            st = path.stat()
        except OSError:
            return True  # the reader reports the problem
        return (st.st_size, st.st_mtime_ns) != (size, mtime_ns)


def select(
    ref: CodeObjectRef, trace_dir: Path, query_db: Path | str | None = None
) -> Selection | None:
    """The index's selection for `ref` (module doc), or None to scan every recording."""
    from tracetool import store
    from tracetool.index.schema import open_reader
    from tracetool.paths import query_db_path

    path = store.location(query_db, trace_dir) or query_db_path(trace_dir)
    if ref.type in ("external-service", "external-route"):
        return None
    if ref.type == "function" and ref.identifier == "event":
        return None
    try:
        db = open_reader(path)
    except IndexMissingError:
        return None
    try:
        candidates = _candidates(db, ref)
        indexed = {
            str(r[0]): (int(r[1]), int(r[2]), int(r[3]))
            for r in db.execute("SELECT path, id, size, mtime_ns FROM recordings")
        }
    except sqlite3.Error:
        return None  # a database being rebuilt or damaged: the scan is always right
    finally:
        db.close()
    return Selection(indexed, frozenset(candidates), Path(path))


_TOUCHING = (
    "SELECT DISTINCT rco.recording_id FROM code_objects co "
    "JOIN recording_code_objects rco ON rco.code_object_id = co.id WHERE "
)


def _ids(db: sqlite3.Connection, sql: str, params: tuple[object, ...] = ()) -> set[int]:
    return {int(r[0]) for r in db.execute(sql, params)}


def _candidates(db: sqlite3.Connection, ref: CodeObjectRef) -> set[int]:
    t, ident = ref.type, ref.identifier
    if t in ("function", "class", "package"):
        # Forgiving spellings (`tracetool.identifiers.loose`): `a.b.C.m` finds `a/b/C#m`.
        from tracetool.identifiers import loose

        db.create_function("loose", 1, loose, deterministic=True)
        key = loose(ident)
        below = key + "."
    if t == "function":
        return _ids(
            db, _TOUCHING + "co.type = 'function' AND loose(substr(co.fqid, 10)) = ?", (key,)
        )
    if t == "class":
        return _ids(
            db,
            _TOUCHING + "co.type = 'class' AND (loose(substr(co.fqid, 7)) = ? "
            "OR substr(loose(substr(co.fqid, 7)), 1, ?) = ?)",
            (key, len(below), below),
        )
    if t == "package":
        return _ids(
            db,
            _TOUCHING + "co.type = 'function' AND substr(loose(substr(co.fqid, 10)), 1, ?) = ?",
            (len(below), below),
        )
    if t == "database":
        return _ids(db, "SELECT DISTINCT recording_id FROM sql_queries")
    if t == "http":
        return _ids(db, "SELECT DISTINCT recording_id FROM http_requests")
    if t == "table":
        want = ident.lower()
        dotted = "." + want
        return _ids(
            db,
            _TOUCHING + "co.id IN (SELECT code_object_id FROM query_tables "
            "WHERE name = ? OR substr(name, -?) = ?)",
            (want, len(dotted), dotted),
        )
    if t == "query":
        from tracetool import sql

        # keywords in any case (`select … where` finds `SELECT … WHERE`)
        return _ids(
            db,
            _TOUCHING + "co.type = 'query' AND lower(co.fqid) = lower(?)",
            ("query:" + sql.normalize(ident),),
        )
    # route
    from tracetool import route_model

    method, template = route_model.parse_route(ident)
    rows = db.execute(
        "SELECT DISTINCT recording_id FROM http_requests WHERE route_shape = ? AND method = ?",
        (route_model.shape(template), method),
    )
    return {int(rid) for (rid,) in rows}


__all__ = ["Selection", "select"]
