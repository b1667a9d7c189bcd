"""The SQL analyses of earlier index runs, kept beside query.db (`<query.db>-sql.json`).

Analyzing a SQL statement (`tracetool.sql.analyze`: sqlglot's tokenizer, ~0.2 ms each, and
importing sqlglot, ~0.1 s per process) is a fair share of indexing, and a re-index mostly meets
statements it analyzed before. `SqlCache` reads them back when first asked; `seeded()` makes
`tracetool.sql.analyze` return them without tokenizing (in worker processes forked inside it
too); the workers report what they analyzed anew (`tracetool.index.worker.Indexed.sql`, already in
the file's form: `encoded`), `add` takes it and `save` writes the file when something was new.

Correctness first: an entry is keyed by the exact statement text and `database_type`, and the
whole file by `stamp()` — tracetool's version and the size and mtime of the analysis code
(tracetool/sql.py, tracetool/_sql_analysis.py, tracetool/_sql_template.py) and of sqlglot (its
`__init__.py` and `_version.py`). A file of another stamp, version or shape is ignored (and rewritten by the next
run that analyzes something). Texts over the analysis cache's own limit are not kept, and the
file keeps at most `MAX_ENTRIES` (the most recently added win), so it cannot grow without bound.
Like the sidecars it is a cache: written with rename, no fsync, rebuilt when lost.

Data safety: the file never holds a statement's text. Raw SQL carries its literals (passwords,
tokens, personal data), which query.db never stores (it keeps normalized SQL, literals as `?`),
and a user who sanitizes or deletes recordings must not find them again here. An entry is
found by `text_key`, a BLAKE2b digest of the exact text, and holds only what query.db holds
anyway: the normalized and parameterized texts (literals masked), tables and operations.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import orjson

from tracetool import __version__, sql
from tracetool.trace.atomic import atomic_write_bytes

FORMAT = 3  # 3: entries an object keyed by `stored_key` (read by orjson, no Python loop)
MAX_ENTRIES = 50_000
# Statements looked up in the file's bytes (`SqlCache._search`) before it is parsed whole: a
# search reads ~0.3 instructions a byte, a parse ~22 (2.5 MB of 30,000 analyses: 56 M
# instructions), and re-indexing a recording or two meets a few dozen statements.
SEARCHED_LOOKUPS = 48

Key = tuple[str, Optional[str]]


def text_key(text: str) -> str:
    """The digest that stands for a statement's text in the file (module doc: data safety)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()


def stored_key(text: str, database_type: Optional[str]) -> str:
    """How the analysis of (text, database_type) is found in the file: `text_key`, and
    `:database_type` when there is one (a hex digest holds no colon)."""
    digest = text_key(text)
    return digest if database_type is None else f"{digest}:{database_type}"


def cache_path(query_db: Path) -> Path:
    return query_db.with_name(query_db.name + "-sql.json")


def _file_stamp(path: str | None) -> str:
    if not path:
        return "-"
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}"


def stamp() -> str:
    """What the analyses depend on (module doc), without importing sqlglot."""
    parts = [__version__, _file_stamp(sql.__file__)]
    for helper in ("_sql_analysis.py", "_sql_template.py"):
        parts.append(_file_stamp(os.path.join(os.path.dirname(sql.__file__), helper)))
    try:
        spec = importlib.util.find_spec("sqlglot")
    except (ImportError, ValueError):
        spec = None
    origin = spec.origin if spec is not None else None
    parts.append(_file_stamp(origin))
    if origin:
        parts.append(_file_stamp(os.path.join(os.path.dirname(origin), "_version.py")))
    return "|".join(parts)


def _encode(info: sql.SqlInfo) -> list[Any]:
    # The parameterized text is usually the normalized one: stored once then.
    same = info.parameterized == info.normalized
    return [
        info.normalized,
        info.reliable,
        info.operation,
        list(info.tables),
        list(info.operations),
        None if same else info.parameterized,
    ]


def encoded(analyses: dict[Key, sql.SqlInfo]) -> dict[str, list[Any]]:
    """`analyses` as the file stores them (`SqlCache.add`): no statement text, plain lists."""
    return {stored_key(text, dbtype): _encode(info) for (text, dbtype), info in analyses.items()}


def _decode(row: list[Any]) -> sql.SqlInfo:
    normalized, reliable, operation, tables, operations, parameterized = row
    return sql.SqlInfo(
        normalized,
        reliable,
        operation,
        tuple(tables),
        tuple(operations),
        normalized if parameterized is None else parameterized,
    )


def _valid(row: Any) -> bool:
    return (
        isinstance(row, list)
        and len(row) == 6
        and isinstance(row[0], str)
        and isinstance(row[1], bool)
        and isinstance(row[2], str)
        and isinstance(row[3], list)
        and isinstance(row[4], list)
        and (row[5] is None or isinstance(row[5], str))
    )


class SqlCache:
    """The analyses of one query.db's earlier runs (module doc). The file is read when first
    needed (a re-index that finds nothing changed never reads it), and its rows stay as read
    until a statement is met (`get`): a re-index of one file decodes only that file's."""

    def __init__(self, path: Path, stamp: str) -> None:
        self.path = path
        self.stamp = stamp
        self.new = 0
        self.rewrite = False  # the file on disk is unusable: replaced by the next save
        self._rows: dict[str, list[Any]] | None = None
        self._decoded: dict[Key, sql.SqlInfo] = {}
        # The file's bytes, searched a statement at a time (`_search`) until `rows` is needed
        # or SEARCHED_LOOKUPS statements were looked up; None: not read yet.
        self._raw: bytes | None = None
        self._searched = 0

    @classmethod
    def load(cls, query_db: Path) -> SqlCache:
        return cls(cache_path(query_db), stamp())

    @property
    def rows(self) -> dict[str, list[Any]]:
        """The stored rows by `stored_key`, read from the file on first use."""
        if self._rows is None:
            self._rows = self._read()
        return self._rows

    def read(self) -> None:
        """Read the file now, if it was not read yet."""
        self.rows  # noqa: B018 (the property reads it)

    def _read(self) -> dict[str, list[Any]]:
        try:
            raw = self._raw if self._raw is not None else self.path.read_bytes()
            self._raw = None  # (parsed now: the bytes are not kept)
            data = orjson.loads(raw)
        except FileNotFoundError:
            return {}  # nothing to replace
        except (OSError, orjson.JSONDecodeError):
            data = None
        if (
            isinstance(data, dict)
            and data.get("format") == FORMAT
            and data.get("stamp") == self.stamp
            and isinstance(data.get("entries"), dict)
        ):
            entries: dict[str, list[Any]] = data["entries"]
            return entries  # rows are checked when decoded (`get`): most are never asked for
        self.rewrite = True
        return {}

    def get(self, key: Key, /) -> sql.SqlInfo | None:
        """The analysis of (text, database_type), or None (`tracetool.sql.Analyses`)."""
        info = self._decoded.get(key)
        if info is None:
            stored = stored_key(*key)
            row = self._search(stored) if self._searchable() else self.rows.get(stored)
            if row is None or not _valid(row):
                return None
            info = self._decoded[key] = _decode(row)
        return info

    def _searchable(self) -> bool:
        """Whether `get` looks the next statement up in the file's bytes (`_search`) rather than
        in `rows`: before the file is parsed, for the first SEARCHED_LOOKUPS statements, and
        when the file is as `save` writes it (else it is parsed, and judged, whole)."""
        if self._rows is not None or self._searched >= SEARCHED_LOOKUPS:
            return False
        if self._raw is None:
            try:
                self._raw = self.path.read_bytes()
            except OSError:
                self._rows = self._read()  # (missing or unreadable: as a parse finds it)
                return False
        raw = self._raw
        if not (raw.startswith(self._head()) and raw.endswith(b"}}")):
            self._rows = self._read()
            return False
        self._searched += 1
        return True

    def _head(self) -> bytes:
        """How the file `save` writes starts, up to its first entry."""
        return b'{"format":%d,"stamp":%s,"entries":{' % (FORMAT, orjson.dumps(self.stamp))

    def _search(self, stored: str) -> Any:
        """The row stored under `stored`, found in the file's bytes without parsing the rest.

        `save` writes the file with orjson, compact: the entry is `"<key>":[...]`, the key
        escaped as orjson escapes a string. That text is found nowhere else: in JSON a quote
        inside a string is escaped, so a quote, the key, a quote and a colon can only be an
        object's key, and only the entries are keyed so. The row ends at the first `]` after
        which its text parses (one inside a string or an inner list leaves it unfinished)."""
        raw = self._raw
        assert raw is not None
        needle = orjson.dumps(stored) + b":["
        at = raw.find(needle, len(self._head()) - 1)
        if at < 0:
            return None
        start = at + len(needle) - 1
        end = start
        while (end := raw.find(b"]", end + 1)) >= 0:
            try:
                return orjson.loads(raw[start : end + 1])
            except orjson.JSONDecodeError:
                continue
        return None

    @contextmanager
    def seeded(self) -> Iterator[None]:
        with sql.seeded(self):
            yield

    def add(self, entries: dict[str, list[Any]]) -> None:
        """Keep `encoded` analyses (made in a worker: what it sends is their stored form)."""
        if not entries:  # (most recordings of a re-index: the file need not be parsed)
            return
        rows = self.rows
        for stored, row in entries.items():
            if stored not in rows:
                rows[stored] = row
                self.new += 1

    def save(self) -> None:
        """Write the file when something was added or the file on disk is unusable (best
        effort: it is a cache)."""
        if self._rows is None or (not self.new and not self.rewrite):
            return  # (never read: nothing was added, and the file is as it was)
        rows = self._rows
        if len(rows) > MAX_ENTRIES:
            rows = dict(list(rows.items())[-MAX_ENTRIES:])
        payload = {"format": FORMAT, "stamp": self.stamp, "entries": rows}
        try:
            atomic_write_bytes(self.path, orjson.dumps(payload), fsync=False)
        except (OSError, TypeError):  # TypeError: orjson refuses a text (lone surrogate)
            pass
        self.new = 0
        self.rewrite = False
