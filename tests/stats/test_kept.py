"""Directory-mode stats from the sums the index kept (`tracetool.stats._kept`): the same output
with and without an index, and only for recordings the index holds as they are now."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from tests.conftest import DocBuilder, make_corpus
from tracetool.cli import cli
from tracetool.index.indexer import IndexOptions, index_directory
from tracetool.stats import directory_stats
from tracetool.stats._kept import kept_sums
from tracetool.trace.reader import find_trace_files

TAMPERED = [["function:tampered", 1, 1000.0, 0]]


def _index(trace_dir: Path, db: Path) -> None:
    index_directory(trace_dir, IndexOptions(query_db=db, workers=1))


def _tamper(db: Path, relpath: str | None = None) -> None:
    """Make the kept sums (of one recording, or all) say something no recording says."""
    conn = sqlite3.connect(db)
    where, args = "", ()
    if relpath is not None:
        where = " WHERE recording_id = (SELECT id FROM recordings WHERE path = ?)"
        args = (relpath,)
    conn.execute(f"UPDATE overhead SET sums = ?{where}", (orjson.dumps(TAMPERED).decode(), *args))
    conn.commit()
    conn.close()


def _cli(directory: Path, db: Path | None, *extra: str) -> tuple[str, str]:
    argv = ["stats", str(directory), *extra]
    if db is not None:
        argv += ["--query-db", str(db)]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def _outputs(directory: Path, db: Path | None) -> list[tuple[str, str]]:
    return [_cli(directory, db), _cli(directory, db, "-f", "json"), _cli(directory, db, "-l", "3")]


def _files(directory: Path) -> list[tuple[Path, int, int]]:
    out = []
    for path in find_trace_files(directory, []):
        st = path.stat()
        out.append((path, st.st_size, st.st_mtime_ns))
    return out


def _sums(directory: Path) -> dict[str, tuple[int, float]]:
    stats = directory_stats(directory, limit=None, query_db=directory / "no-index.db")
    return {f.name: (f.count, f.time) for f in stats.functions}


def test_same_output_with_and_without_the_index_on_the_shared_corpus(
    corpus: Path, tmp_path: Path
) -> None:
    directory = tmp_path / "corpus"
    shutil.copytree(corpus, directory)
    without = _outputs(directory, tmp_path / "none.db")
    db = tmp_path / "query.db"
    _index(directory, db)
    files = _files(directory)
    kept = kept_sums(directory, files, db)
    assert len(kept) == len(files)  # every recording's sums came from the index
    assert _outputs(directory, db) == without
    assert "tampered" not in without[1][0]
    _tamper(db)  # and they are used: what the index says is what stats shows
    assert "function:tampered" in _cli(directory, db, "-f", "json")[0]


def test_same_output_on_generated_recordings_and_a_malformed_one(tmp_path: Path) -> None:
    directory = tmp_path / "gen"
    make_corpus(directory, 12, 3, 7)
    (directory / "broken.trace.json").write_bytes(b'{"events": [{"event": "call", "id": 1')
    (directory / "empty.appmap.json").write_bytes(b"")
    without = _outputs(directory, tmp_path / "none.db")
    assert without[0][1].count("warning: skipped") == 2
    db = tmp_path / "query.db"
    _index(directory, db)
    assert len(kept_sums(directory, _files(directory), db)) == 12
    assert _outputs(directory, db) == without


def _doc(seconds: float, name: str = "total") -> dict[str, object]:
    b = DocBuilder()
    b.ret(b.function("Cart", name, "app/cart.py", 3), elapsed_instrumentation=seconds)
    sql = b.call(sql_query={"sql": "SELECT * FROM carts WHERE id = 7", "database_type": "sqlite"})
    b.ret(sql, elapsed_instrumentation=seconds)
    return b.doc()


def _recordings(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(3):
        (directory / f"r{i}.trace.json").write_bytes(orjson.dumps(_doc(0.25)))


def test_a_recording_changed_after_indexing_is_read_again(tmp_path: Path) -> None:
    directory = tmp_path / "t"
    _recordings(directory)
    db = tmp_path / "query.db"
    _index(directory, db)
    same_size = directory / "r0.trace.json"
    old = same_size.stat()
    same_size.write_bytes(orjson.dumps(_doc(0.75)))  # same length, other figures
    assert same_size.stat().st_size == old.st_size
    os.utime(same_size, ns=(old.st_atime_ns, old.st_mtime_ns + 10**9))
    bigger = directory / "r1.trace.json"
    old = bigger.stat()
    bigger.write_bytes(orjson.dumps(_doc(1.5)))
    os.utime(bigger, ns=(old.st_atime_ns, old.st_mtime_ns))  # same mtime, other size
    assert bigger.stat().st_size != old.st_size
    _tamper(db, "r0.trace.json")
    _tamper(db, "r1.trace.json")
    indexed = directory_stats(directory, query_db=db)
    assert {f.name: (f.count, f.time) for f in indexed.functions} == _sums(directory)
    assert indexed.total_instrumentation == pytest.approx(2 * (0.75 + 1.5 + 0.25))


def test_a_deleted_recording_is_not_counted(tmp_path: Path) -> None:
    directory = tmp_path / "t"
    _recordings(directory)
    db = tmp_path / "query.db"
    _index(directory, db)
    (directory / "r2.trace.json").unlink()
    indexed = directory_stats(directory, query_db=db)
    assert indexed.recordings == 2
    assert indexed.total_instrumentation == pytest.approx(2 * 0.5)
    assert {f.name: (f.count, f.time) for f in indexed.functions} == _sums(directory)


def test_an_index_of_another_schema_version_is_not_read(tmp_path: Path) -> None:
    directory = tmp_path / "t"
    _recordings(directory)
    db = tmp_path / "query.db"
    _index(directory, db)
    _tamper(db)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    assert _sums(directory) == {
        f.name: (f.count, f.time) for f in directory_stats(directory, query_db=db).functions
    }
    _index(directory, db)  # rebuilt by the next index run: kept sums again
    assert len(kept_sums(directory, _files(directory), db)) == 3


def test_the_index_of_another_directory_is_not_read(tmp_path: Path) -> None:
    directory = tmp_path / "t"
    _recordings(directory)
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)  # same relative paths, sizes and mtimes
    db = tmp_path / "query.db"
    _index(copy, db)
    _tamper(db)
    assert kept_sums(directory, _files(directory), db) == {}
    assert len(kept_sums(copy, _files(copy), db)) == 3
    stats = directory_stats(directory, query_db=db)
    assert {f.name: (f.count, f.time) for f in stats.functions} == _sums(directory)


def test_a_subdirectory_of_the_indexed_one(tmp_path: Path) -> None:
    directory = tmp_path / "t"
    _recordings(directory / "sub")
    (directory / "top.trace.json").write_bytes(orjson.dumps(_doc(0.5)))
    db = tmp_path / "query.db"
    _index(directory, db)
    assert len(kept_sums(directory / "sub", _files(directory / "sub"), db)) == 3
    assert _outputs(directory / "sub", db) == _outputs(directory / "sub", tmp_path / "none.db")


def test_trace_dir_and_the_default_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRACETOOL_QUERY_DB", raising=False)
    directory = tmp_path / "t"
    _recordings(directory)
    without = CliRunner().invoke(cli, ["stats", "--trace-dir", str(directory), "-f", "json"])
    index_directory(directory, IndexOptions(workers=1))  # the default location
    assert len(kept_sums(directory, _files(directory))) == 3
    with_index = CliRunner().invoke(cli, ["stats", "--trace-dir", str(directory), "-f", "json"])
    assert with_index.exit_code == 0 and with_index.stdout == without.stdout
    from tracetool.index.indexer import default_query_db

    _tamper(default_query_db(directory))
    tampered = CliRunner().invoke(cli, ["stats", "--trace-dir", str(directory), "-f", "json"])
    assert "function:tampered" in tampered.stdout


def test_a_recording_stats_would_skip_keeps_no_sums(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index reads what stats skips as malformed the same way (see the generated-recordings
    test); should stats' pass alone fail on a recording, the index keeps no sums for it, so
    stats reads it and warns."""
    from tracetool.errors import TraceToolError
    from tracetool.index import worker
    from tracetool.stats import _collect

    directory = tmp_path / "t"
    _recordings(directory)
    real = _collect.file_overhead

    def failing(path: Path, raw: bytes | None = None) -> list[list[object]]:
        if path.name == "r1.trace.json":
            raise TraceToolError(f"{path}: not what stats reads")
        return real(path, raw)

    monkeypatch.setattr(_collect, "file_overhead", failing)
    # (the sums read from the index's own parse decline, so stats' pass is what runs)
    monkeypatch.setattr(worker, "recording_overhead", lambda events, class_map, raw=None: None)
    monkeypatch.setattr(worker, "event_sums", lambda events: None)
    db = tmp_path / "query.db"
    _index(directory, db)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM recordings").fetchone() == (3,)
    conn.close()
    kept = kept_sums(directory, _files(directory), db)
    assert sorted(p.name for p in kept) == ["r0.trace.json", "r2.trace.json"]


def test_sql_without_overhead_counts_in_the_total_either_way(tmp_path: Path) -> None:
    """SQL whose time is never positive is left unnamed (it cannot rank), yet its time is part
    of the total, with and without the index."""
    directory = tmp_path / "t"
    directory.mkdir()
    (directory / "a.trace.json").write_bytes(orjson.dumps(_doc(-0.125)))
    b = DocBuilder()
    b.ret(b.function("Cart", "pay", "app/cart.py", 9), elapsed_instrumentation=0.5)
    (directory / "b.trace.json").write_bytes(orjson.dumps(b.doc()))
    without = directory_stats(directory, query_db=tmp_path / "none.db")
    db = tmp_path / "query.db"
    _index(directory, db)
    assert len(kept_sums(directory, _files(directory), db)) == 2
    indexed = directory_stats(directory, query_db=db)
    assert indexed == without
    assert without.total_instrumentation == 0.5 - 0.125 - 0.125
    assert [f.name for f in without.functions] == ["function:Cart#pay"]
