"""`SqlCache` looks the first statements up in the file's bytes (`_search`) instead of parsing
it whole: the same analyses as a parse gives, for every key and row shape."""

from __future__ import annotations

from pathlib import Path

import orjson

from tracetool.index import sqlcache
from tracetool.index.sqlcache import SqlCache, stored_key

TYPES = [None, "postgres", 'my"sql', "back\\slash", "ünïcödé", "tab\there", ""]
ROWS = [
    ["SELECT ?", True, "select", ["t"], ["select"], None],
    ['SELECT "a]" FROM x WHERE y = ?', False, "select", ["x", "y]"], ["select"], "SELECT $1"],
    ["UPDATE [t] SET a = ?", True, "update", [], [], 'UPDATE "]],\\"" SET a = $1'],
    ["DELETE FROM t", True, "delete", ["t"], ["delete", "select"], "DELETE FROM t"],
]


def _cache(path: Path, count: int) -> dict[tuple[str, str | None], list[object]]:
    entries = {}
    for i in range(count):
        key = (f'SELECT {i} -- ]"', TYPES[i % len(TYPES)])
        entries[key] = ROWS[i % len(ROWS)]
    cache = SqlCache(path, "stamp|1")
    cache.read()
    cache.add({stored_key(*key): row for key, row in entries.items()})
    cache.save()
    return entries


def test_searched_lookups_are_the_parsed_ones(tmp_path: Path) -> None:
    path = tmp_path / "q.db-sql.json"
    entries = _cache(path, 40)
    searched, parsed = SqlCache(path, "stamp|1"), SqlCache(path, "stamp|1")
    parsed.read()
    for key in [*entries, ("SELECT absent", None), ('SELECT 1 -- ]"', "other")]:
        assert searched.get(key) == parsed.get(key)
    searched.add({})  # (what the worker sends for a recording of known statements)
    assert searched._rows is None  # (every lookup was a search)
    assert searched.get(next(iter(entries))) is not None


def test_the_file_is_parsed_after_enough_lookups(tmp_path: Path) -> None:
    path = tmp_path / "q.db-sql.json"
    entries = _cache(path, sqlcache.SEARCHED_LOOKUPS + 5)
    cache = SqlCache(path, "stamp|1")
    keys = list(entries)
    for key in keys[: sqlcache.SEARCHED_LOOKUPS]:
        assert cache.get(key) is not None
    assert cache._rows is None
    for key in keys[sqlcache.SEARCHED_LOOKUPS :]:
        assert cache.get(key) is not None
    assert cache._rows is not None and len(cache._rows) == len(keys)


def test_a_file_not_written_by_save_is_parsed_and_judged_whole(tmp_path: Path) -> None:
    path = tmp_path / "q.db-sql.json"
    entries = _cache(path, 10)
    data = orjson.loads(path.read_bytes())
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))  # another layout
    cache = SqlCache(path, "stamp|1")
    key = next(iter(entries))
    assert cache.get(key) is not None and cache._rows is not None
    other = SqlCache(path, "another stamp")  # the head names another stamp: parsed, unusable
    assert other.get(key) is None and other.rewrite


def test_a_missing_file_reads_as_empty(tmp_path: Path) -> None:
    cache = SqlCache(tmp_path / "none.json", "stamp|1")
    assert cache.get(("SELECT 1", None)) is None and cache._rows == {} and not cache.rewrite
