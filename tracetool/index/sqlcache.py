"""The SQL analyses of earlier index runs, kept beside query.db (`<query.db>-sql.json`).

Analyzing a SQL statement (`tracetool.sql.analyze`: sqlglot's tokenizer, ~0.2 ms each, and
importing sqlglot, ~0.1 s per process) is a fair share of indexing, and a re-index mostly meets
statements it analyzed before. `SqlCache.load` reads them back; `seeded()` makes
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

FORMAT = 2  # 2: entries keyed by `text_key`, never by the statement's text
MAX_ENTRIES = 50_000

Key = tuple[str, Optional[str]]
# (text_key(text), database_type): how an entry is stored and found
StoredKey = tuple[str, Optional[str]]


def text_key(text: str) -> str:
    """The digest that stands for a statement's text in the file (module doc: data safety)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()


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


def _encode(key: StoredKey, info: sql.SqlInfo) -> list[Any]:
    # The parameterized text is usually the normalized one: stored once then.
    same = info.parameterized == info.normalized
    return [
        key[0],
        key[1],
        info.normalized,
        info.reliable,
        info.operation,
        list(info.tables),
        list(info.operations),
        None if same else info.parameterized,
    ]


def encoded(analyses: dict[Key, sql.SqlInfo]) -> dict[StoredKey, list[Any]]:
    """`analyses` as the file stores them (`SqlCache.add`): no statement text, plain lists."""
    out: dict[StoredKey, list[Any]] = {}
    for (text, database_type), info in analyses.items():
        stored = (text_key(text), database_type)
        out[stored] = _encode(stored, info)
    return out


def _decode(row: list[Any]) -> sql.SqlInfo:
    _, _, normalized, reliable, operation, tables, operations, parameterized = row
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
        and len(row) == 8
        and isinstance(row[0], str)
        and (row[1] is None or isinstance(row[1], str))
        and isinstance(row[2], str)
        and isinstance(row[3], bool)
        and isinstance(row[4], str)
        and isinstance(row[5], list)
        and isinstance(row[6], list)
        and (row[7] is None or isinstance(row[7], str))
    )


class SqlCache:
    """The analyses of one query.db's earlier runs (module doc). Rows stay as read until a
    statement is met (`get`): a re-index of one file decodes only that file's statements."""

    def __init__(self, path: Path, rows: dict[StoredKey, list[Any]], stamp: str) -> None:
        self.path = path
        self.rows = rows
        self.stamp = stamp
        self.new = 0
        self.rewrite = False  # the file on disk is unusable: replaced by the next save
        self._decoded: dict[Key, sql.SqlInfo] = {}

    @classmethod
    def load(cls, query_db: Path) -> SqlCache:
        path = cache_path(query_db)
        current = stamp()
        rows: dict[StoredKey, list[Any]] = {}
        usable = False
        try:
            data = orjson.loads(path.read_bytes())
            if (
                isinstance(data, dict)
                and data.get("format") == FORMAT
                and data.get("stamp") == current
                and isinstance(data.get("entries"), list)
            ):
                # Rows are checked when decoded (`get`): most are never asked for.
                rows = {(row[0], row[1]): row for row in data["entries"]}
                usable = True
        except FileNotFoundError:
            usable = True  # nothing to replace
        except (OSError, orjson.JSONDecodeError, TypeError, IndexError, KeyError):
            rows = {}
        cache = cls(path, rows, current)
        cache.rewrite = not usable
        return cache

    def get(self, key: Key, /) -> sql.SqlInfo | None:
        """The analysis of (text, database_type), or None (`tracetool.sql.Analyses`)."""
        info = self._decoded.get(key)
        if info is None:
            row = self.rows.get((text_key(key[0]), key[1]))
            if row is None or not _valid(row):
                return None
            info = self._decoded[key] = _decode(row)
        return info

    @contextmanager
    def seeded(self) -> Iterator[None]:
        with sql.seeded(self):
            yield

    def add(self, entries: dict[StoredKey, list[Any]]) -> None:
        """Keep `encoded` analyses (made in a worker: what it sends is their stored form)."""
        rows = self.rows
        for stored, row in entries.items():
            if stored not in rows:
                rows[stored] = row
                self.new += 1

    def save(self) -> None:
        """Write the file when something was added or the file on disk is unusable (best
        effort: it is a cache)."""
        if not self.new and not self.rewrite:
            return
        rows = list(self.rows.values())[-MAX_ENTRIES:]
        payload = {"format": FORMAT, "stamp": self.stamp, "entries": rows}
        try:
            atomic_write_bytes(self.path, orjson.dumps(payload), fsync=False)
        except (OSError, TypeError):  # TypeError: orjson refuses a text (lone surrogate)
            pass
        self.new = 0
        self.rewrite = False
