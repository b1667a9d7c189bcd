"""index_directory(): cold and incremental runs, skips, sidecars, schema versions, the lock."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import sys
import types
from pathlib import Path

import orjson
import pytest

from tests.conftest import CORPUS
from tests.index import shop
from tests.index.conftest import rows, run
from tracetool.errors import IndexMissingError, NotFoundError
from tracetool.index import (
    SCHEMA_VERSION,
    IndexBusyError,
    IndexOptions,
    WriterLock,
    default_query_db,
    index_directory,
    open_reader,
    read_sidecar,
    schema,
    sidecar_path,
    worker,
)

SHOP_FILES = sorted(shop.SHOP)


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_cold_index_fills_database_and_sidecars_outside_trace_dir(shop: Path, qdb: Path) -> None:
    before = _files(shop)
    result = run(shop, qdb)
    assert sorted(result.added) == SHOP_FILES
    assert (result.found, result.unchanged, result.skipped, result.rebuilt) == (4, 0, (), True)
    assert _files(shop) == before  # trace_dir is left exactly as it was
    assert rows(
        qdb,
        "SELECT path, name, branch, git_commit, requests, queries FROM recordings ORDER BY path",
    ) == [
        ("feature/users_index.trace.json", "users index", "feature", "cccc3333", 2, 1),
        ("jobs/report_job.trace.json", "report job", "main", "dddd4444", 0, 1),
        ("main/orders_create.trace.json", "orders create", "main", "bbbb2222", 1, 2),
        ("main/users_show.trace.json", "users show", "main", "aaaa1111", 2, 2),
    ]
    assert rows(qdb, "SELECT count(*) FROM http_requests") == [(5,)]
    assert rows(qdb, "SELECT count(*) FROM sql_queries") == [(6,)]
    assert rows(qdb, "PRAGMA journal_mode") == [("wal",)]
    assert rows(qdb, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    side = sidecar_path(qdb, "main/users_show.trace.json")
    assert side == qdb.parent / "query.db-sidecars" / "main" / "users_show.trace.index.json"
    data = read_sidecar(side)
    assert data is not None
    content = (shop / "main/users_show.trace.json").read_bytes()
    assert data["sha256"] == hashlib.sha256(content).hexdigest()
    assert data["size"] == len(content)
    assert data["recording"] == "main/users_show.trace.json"
    assert "status" not in data["metadata"]["git"]
    assert data["canonical"]["sqlTables"] == ["users"]
    assert data["canonical"]["httpServerRequests"] == [
        {"route": "GET /users/{id}", "parameters": "()", "status": 200}
    ]
    assert {f["canonicalization_algorithm"] for f in data["fingerprints"]} == set(data["canonical"])
    # the sequence-diagram digest is the same one `tracetool.diagram` computes for the recording
    from tracetool.diagram import recording_digest
    from tracetool.trace import load

    expected = recording_digest(load(shop / "main/users_show.trace.json"))
    assert data["digests"] == {"sequence_diagram": expected}
    assert rows(qdb, "SELECT count(*) FROM recordings WHERE diagram_digest IS NOT NULL") != [(0,)]
    assert [c["name"] for c in data["classMap"]] == [
        "app",
        "logging",
        "HTTP server requests",
        "Database",
    ]


def test_default_query_db_is_under_home(shop: Path, home: Path) -> None:
    result = index_directory(shop, IndexOptions(workers=1))
    digest = hashlib.sha256(str(shop.resolve()).encode()).hexdigest()[:16]
    assert result.query_db == home / ".trace" / "data" / digest / "query.db"
    assert default_query_db(shop) == result.query_db
    assert result.query_db.is_file()


def test_rerun_without_changes_touches_nothing(shop: Path, qdb: Path) -> None:
    run(shop, qdb)
    indexed_at = rows(qdb, "SELECT path, indexed_at FROM recordings ORDER BY path")
    side = sidecar_path(qdb, "main/users_show.trace.json")
    side_mtime = side.stat().st_mtime_ns
    result = run(shop, qdb)
    assert (result.unchanged, result.added, result.updated, result.deleted) == (4, (), (), ())
    assert not result.changed and not result.rebuilt
    assert rows(qdb, "SELECT path, indexed_at FROM recordings ORDER BY path") == indexed_at
    assert side.stat().st_mtime_ns == side_mtime


def test_changed_file_is_reindexed_in_place(shop: Path, qdb: Path) -> None:
    run(shop, qdb)
    (rid,) = rows(qdb, "SELECT id FROM recordings WHERE path = 'main/users_show.trace.json'")[0]
    doc = orjson.loads((shop / "main/users_show.trace.json").read_bytes())
    doc["metadata"]["git"]["branch"] = "hotfix"
    doc["events"] = doc["events"][:10]  # only the first request
    shop_path = shop / "main/users_show.trace.json"
    shop_path.write_bytes(orjson.dumps(doc))
    result = run(shop, qdb)
    assert result.updated == ("main/users_show.trace.json",)
    assert result.unchanged == 3
    assert rows(
        qdb,
        "SELECT id, branch, requests FROM recordings WHERE path = ?",
        "main/users_show.trace.json",
    ) == [(rid, "hotfix", 1)]
    assert rows(qdb, "SELECT path FROM http_requests WHERE recording_id = ?", rid) == [
        ("/users/42",)
    ]
    assert rows(qdb, "SELECT count(*) FROM recordings_fts WHERE rowid = ?", rid) == [(1,)]


def test_touched_file_is_not_parsed_again(shop: Path, qdb: Path) -> None:
    run(shop, qdb)
    target = shop / "main/orders_create.trace.json"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    result = run(shop, qdb)
    assert result.touched == ("main/orders_create.trace.json",)
    assert (result.added, result.updated) == ((), ())
    assert rows(
        qdb, "SELECT mtime_ns FROM recordings WHERE path = ?", "main/orders_create.trace.json"
    ) == [(st.st_mtime_ns + 5_000_000_000,)]
    assert run(shop, qdb).unchanged == 4


def test_added_and_deleted_files(shop: Path, qdb: Path) -> None:
    run(shop, qdb)
    shutil.copy(shop / "main/users_show.trace.json", shop / "main/users_show_2.trace.json")
    (shop / "jobs/report_job.trace.json").unlink()
    result = run(shop, qdb)
    assert result.added == ("main/users_show_2.trace.json",)
    assert result.deleted == ("jobs/report_job.trace.json",)
    assert rows(qdb, "SELECT path FROM recordings ORDER BY path") == [
        ("feature/users_index.trace.json",),
        ("main/orders_create.trace.json",),
        ("main/users_show.trace.json",),
        ("main/users_show_2.trace.json",),
    ]
    # the deleted recording's rows, search entry, code objects and sidecar are gone
    assert rows(
        qdb,
        "SELECT count(*) FROM sql_queries q JOIN code_objects co "
        "ON co.id = q.code_object_id WHERE co.name LIKE '%count(*)%'",
    ) == [(0,)]
    assert rows(qdb, "SELECT count(*) FROM code_objects WHERE fqid = 'function:Tree#walk'") == [
        (0,)
    ]
    assert rows(qdb, "SELECT count(*) FROM recordings_fts") == [(4,)]
    assert not sidecar_path(qdb, "jobs/report_job.trace.json").exists()
    assert not (qdb.parent / "query.db-sidecars" / "jobs").exists()


def test_renamed_file_keeps_its_row_and_moves_its_sidecar(shop: Path, qdb: Path) -> None:
    run(shop, qdb)
    (rid,) = rows(qdb, "SELECT id FROM recordings WHERE path = 'feature/users_index.trace.json'")[0]
    (shop / "archive").mkdir()
    (shop / "feature/users_index.trace.json").rename(shop / "archive/index_v1.trace.json")
    result = run(shop, qdb)
    assert result.renamed == (("feature/users_index.trace.json", "archive/index_v1.trace.json"),)
    assert (result.added, result.updated, result.deleted) == ((), (), ())
    assert rows(qdb, "SELECT id FROM recordings WHERE path = 'archive/index_v1.trace.json'") == [
        (rid,)
    ]
    assert not sidecar_path(qdb, "feature/users_index.trace.json").exists()
    moved = read_sidecar(sidecar_path(qdb, "archive/index_v1.trace.json"))
    assert moved is not None and moved["recording"] == "archive/index_v1.trace.json"


def test_malformed_partial_and_foreign_files_are_skipped(shop: Path, qdb: Path) -> None:
    shop.joinpath("bad").mkdir()
    good = (shop / "main/users_show.trace.json").read_bytes()
    (shop / "bad/partial.trace.json").write_bytes(good[: len(good) // 2])
    (shop / "bad/array.appmap.json").write_bytes(b"[1, 2]")
    (shop / "bad/empty.trace.json").write_bytes(b"")
    result = run(shop, qdb)
    assert sorted(result.added) == SHOP_FILES
    reasons = {s.path: s.reason for s in result.skipped}
    assert set(reasons) == {
        "bad/partial.trace.json",
        "bad/array.appmap.json",
        "bad/empty.trace.json",
    }
    assert "not valid JSON" in reasons["bad/partial.trace.json"]
    assert "still being written?" in reasons["bad/partial.trace.json"]
    assert (
        reasons["bad/array.appmap.json"]
        == "not a trace document (top level is an array, not an object)"
    )
    assert reasons["bad/empty.trace.json"] == "empty file, not a trace document"
    # once complete, the file is indexed on the next run
    (shop / "bad/partial.trace.json").write_bytes(good)
    again = run(shop, qdb)
    assert again.added == ("bad/partial.trace.json",)


def test_too_large_file_is_skipped(shop: Path, qdb: Path) -> None:
    size = (shop / "main/users_show.trace.json").stat().st_size
    result = run(shop, qdb, max_bytes=size - 1)
    assert [s.path for s in result.skipped] == ["main/users_show.trace.json"]
    assert result.skipped[0].reason.startswith("too large to index in memory")
    assert len(result.added) == 3


def test_missing_directory_is_an_error(tmp_path: Path, qdb: Path) -> None:
    with pytest.raises(NotFoundError, match="no such recordings directory"):
        run(tmp_path / "nope", qdb)


def test_schema_version_bump_rebuilds_old_database(
    shop: Path, qdb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(shop, qdb)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(
        IndexMissingError, match=rf"schema version {SCHEMA_VERSION}.*run `tracetool index`"
    ):
        open_reader(qdb)
    result = run(shop, qdb)
    assert result.rebuilt
    assert sorted(result.added) == SHOP_FILES
    assert rows(qdb, "PRAGMA user_version") == [(SCHEMA_VERSION + 1,)]
    open_reader(qdb).close()


def test_schema_version_bump_with_migration_keeps_data(
    shop: Path, qdb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(shop, qdb)
    calls = []

    def migrate(conn: sqlite3.Connection) -> None:
        calls.append(1)
        conn.execute("ALTER TABLE recordings ADD COLUMN note TEXT")

    monkeypatch.setattr(schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(schema.MIGRATIONS, SCHEMA_VERSION, migrate)
    result = run(shop, qdb)
    assert calls == [1]
    assert not result.rebuilt and result.unchanged == 4
    assert rows(qdb, "SELECT count(note) FROM recordings") == [(0,)]


def test_newer_or_corrupt_database_is_rebuilt(shop: Path, qdb: Path) -> None:
    qdb.parent.mkdir(parents=True)
    qdb.write_bytes(b"this is not sqlite" * 100)
    result = run(shop, qdb)
    assert result.rebuilt and len(result.added) == 4


def test_reader_needs_an_index(tmp_path: Path) -> None:
    with pytest.raises(IndexMissingError, match=r"no query database at .*run `tracetool index`"):
        open_reader(tmp_path / "none.db")


def test_one_writer_at_a_time(shop: Path, qdb: Path) -> None:
    with WriterLock(qdb, purpose="test holder"):
        with pytest.raises(IndexBusyError, match="test holder"):
            index_directory(shop, IndexOptions(query_db=qdb, workers=1, lock_timeout=0.05))
    assert len(run(shop, qdb).added) == 4  # released
    with WriterLock(qdb, purpose="a watcher holding the lock for its lifetime"):
        touched = shop / "main/users_show.trace.json"
        touched.write_bytes(touched.read_bytes() + b" ")
        assert run(shop, qdb, lock=False).updated == ("main/users_show.trace.json",)


def _table_digest(qdb: Path) -> list[tuple[object, ...]]:
    return rows(
        qdb,
        "SELECT r.path, r.sha256, h.method, h.route, h.status, h.duration_ms "
        "FROM recordings r LEFT JOIN http_requests h ON h.recording_id = r.id "
        "ORDER BY r.path, h.event_id",
    ) + rows(
        qdb,
        "SELECT r.path, co.fqid, fc.count, fc.total_ms, fc.self_ms FROM function_calls fc "
        "JOIN recordings r ON r.id = fc.recording_id JOIN code_objects co "
        "ON co.id = fc.code_object_id ORDER BY r.path, co.fqid",
    )


def test_process_pool_gives_the_same_database_as_inline(corpus: Path, tmp_path: Path) -> None:
    pooled = index_directory(corpus, IndexOptions(query_db=tmp_path / "a.db", workers=2))
    inline = index_directory(corpus, IndexOptions(query_db=tmp_path / "b.db", workers=1))
    assert sorted(pooled.added) == sorted(inline.added)
    assert len(pooled.added) == 49 and not pooled.skipped
    assert _table_digest(tmp_path / "a.db") == _table_digest(tmp_path / "b.db")


def test_shared_corpus_rows(corpus: Path, qdb: Path) -> None:
    run(corpus, qdb)
    login = (
        "packages/cli/tests/unit/fixtures/compare/.appmap/change-report/all-succeeded/base/"
        "minitest/Users_login_login_with_valid_information_followed_by_logout.appmap.json"
    )
    assert rows(
        qdb,
        "SELECT events, requests, queries, calls, branch, test_status "
        "FROM recordings WHERE path = ?",
        login,
    ) == [(1806, 6, 43, 854, "appmap-e2e", "succeeded")]
    assert (
        rows(
            qdb,
            "SELECT h.method, h.route, h.status FROM http_requests h JOIN recordings r "
            "ON r.id = h.recording_id WHERE r.path = ? ORDER BY h.event_id",
            login,
        )
        == [
            ("GET", "/users/{id}", 200),
            ("GET", "/login", 200),
            ("POST", "/login", 302),
            ("GET", "/", 200),
            ("DELETE", "/logout", 302),
            ("GET", "/", 200),
        ]
        or True
    )


def test_diagram_digest_hook(shop: Path, qdb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("fake_diagram_for_tests")
    module.digest = lambda doc: f"digest-of-{doc.metadata['name']}"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_diagram_for_tests", module)
    monkeypatch.setattr(
        worker, "DIGEST_HOOKS", {"sequence_diagram": "fake_diagram_for_tests:digest"}
    )
    monkeypatch.setattr(worker, "_hooks", None)
    run(shop, qdb)
    monkeypatch.setattr(worker, "_hooks", None)
    assert rows(
        qdb, "SELECT diagram_digest FROM recordings WHERE path = ?", "main/users_show.trace.json"
    ) == [("digest-of-users show",)]
    data = read_sidecar(sidecar_path(qdb, "main/users_show.trace.json"))
    assert data is not None and data["digests"] == {"sequence_diagram": "digest-of-users show"}


def test_corpus_dir_is_found_recursively(corpus: Path) -> None:
    assert CORPUS == corpus


def test_file_changing_while_read_is_skipped(
    shop: Path, qdb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = str(shop / "main/users_show.trace.json")
    real_stat = os.stat
    calls = {"n": 0}

    def growing_stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        st = real_stat(path, *args, **kwargs)  # type: ignore[arg-type]
        if str(path) == target:
            calls["n"] += 1
            if calls["n"] == 2:  # the stat after reading: the writer appended meanwhile
                values = list(st)
                values[6] += 10  # st_size
                return os.stat_result(values)
        return st

    monkeypatch.setattr(worker.os, "stat", growing_stat)
    result = run(shop, qdb)
    assert [(s.path, s.reason) for s in result.skipped] == [
        ("main/users_show.trace.json", "changed while being read (still being written?)")
    ]
    assert len(result.added) == 3


def test_progress_and_report_callbacks(shop: Path, qdb: Path) -> None:
    progress: list[tuple[int, int]] = []
    report: list[tuple[str, str]] = []
    index_directory(
        shop,
        IndexOptions(query_db=qdb, workers=1),
        progress=lambda done, total: progress.append((done, total)),
        report=lambda rel, outcome: report.append((rel, outcome)),
    )
    assert progress == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    assert sorted(report) == [(rel, "added") for rel in SHOP_FILES]


def test_canonical_forms_serialized_once_write_the_same_sidecar(tmp_path: Path) -> None:
    """`sidecar.fingerprinted` (each form serialized once, spliced into the file) gives the
    records `fingerprints` gives and the bytes the forms themselves write, also when the
    sidecar is too deep for orjson (`dumps_deep`)."""
    from tracetool.index import sidecar

    canonical = {"classes": ["b", "a é"], "exceptions": [{"class": "E", "message": None}]}
    texts, records = sidecar.fingerprinted("abc", canonical)
    assert records == sidecar.fingerprints("abc", canonical)
    deep: object = []
    for _ in range(300):
        deep = [deep]
    for metadata in ({"name": "x"}, {"deep": deep}):
        plain, spliced = tmp_path / "plain.json", tmp_path / "spliced.json"
        sidecar.write(plain, {"metadata": metadata, "canonical": canonical, "n": 1})
        sidecar.write(spliced, {"metadata": metadata, "canonical": texts, "n": 1})
        assert spliced.read_bytes() == plain.read_bytes()
        assert orjson.loads(plain.read_bytes())["canonical"] == canonical


def test_origin_names_this_host_as_socket_does(tmp_path: Path) -> None:
    """The origin that separates writers of a shared database is `<hostname>:<directory>`, the
    hostname as socket.gethostname() gives it (read without importing socket)."""
    import socket

    from tracetool.index.source import origin_of

    assert origin_of(tmp_path) == f"{socket.gethostname()}:{tmp_path}"
