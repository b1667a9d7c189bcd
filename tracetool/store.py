"""Where the query database lives: a SQLite file, or a team's shared PostgreSQL server.

`--query-db` (and `query_db:` in trace.yml, or `$TRACETOOL_QUERY_DB`; flag > environment >
trace.yml > default) is either a path to a SQLite file or a `postgresql://user@host/db` URL.
Every command reaches the database through `tracetool.index.schema.open_reader/open_writer`, and
those come here for a URL, so there is one code path:

- The SQL is written once, in SQLite's dialect, where it is used. `PgConnection` (the subset of
  `sqlite3.Connection` tracetool uses: execute, executemany, executescript, close, in_transaction)
  transpiles each statement with sqlglot (cached) and patches what sqlglot leaves alone: `GLOB`,
  case-insensitive `LIKE`, `round(x, n)` on doubles, SQLite's `substr` with a negative start, FTS5
  `MATCH` (a prefix-term match; `rank` is 0, so text results come in path order), `INSERT OR
  REPLACE/IGNORE` (→ `ON CONFLICT`), `lastrowid` (→ `RETURNING id`), `BEGIN IMMEDIATE` (→ a
  transaction holding an advisory lock: one writing transaction at a time, as with SQLite, so
  concurrent indexers neither deadlock nor see stale code-object ids) and PRAGMAs (skipped).
- The schema is `tracetool.index.schema.TABLES/INDEXES`, translated (`pg_ddl`): INTEGER →
  BIGINT, REAL → DOUBLE PRECISION, TEXT → TEXT COLLATE "C" (SQLite's binary order), `id INTEGER
  PRIMARY KEY` → identity, the FTS5 table → a plain table. The version is `meta.schema_version`.
- A URL is carried through code typed `Path` as a local directory
  `~/.trace/data/pg-<sha>/query.db` (sha of the URL and the recordings directory) holding
  `store.url` (mode 0600) and, as for SQLite, the index sidecars and the writer lock.
- Rows are `Row` (index and name access, like `sqlite3.Row`); numerics come back as int/float.
- psycopg (the `tracetool[postgres]` extra) is imported only when a URL is opened. A wrong URL,
  refused connection or missing permission is one line: `cannot connect to postgresql://…: …`.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tracetool.errors import TraceToolError
from tracetool.lazyre import lazy

ENV_QUERY_DB = "TRACETOOL_QUERY_DB"
URL_FILE = "store.url"
SCHEMES = ("postgresql", "postgres")
# pg_advisory_xact_lock key of the one writing transaction ("tracetoo" in ASCII).
WRITER_LOCK_KEY = 0x7472616365746F6F


class StoreError(TraceToolError):
    """The shared database cannot be reached or used (one line, names the URL)."""


class PgError(sqlite3.OperationalError):
    """A PostgreSQL error, as a `sqlite3.Error` so callers handle both databases alike."""


# --- locations ---------------------------------------------------------------------------------


def is_url(value: object) -> bool:
    return isinstance(value, str) and value.split(":", 1)[0].lower() in SCHEMES and "://" in value


def redact(url: str) -> str:
    """The URL without its password (for messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


def configured() -> str | None:
    """`$TRACETOOL_QUERY_DB`, else trace.yml's `query_db`, else None."""
    env = os.environ.get(ENV_QUERY_DB)
    if env:
        return env
    from tracetool.config import find_config_file, load_config

    file = find_config_file()
    if file is None:
        return None
    value = load_config(file).raw.get("query_db")
    if value is not None and not isinstance(value, str):
        from tracetool.errors import ConfigError

        raise ConfigError(f"{file}: query_db must be a path or a postgresql:// URL")
    if value and not is_url(value) and not os.path.isabs(value):
        return str(file.resolve().parent / value)
    return value or None


def check_url(url: str) -> None:
    parts = urlsplit(url)
    if not parts.path.strip("/"):
        raise StoreError(f"cannot connect to {redact(url)}: the URL names no database")


def location(
    value: str | os.PathLike[str] | None, trace_dir: str | os.PathLike[str]
) -> Path | None:
    """The query database `value` (or the configured one) names, as a path; None = default."""
    text = str(value) if value else configured()
    if not text:
        return None
    if not is_url(text):
        return Path(text).expanduser().absolute()
    check_url(text)
    import hashlib  # (loads OpenSSL, ~1.5 ms: only for a database URL)

    from tracetool.paths import DATA_ROOT, QUERY_DB

    root = str(Path(trace_dir).expanduser().resolve())
    key = hashlib.sha256(f"{text}\0{root}".encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return bind(Path.home() / DATA_ROOT / f"pg-{key}" / QUERY_DB, text)


def bind(path: Path, url: str) -> Path:
    """Make the location `path` stand for `url` (writes `store.url` beside it); returns it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    marker = path.with_name(URL_FILE)
    if not marker.is_file() or marker.read_text(encoding="utf-8") != url:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(url)
    return path


def url_for(path: str | os.PathLike[str]) -> str | None:
    """The URL a location made by `location` stands for, or None for a SQLite file."""
    if is_url(str(path)):
        return str(path)
    marker = Path(path).with_name(URL_FILE)
    try:
        return marker.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def describe(path: str | os.PathLike[str]) -> str:
    """What to show users for a database location (the URL without password, or the path)."""
    url = url_for(path)
    return redact(url) if url else str(path)


# --- translation -------------------------------------------------------------------------------

_FUNCTIONS = r"""
CREATE OR REPLACE FUNCTION tracetool_glob_re(pattern text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE r text := '^'; i int := 1; n int := length(pattern); c text; j int;
BEGIN
  IF pattern IS NULL THEN RETURN NULL; END IF;
  WHILE i <= n LOOP
    c := substr(pattern, i, 1);
    IF c = '*' THEN r := r || '.*';
    ELSIF c = '?' THEN r := r || '.';
    ELSIF c = '[' THEN
      j := position(']' in substr(pattern, i + 2));
      IF j = 0 THEN r := r || '\['; ELSE
        r := r || '[' || replace(substr(pattern, i + 1, j), '\', '\\') || ']';
        i := i + j;
      END IF;
    ELSIF c ~ '^[A-Za-z0-9_ ]$' THEN r := r || c;
    ELSE r := r || '\' || c;
    END IF;
    i := i + 1;
  END LOOP;
  RETURN r || '$';
END $fn$;
CREATE OR REPLACE FUNCTION tracetool_substr(t text, s bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN s < 0 THEN right(t, -s::int) WHEN s = 0 THEN t ELSE substr(t, s::int) END
$fn$;
CREATE OR REPLACE FUNCTION tracetool_substr(t text, s bigint, n bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN s < 0 THEN substr(right(t, -s::int), 1, n::int)
              WHEN s = 0 THEN substr(t, 1, greatest(n::int - 1, 0))
              ELSE substr(t, s::int, n::int) END
$fn$;
CREATE OR REPLACE FUNCTION tracetool_fts_match(doc text, q text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE any_term boolean := position(' OR ' in q) > 0; m text[]; toks text[]; pat text;
        hit boolean; low text := lower(doc);
BEGIN
  FOR m IN SELECT regexp_matches(q, '"([^"]*)"\*', 'g') LOOP
    SELECT array_agg(x) INTO toks
      FROM unnest(regexp_split_to_array(lower(m[1]), '[^[:alnum:]_]+')) AS x WHERE x <> '';
    IF toks IS NULL THEN CONTINUE; END IF;
    pat := '(^|[^[:alnum:]_])' || array_to_string(toks, '[^[:alnum:]_]+');
    hit := coalesce(low ~ pat, false);
    IF any_term AND hit THEN RETURN true; END IF;
    IF NOT any_term AND NOT hit THEN RETURN false; END IF;
  END LOOP;
  RETURN NOT any_term;
END $fn$;
"""


def _pg_column_type(match: re.Match[str]) -> str:
    word = match.group(0).upper()
    return {"INTEGER": "BIGINT", "REAL": "DOUBLE PRECISION", "TEXT": 'TEXT COLLATE "C"'}[word]


def pg_ddl(script: str) -> list[str]:
    """SQLite DDL statements (schema.TABLES / INDEXES) as PostgreSQL statements."""
    out: list[str] = []
    for statement in script.split(";"):
        sql = statement.strip()
        if not sql:
            continue
        fts = re.match(r"CREATE VIRTUAL TABLE IF NOT EXISTS (\w+) USING fts5\((.*)\)$", sql, re.S)
        if fts:
            columns = [c.strip() for c in fts.group(2).split(",") if "=" not in c]
            body = ", ".join(f'{c} TEXT COLLATE "C"' for c in columns)
            out.append(
                f"CREATE TABLE IF NOT EXISTS {fts.group(1)} (rowid BIGINT PRIMARY KEY, {body})"
            )
            continue
        index = re.match(
            r"(CREATE (?:UNIQUE )?INDEX IF NOT EXISTS \w+\s+ON \w+) \((.*)\)$", sql, re.S
        )
        if index:  # SQLite sorts NULLs first: so do these indexes, or ORDER BY cannot use them
            keys = ", ".join(f"{c.strip()} NULLS FIRST" for c in index.group(2).split(","))
            out.append(f"{index.group(1)} ({keys})")
            continue
        table = re.match(r"CREATE TABLE IF NOT EXISTS (\w+) \(", sql)
        if table and "PRIMARY KEY" not in sql:  # SQLite's implicit rowid (insertion order)
            sql = sql[: table.end()] + "rowid INTEGER __ROWID__, " + sql[table.end() :]
        sql = re.sub(r"\)\s*WITHOUT ROWID$", ")", sql)
        sql = re.sub(r"\bid INTEGER PRIMARY KEY\b", "id __IDENTITY__", sql)
        sql = re.sub(r"\b(INTEGER|REAL|TEXT)\b", _pg_column_type, sql)
        sql = sql.replace("__IDENTITY__", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
        sql = sql.replace("__ROWID__", "GENERATED BY DEFAULT AS IDENTITY")
        out.append(sql)
    return out


def _keys_of(script: str) -> dict[str, tuple[str, ...]]:
    """Conflict target per table (its primary key, else its single-column UNIQUE)."""
    keys: dict[str, tuple[str, ...]] = {}
    for m in re.finditer(
        r"CREATE TABLE IF NOT EXISTS (\w+) \((.*?)\)(?:\s*WITHOUT ROWID)?;", script, re.S
    ):
        table, body = m.group(1), m.group(2)
        pk = re.search(r"PRIMARY KEY \(([^)]*)\)", body)
        if pk:
            keys[table] = tuple(c.strip() for c in pk.group(1).split(","))
            continue
        uniq = re.search(r"UNIQUE \(([^)]*)\)", body)
        col = re.search(r"^\s*(\w+) \w+ PRIMARY KEY", body, re.M)
        if col and col.group(1) != "id":
            keys[table] = (col.group(1),)
        elif uniq:
            keys[table] = tuple(c.strip() for c in uniq.group(1).split(","))
    return keys


@lru_cache(maxsize=1)
def _schema_facts() -> tuple[dict[str, tuple[str, ...]], frozenset[str]]:
    from tracetool.index.schema import TABLES

    id_tables = frozenset(
        m.group(1)
        for m in re.finditer(
            r"CREATE TABLE IF NOT EXISTS (\w+) \(\s*id INTEGER PRIMARY KEY", TABLES
        )
    )
    return _keys_of(TABLES), id_tables


def _rewrite(tree: Any) -> Any:
    from sqlglot import exp

    def fix(node: Any) -> Any:
        if isinstance(node, exp.Join) and node.args.get("on") is not None:
            if (node.args.get("kind") or "").upper() == "CROSS":  # SQLite's planner hint
                node.set("kind", None)
            return node
        if isinstance(node, exp.Glob):
            return exp.RegexpLike(
                this=node.this,
                expression=exp.Anonymous(this="tracetool_glob_re", expressions=[node.expression]),
            )
        if isinstance(node, exp.Like):
            return exp.ILike(this=node.this, expression=node.expression)
        if isinstance(node, exp.Round) and node.args.get("decimals") is not None:
            inner = exp.Round(
                this=exp.Cast(this=node.this, to=exp.DataType.build("NUMERIC")),
                decimals=node.args["decimals"],
            )
            return exp.Cast(this=inner, to=exp.DataType.build("DOUBLE PRECISION"))
        if isinstance(node, exp.Substring):
            args = [node.this, node.args.get("start")]
            if node.args.get("length") is not None:
                args.append(node.args["length"])
            return exp.Anonymous(this="tracetool_substr", expressions=args)
        if isinstance(node, exp.GroupConcat):
            this = node.this
            if isinstance(this, exp.Distinct):
                this = exp.Distinct(
                    expressions=[
                        exp.Cast(this=e, to=exp.DataType.build("TEXT")) for e in this.expressions
                    ]
                )
            else:
                this = exp.Cast(this=this, to=exp.DataType.build("TEXT"))
            return exp.GroupConcat(this=this, separator=node.args.get("separator"))
        if isinstance(node, exp.DataType) and node.this == exp.DataType.Type.FLOAT:
            return exp.DataType.build("DOUBLE PRECISION")
        return node

    tree = tree.transform(fix)
    for n, sub in enumerate(tree.find_all(exp.Subquery)):
        if isinstance(sub.parent, (exp.From, exp.Join)) and not sub.alias:
            sub.set("alias", exp.TableAlias(this=exp.to_identifier(f"_sub{n}")))
    for select in tree.find_all(exp.Select):
        _group_bare_columns(select)
    return tree


def _group_bare_columns(select: Any) -> None:
    """SQLite lets a grouped query select columns it does not group by (taken from one row of
    the group; tracetool selects only columns fixed by the group). PostgreSQL wants them in
    GROUP BY: add them, which groups the same rows."""
    from sqlglot import exp

    having = select.args.get("having")
    if having is not None:  # SQLite resolves output aliases in HAVING; PostgreSQL does not
        aliases = {p.alias: p.this for p in select.expressions if isinstance(p, exp.Alias)}
        for column in list(having.find_all(exp.Column)):
            if not column.table and column.name in aliases:
                column.replace(aliases[column.name].copy())
    group = select.args.get("group")
    if group is None:
        return
    have = {e.sql() for e in group.expressions}
    for projection in select.expressions:
        for column in projection.find_all(exp.Column):
            node, inside = column, False
            while node is not None and node is not select:
                if isinstance(node, (exp.AggFunc, exp.Window, exp.Select, exp.Subquery)):
                    inside = True
                    break
                node = node.parent
            if not inside and column.sql() not in have:
                group.append("expressions", column.copy())
                have.add(column.sql())


_FTS_ALIAS = lazy(r"\brecordings_fts\s+(?:AS\s+)?(\w+)", re.I)


@lru_cache(maxsize=4096)
def translate(sql: str) -> tuple[str, bool]:
    """(PostgreSQL statement, whether it returns a generated id) for one SQLite statement."""
    import sqlglot

    text = sql.strip().rstrip(";")
    upper = text.upper()
    fts = _FTS_ALIAS.search(text)
    if fts and "MATCH" in upper:
        a = fts.group(1)
        doc = f"concat_ws(' ', {a}.name, {a}.labels, {a}.routes, {a}.code, {a}.sql, {a}.messages)"
        text = re.sub(r"\brecordings_fts\s+MATCH\s+\?", f"tracetool_fts_match({doc}, ?)", text)
        text = re.sub(rf"\b{a}\.rank\b", "CAST(0 AS REAL)", text)
    conflict = ""
    m = re.match(r"INSERT\s+OR\s+(REPLACE|IGNORE)\s+INTO\s+(\w+)\s*\(([^)]*)\)", text, re.I)
    if m:
        keys, _ = _schema_facts()
        table, columns = m.group(2), [c.strip() for c in m.group(3).split(",")]
        target = keys.get(table, ())
        text = re.sub(r"^INSERT\s+OR\s+\w+\s+INTO", "INSERT INTO", text, flags=re.I)
        if m.group(1).upper() == "IGNORE" or not target:
            conflict = " ON CONFLICT DO NOTHING"
        else:
            sets = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c not in target)
            action = f"DO UPDATE SET {sets}" if sets else "DO NOTHING"
            conflict = f" ON CONFLICT ({', '.join(target)}) {action}"
    tree = sqlglot.parse_one(text, read="sqlite")
    out = _rewrite(tree).sql(dialect="postgres")
    out = re.sub(r"%(?!s)", "%%", out) + conflict
    returns_id = False
    ins = re.match(r"INSERT INTO (\w+) \(([^)]*)\)", out)
    if ins and not conflict:
        _, id_tables = _schema_facts()
        cols = [c.strip() for c in ins.group(2).split(",")]
        if ins.group(1) in id_tables and "id" not in cols:
            out += " RETURNING id"
            returns_id = True
    return out, returns_id


# --- connection --------------------------------------------------------------------------------


def _value(v: Any) -> Any:
    # (a Decimal comes from PostgreSQL's driver, which imported decimal: SQLite never needs it)
    decimal = sys.modules.get("decimal")
    if decimal is not None and isinstance(v, decimal.Decimal):
        return int(v) if v == v.to_integral_value() and v.as_tuple().exponent == 0 else float(v)
    return v


class Row(Sequence[Any]):
    """A result row: by position and by column name (`keys()`), like `sqlite3.Row`."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: tuple[Any, ...]) -> None:
        self._index = index
        self._values = values

    def keys(self) -> list[str]:
        return list(self._index)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (Row, tuple)) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values))!r})"


class PgCursor:
    def __init__(
        self,
        rows: list[Row],
        description: list[tuple[Any, ...]] | None,
        lastrowid: int | None,
        rowcount: int,
    ) -> None:
        self._rows = rows
        self._pos = 0
        self.description = description
        self.lastrowid = lastrowid
        self.rowcount = rowcount

    def fetchone(self) -> Row | None:
        if self._pos >= len(self._rows):
            return None
        self._pos += 1
        return self._rows[self._pos - 1]

    def fetchall(self) -> list[Row]:
        rest = self._rows[self._pos :]
        self._pos = len(self._rows)
        return rest

    def fetchmany(self, size: int = 1) -> list[Row]:
        rest = self._rows[self._pos : self._pos + size]
        self._pos += len(rest)
        return rest

    def __iter__(self) -> Iterator[Row]:
        while True:
            row = self.fetchone()
            if row is None:
                return
            yield row

    def close(self) -> None:
        self._rows = []


_EMPTY = PgCursor([], None, None, -1)


class PgConnection:
    """The part of `sqlite3.Connection` tracetool uses, on PostgreSQL (see module doc)."""

    row_factory: Any = None  # accepted and ignored: rows are always `Row`
    shared = True  # other processes may write between our transactions

    def __init__(self, raw: Any, url: str) -> None:
        self._raw = raw
        self.url = url

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return bool(self._raw.info.transaction_status != TransactionStatus.IDLE)

    def _fail(self, exc: Exception) -> Exception:
        import psycopg

        message = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return StoreError(f"cannot use {redact(self.url)}: {message}")
        if isinstance(exc, psycopg.OperationalError) and self._raw.closed:
            return StoreError(f"cannot connect to {redact(self.url)}: {message}")
        return PgError(message)

    def _special(self, sql: str) -> PgCursor | None:
        head = sql.lstrip().upper()
        if head.startswith("PRAGMA") or head.startswith("VACUUM"):
            return _EMPTY
        if head.startswith("BEGIN"):
            self._run("BEGIN", ())
            if "IMMEDIATE" in head or "EXCLUSIVE" in head:
                self._run("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK_KEY,))
            return _EMPTY
        if head.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK TO")):  # same words in both
            self._run(sql.strip().rstrip(";"), ())
            return _EMPTY
        if head.startswith(("COMMIT", "ROLLBACK", "END")):
            self._run("ROLLBACK" if head.startswith("ROLLBACK") else "COMMIT", ())
            return _EMPTY
        return None

    def _run(self, sql: str, params: Sequence[Any], returns_id: bool = False) -> PgCursor:
        import psycopg

        try:
            cur = self._raw.execute(sql, tuple(params), prepare=False)
        except psycopg.Error as exc:
            raise self._fail(exc) from None
        if cur.description is None:
            return PgCursor([], None, None, cur.rowcount)
        names = [c.name for c in cur.description]
        index = {n: i for i, n in enumerate(names)}
        rows = [Row(index, tuple(_value(v) for v in r)) for r in cur.fetchall()]
        if returns_id:
            return PgCursor([], None, int(rows[0][0]) if rows else None, cur.rowcount)
        return PgCursor(
            rows, [(n, None, None, None, None, None, None) for n in names], None, cur.rowcount
        )

    def execute(self, sql: str, params: Sequence[Any] = ()) -> PgCursor:
        special = self._special(sql)
        if special is not None:
            return special
        pg, returns_id = translate(sql)
        return self._run(pg, params, returns_id)

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> PgCursor:
        import psycopg

        pg, _ = translate(sql)
        pg = pg.removesuffix(" RETURNING id")
        rows = [tuple(p) for p in seq]
        if not rows:
            return _EMPTY
        try:
            with self._raw.cursor() as cur:
                cur.executemany(pg, rows)
        except psycopg.Error as exc:
            raise self._fail(exc) from None
        return _EMPTY

    def executescript(self, script: str) -> PgCursor:
        for statement in script.split(";"):
            if statement.strip():
                self.execute(statement)
        return _EMPTY

    def commit(self) -> None:
        if self.in_transaction:
            self._run("COMMIT", ())

    def rollback(self) -> None:
        if self.in_transaction:
            self._run("ROLLBACK", ())

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> PgConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.commit()
        else:
            self.rollback()


def connect(url: str, *, readonly: bool = False) -> PgConnection:
    """A connection (autocommit; explicit BEGIN/COMMIT as with tracetool's SQLite use)."""
    check_url(url)
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            f"cannot connect to {redact(url)}: the PostgreSQL driver is not installed "
            "(pip install 'tracetool[postgres]')"
        ) from None
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except (psycopg.Error, ValueError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise StoreError(f"cannot connect to {redact(url)}: {message}") from None
    conn = PgConnection(raw, url)
    if readonly:
        conn._run("SET default_transaction_read_only = on", ())
    return conn


# --- schema ------------------------------------------------------------------------------------


def _table_exists(conn: PgConnection, name: str) -> bool:
    row = conn._run("SELECT to_regclass(%s)", (name,)).fetchone()
    return row is not None and row[0] is not None


def _version(conn: PgConnection) -> int | None:
    if not _table_exists(conn, "meta"):
        return None
    row = conn._run("SELECT value FROM meta WHERE key = 'schema_version'", ()).fetchone()
    return int(row[0]) if row and row[0] is not None else None


def open_writer(url: str) -> tuple[PgConnection, bool]:
    """Like `schema.open_writer` for a URL: (connection, fresh). Creation and migration run in
    one transaction under the writer lock, so concurrent first runs create the schema once."""
    from tracetool.index import schema

    conn = connect(url)
    try:
        conn.execute("BEGIN IMMEDIATE")
        version = _version(conn)
        fresh = version is None
        if version is not None and version != schema.SCHEMA_VERSION:
            steps = range(version, schema.SCHEMA_VERSION)
            if version < schema.SCHEMA_VERSION and all(v in schema.MIGRATIONS for v in steps):
                for v in steps:
                    schema.MIGRATIONS[v](conn)  # type: ignore[arg-type]
            else:  # a cache of the recordings: rebuilt by the next index run of each folder
                for table in reversed(_tables()):
                    conn._run(f"DROP TABLE IF EXISTS {table}", ())
                fresh = True
        for statement in [*pg_ddl(schema.TABLES), *pg_ddl(schema.INDEXES)]:
            conn._run(statement, ())
        conn._run(_FUNCTIONS, ())
        conn._run(
            "INSERT INTO meta (key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (str(schema.SCHEMA_VERSION),),
        )
        conn.execute("COMMIT")
    except BaseException:
        if not conn._raw.closed and conn.in_transaction:
            conn.rollback()
        conn.close()
        raise
    return conn, fresh


def _tables() -> list[str]:
    from tracetool.index.schema import TABLES

    return re.findall(r"CREATE (?:VIRTUAL )?TABLE IF NOT EXISTS (\w+)", TABLES)


def open_reader(url: str) -> PgConnection:
    """Like `schema.open_reader` for a URL: IndexMissingError when absent or of another version."""
    from tracetool.errors import IndexMissingError
    from tracetool.index.schema import SCHEMA_VERSION

    conn = connect(url, readonly=True)
    version = _version(conn)
    if version != SCHEMA_VERSION:
        conn.close()
        what = "no query database" if version is None else f"schema version {version}"
        raise IndexMissingError(
            f"{redact(url)}: {what}, this tracetool needs schema {SCHEMA_VERSION}; "
            "run `tracetool index --query-db URL` to build it"
        )
    return conn
