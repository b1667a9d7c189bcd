"""The SQL analyses of earlier index runs, kept beside query.db (`<query.db>-sql.json`).

Analyzing a SQL statement (`tracetool.sql.analyze`: sqlglot's tokenizer, ~0.2 ms each, and
importing sqlglot, ~0.1 s per process) is a fair share of indexing, and a re-index mostly meets
statements it analyzed before. `SqlCache.load` reads them back; `seeded()` makes
`tracetool.sql.analyze` return them without tokenizing (in worker processes forked inside it
too); the workers report what they analyzed anew (`tracetool.index.worker.Indexed.sql`), `add`
takes it and `save` writes the file when something was new.

Correctness first: an entry is keyed by the exact statement text and `database_type`, and the
whole file by `stamp()` — tracetool's version and the size and mtime of the analysis code
(tracetool/sql.py, tracetool/_sql_analysis.py) and of sqlglot (its `__init__.py` and
`_version.py`). A file of another stamp, version or shape is ignored (and rewritten by the next
run that analyzes something). Texts over the analysis cache's own limit are not kept, and the
file keeps at most `MAX_ENTRIES` (the most recently added win), so it cannot grow without bound.
Like the sidecars it is a cache: written with rename, no fsync, rebuilt when lost.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import orjson

from tracetool import __version__, sql
from tracetool.trace.atomic import atomic_write_bytes

FORMAT = 1
MAX_ENTRIES = 50_000

Key = tuple[str, Optional[str]]


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
    parts.append(_file_stamp(os.path.join(os.path.dirname(sql.__file__), "_sql_analysis.py")))
    try:
        spec = importlib.util.find_spec("sqlglot")
    except (ImportError, ValueError):
        spec = None
    origin = spec.origin if spec is not None else None
    parts.append(_file_stamp(origin))
    if origin:
        parts.append(_file_stamp(os.path.join(os.path.dirname(origin), "_version.py")))
    return "|".join(parts)


def _encode(key: Key, info: sql.SqlInfo) -> list[Any]:
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


def _decode(row: Any) -> tuple[Key, sql.SqlInfo]:
    text, dbtype, normalized, reliable, operation, tables, operations, parameterized = row
    info = sql.SqlInfo(
        normalized,
        reliable,
        operation,
        tuple(tables),
        tuple(operations),
        normalized if parameterized is None else parameterized,
    )
    return (text, dbtype), info


class SqlCache:
    """The analyses of one query.db's earlier runs (module doc)."""

    def __init__(self, path: Path, entries: dict[Key, sql.SqlInfo], stamp: str) -> None:
        self.path = path
        self.entries = entries
        self.stamp = stamp
        self.new = 0
        self.rewrite = False  # the file on disk is unusable: replaced by the next save

    @classmethod
    def load(cls, query_db: Path) -> SqlCache:
        path = cache_path(query_db)
        current = stamp()
        entries: dict[Key, sql.SqlInfo] = {}
        usable = False
        try:
            data = orjson.loads(path.read_bytes())
            if (
                isinstance(data, dict)
                and data.get("format") == FORMAT
                and data.get("stamp") == current
            ):
                entries = dict(_decode(row) for row in data["entries"])
                usable = True
        except FileNotFoundError:
            usable = True  # nothing to replace
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            entries = {}
        cache = cls(path, entries, current)
        cache.rewrite = not usable
        return cache

    @contextmanager
    def seeded(self) -> Iterator[None]:
        with sql.seeded(self.entries):
            yield

    def add(self, analyses: dict[Key, sql.SqlInfo]) -> None:
        for key, info in analyses.items():
            if key not in self.entries:
                self.entries[key] = info
                self.new += 1

    def save(self) -> None:
        """Write the file when something was added (best effort: it is a cache)."""
        if not self.new and not self.rewrite:
            return
        rows = [_encode(key, info) for key, info in self.entries.items()]
        payload = {"format": FORMAT, "stamp": self.stamp, "entries": rows[-MAX_ENTRIES:]}
        try:
            atomic_write_bytes(self.path, orjson.dumps(payload), fsync=False)
        except (OSError, TypeError):  # TypeError: orjson refuses a text (lone surrogate)
            pass
        self.new = 0
        self.rewrite = False
