"""The SQL analyses kept beside query.db, and code-object upkeep limited to what a run touched.

A re-index seeded with an earlier run's analyses (`tracetool.index.sqlcache`) must write exactly
what a run that tokenizes every statement writes, without tokenizing; a file from other analysis
code is ignored. Pruning and counting only the code objects a run touched must leave the same
`code_objects` and `query_tables` as a cold index of the same files.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import corpus_recordings
from tests.index.conftest import rows, run
from tests.index.test_streamed import _dump, _sidecars
from tracetool import sql
from tracetool.diagram import digests
from tracetool.index import sqlcache


def _clear_caches() -> None:
    sql.analyze.cache_clear()  # type: ignore[attr-defined]
    digests._canonical.cache_clear()
    digests.sql_digest.cache_clear()


def _corpus(tmp_path: Path) -> Path:
    recordings = corpus_recordings()
    if not recordings:
        pytest.skip("shared corpus not found")
    trace = tmp_path / "trace"
    trace.mkdir()
    for i, path in enumerate(recordings):
        shutil.copyfile(path, trace / f"{i:02d}_{path.name.split('.')[0]}.trace.json")
    return trace


def test_seeded_reindex_writes_the_same_without_tokenizing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = _corpus(tmp_path)
    first_db, second_db = tmp_path / "a" / "query.db", tmp_path / "b" / "query.db"
    _clear_caches()
    first = run(trace, first_db)
    saved = orjson.loads(sqlcache.cache_path(first_db).read_bytes())
    assert saved["stamp"] == sqlcache.stamp() and len(saved["entries"]) > 50

    second_db.parent.mkdir()
    shutil.copyfile(sqlcache.cache_path(first_db), sqlcache.cache_path(second_db))
    _clear_caches()
    tokenized: list[str] = []
    analyze = sql._analyze

    def counted(text: str, database_type: str | None) -> sql.SqlInfo:
        tokenized.append(text)
        return analyze(text, database_type)

    monkeypatch.setattr(sql, "_analyze", counted)
    second = run(trace, second_db)
    _clear_caches()
    assert [t for t in tokenized if len(t) <= sql._CACHE_MAX_CHARS] == []
    assert second.skipped == first.skipped
    assert sorted(second.added) == sorted(first.added)
    assert _sidecars(second_db, second) == _sidecars(first_db, first)
    assert _dump(second_db) == _dump(first_db)


QUERIES = "SELECT fqid FROM code_objects WHERE type = 'query' ORDER BY fqid"


def _reindexed_with(shop: Path, qdb: Path, spoil: Callable[[dict[str, Any]], None]) -> Path:
    """Index, spoil the saved analyses' file, index again from scratch: the query code objects
    must be the first run's (the spoiled analyses were not used); the file's path."""
    _clear_caches()  # analyses cached by earlier tests of this process are not "new": no file
    run(shop, qdb)
    path = sqlcache.cache_path(qdb)
    data = orjson.loads(path.read_bytes())
    spoil(data)
    path.write_bytes(orjson.dumps(data))
    expected = rows(qdb, QUERIES)

    qdb.unlink()
    _clear_caches()
    run(shop, qdb)
    _clear_caches()
    assert rows(qdb, QUERIES) == expected
    return path


def test_a_cache_of_other_analysis_code_is_ignored(shop: Path, qdb: Path) -> None:
    def other_code(data: dict[str, Any]) -> None:
        # Every statement analyzed as something else, under another stamp.
        for entry in data["entries"].values():
            entry[0] = "SELECT wrong"
        data["stamp"] = "another"

    path = _reindexed_with(shop, qdb, other_code)
    assert orjson.loads(path.read_bytes())["stamp"] == sqlcache.stamp()


def test_malformed_rows_are_analyzed_again(shop: Path, qdb: Path) -> None:
    def malformed(data: dict[str, Any]) -> None:
        for entry in data["entries"].values():
            entry[0], entry[1] = ["SELECT wrong"], "yes"  # not a text, not a bool

    _reindexed_with(shop, qdb, malformed)


def test_unreadable_cache_is_ignored(shop: Path, qdb: Path) -> None:
    qdb.parent.mkdir()
    sqlcache.cache_path(qdb).write_bytes(b"{not json")
    _clear_caches()
    result = run(shop, qdb)
    assert result.skipped == () and len(result.added) == 4
    saved = orjson.loads(sqlcache.cache_path(qdb).read_bytes())
    assert saved["format"] == sqlcache.FORMAT and saved["entries"]


def test_an_unusable_cache_is_replaced_even_with_nothing_new(shop: Path, qdb: Path) -> None:
    run(shop, qdb)
    path = sqlcache.cache_path(qdb)
    path.write_bytes(b"[]")
    cache = sqlcache.SqlCache.load(qdb)
    cache.save()  # never read: nothing to replace yet
    assert path.read_bytes() == b"[]"
    assert cache.get(("SELECT 1", None)) is None  # reads the file: unusable
    cache.save()  # nothing added
    assert orjson.loads(path.read_bytes()) == {
        "format": sqlcache.FORMAT,
        "stamp": sqlcache.stamp(),
        "entries": {},
    }


def test_a_reindex_that_finds_nothing_changed_does_not_read_the_cache(
    shop: Path, qdb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing changed: the file is not opened. A changed recording looks its statements up
    in it: in its bytes (`_search`, the first few dozen) or parsed whole (`_read`). (The
    process's own analyses are forgotten first: those it holds are not saved again, and the
    file would then lack them, whatever tests ran before in this process.)"""
    sql.analyze.cache_clear()  # type: ignore[attr-defined]
    run(shop, qdb)
    reads: list[str] = []
    for name in ("_read", "_search"):
        original = getattr(sqlcache.SqlCache, name)

        def counted(self: sqlcache.SqlCache, *args: Any, _f: Any = original, _n: str = name) -> Any:
            reads.append(_n)
            return _f(self, *args)

        monkeypatch.setattr(sqlcache.SqlCache, name, counted)
    result = run(shop, qdb)
    assert (result.added, result.updated, reads) == ((), (), [])
    _changed(shop)
    sql.analyze.cache_clear()  # type: ignore[attr-defined]
    result = run(shop, qdb)
    assert len(result.updated) == 1 and reads and set(reads) <= {"_read", "_search"}


_CODE_OBJECTS = "SELECT fqid, type, recordings FROM code_objects ORDER BY fqid"
_QUERY_TABLES = (
    "SELECT q.name, c.fqid FROM query_tables q JOIN code_objects c ON c.id = q.code_object_id "
    "ORDER BY 1, 2"
)


def _changed(shop: Path) -> None:
    files = sorted(shop.rglob("*.json"))
    files[0].unlink()
    files[1].write_bytes(files[1].read_bytes() + b"\n")


def test_touched_code_objects_as_after_a_cold_index(shop: Path, tmp_path: Path) -> None:
    qdb, cold = tmp_path / "db" / "query.db", tmp_path / "cold" / "query.db"
    run(shop, qdb)
    _changed(shop)
    result = run(shop, qdb)
    assert len(result.deleted) == 1 and len(result.updated) == 1
    run(shop, cold)
    assert rows(qdb, _CODE_OBJECTS) == rows(cold, _CODE_OBJECTS)
    assert rows(qdb, _QUERY_TABLES) == rows(cold, _QUERY_TABLES)
    assert rows(qdb, "SELECT key FROM meta WHERE key = 'code_objects_pending'") == []


def test_after_an_interrupted_run_every_code_object_is_looked_at(
    shop: Path, tmp_path: Path
) -> None:
    qdb, cold = tmp_path / "db" / "query.db", tmp_path / "cold" / "query.db"
    run(shop, qdb)
    # What a run stopped before its upkeep leaves: the mark, and counts nobody refreshed.
    import sqlite3

    conn = sqlite3.connect(qdb)
    with conn:
        conn.execute("UPDATE code_objects SET recordings = 0")
        conn.execute("INSERT INTO meta (key, value) VALUES ('code_objects_pending', '1')")
    conn.close()
    _changed(shop)
    run(shop, qdb)
    run(shop, cold)
    assert rows(qdb, _CODE_OBJECTS) == rows(cold, _CODE_OBJECTS)
    assert rows(qdb, "SELECT key FROM meta WHERE key = 'code_objects_pending'") == []


SECRET = "s3cr3t-Token-42"


def _with_secret_sql(trace: Path) -> None:
    """Give one SQL call of the shop a literal secret (as an ORM without bind parameters would)."""
    for path in sorted(trace.rglob("*.trace.json")):
        doc = orjson.loads(path.read_bytes())
        for event in doc.get("events", []):
            if isinstance(event.get("sql_query"), dict):
                event["sql_query"]["sql"] = f"SELECT id FROM users WHERE api_key = '{SECRET}'"
                path.write_bytes(orjson.dumps(doc))
                return
    raise AssertionError("the shop has no SQL call")


def test_the_file_never_holds_a_statement_text(shop: Path, qdb: Path) -> None:
    _with_secret_sql(shop)
    _clear_caches()
    run(shop, qdb)
    saved = sqlcache.cache_path(qdb).read_bytes()
    assert saved and SECRET.encode() not in saved
    assert b"api_key = ?" in saved  # the normalized text, literals masked, as query.db has it
    for key in orjson.loads(saved)["entries"]:
        digest = key.split(":", 1)[0]  # (":database_type" after it when there is one)
        assert len(digest) == 40 and int(digest, 16) >= 0  # a digest, never the text
    assert SECRET.encode() not in qdb.read_bytes()

    # ... and it still serves the statement: a fresh index seeded with it tokenizes nothing new.
    info = sqlcache.SqlCache.load(qdb).get(
        (f"SELECT id FROM users WHERE api_key = '{SECRET}'", "sqlite")
    )
    assert info is not None and info.normalized == "SELECT id FROM users WHERE api_key = ?"


def test_a_file_of_the_first_format_with_texts_is_replaced(shop: Path, qdb: Path) -> None:
    qdb.parent.mkdir()
    path = sqlcache.cache_path(qdb)
    old = [f"SELECT '{SECRET}'", None, "SELECT ?", True, "select", [], ["select"], None]
    path.write_bytes(orjson.dumps({"format": 1, "stamp": sqlcache.stamp(), "entries": [old]}))
    _clear_caches()
    run(shop, qdb)
    saved = path.read_bytes()
    assert orjson.loads(saved)["format"] == sqlcache.FORMAT and SECRET.encode() not in saved
