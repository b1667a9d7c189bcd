"""The team store (tracetool.store): the same answers from a real PostgreSQL server as from SQLite.

- every query verb over the shop, indexed by two "machines" (two folders, two processes, two
  branches) into one PostgreSQL database, equals a SQLite index of the same files;
- four processes indexing four folders into one database at once lose and duplicate nothing;
- a wrong URL, a refused connection and a missing permission are one line each.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.index.shop import SHOP, write
from tests.query.conftest import NOW
from tracetool import store
from tracetool.index import IndexOptions, index_directory
from tracetool.query import (
    TYPES,
    Filters,
    compare,
    endpoints,
    find,
    function_detail,
    function_exceptions,
    function_recordings,
    functions_in_file,
    hotspots,
    open_db,
    recording,
    related,
    repeated_queries,
    search,
    summary,
    tree,
)

pytestmark = pytest.mark.e2e

MACHINE_1 = ("main/users_show.trace.json", "main/orders_create.trace.json")


def _shop_part(root: Path, names: Any) -> Path:
    for rel in names:
        make, age = SHOP[rel]
        write(root / rel, make(), age, NOW)
    return root


def _index_cli(trace: Path, url: str, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TRACETOOL_QUERY_DB": url}
    return subprocess.Popen(
        [sys.executable, "-m", "tracetool", "index", "--trace-dir", str(trace), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()


def _answers(db: Any) -> dict[str, Any]:
    """Every verb's rows (volatile columns dropped; full-text order is bm25 only on SQLite)."""
    paths = [r[0] for r in db.execute("SELECT path FROM recordings ORDER BY path")]
    fqids = [
        r[0]
        for r in db.execute(
            "SELECT fqid FROM code_objects WHERE type = 'function' AND recordings > 0 ORDER BY fqid"
        )
    ]
    files = sorted(
        {
            r[0].split(":")[0]
            for r in db.execute("SELECT location FROM code_objects WHERE location IS NOT NULL")
        }
    )
    out: dict[str, Any] = {
        "endpoints": endpoints(db),
        "endpoints main": endpoints(db, Filters(branch="main")),
        "compare": compare(db, "main", "feature"),
        "hotspots": hotspots(db, "functions"),
        "hotspots self": hotspots(db, "functions", sort="self"),
        "hotspots queries": hotspots(db, "queries"),
        "search": sorted(r["recording"] for r in search(db, "users orders")),
        "summary": {k: v for k, v in summary(db).items() if "index" not in k and k != "trace_dir"},
        "functions_in_file": functions_in_file(db, files),
        "function_exceptions": function_exceptions(db, fqids),
        "repeated_queries": repeated_queries(db, fqids, 1),
    }
    for t in TYPES:
        out[f"find {t}"] = find(db, t)
    out["find appmaps text"] = sorted(
        (r["recording"] for r in find(db, "appmaps", Filters(text="user"))), key=str
    )
    out["find calls text"] = find(db, "calls", Filters(text="Controller"))
    for path in paths:
        out[f"tree {path}"] = tree(db, path)
        out[f"related {path}"] = related(db, path)
        out[f"recording {path}"] = {
            k: v for k, v in recording(db, path).items() if k not in ("indexed_at", "id", "file")
        }
    for fqid in fqids:
        out[f"detail {fqid}"] = function_detail(db, fqid)
        out[f"recordings {fqid}"] = function_recordings(db, fqid)
    return out


def test_two_machines_answer_every_verb_as_sqlite_does(pg_server: Any, tmp_path: Path) -> None:
    url = pg_server.create_database("team")
    one = _shop_part(tmp_path / "m1" / "trace", MACHINE_1)
    two = _shop_part(tmp_path / "m2" / "trace", [r for r in SHOP if r not in MACHINE_1])
    _wait([_index_cli(one, url), _index_cli(two, url)])
    union = _shop_part(tmp_path / "all" / "trace", SHOP)
    sqlite_db = tmp_path / "query.db"
    index_directory(union, IndexOptions(query_db=sqlite_db, workers=1))

    pg = open_db(union, store.bind(tmp_path / "pg" / "query.db", url))
    lite = open_db(union, sqlite_db)
    try:
        assert isinstance(pg, store.PgConnection)
        expected, actual = _answers(lite), _answers(pg)
        assert list(actual) == list(expected)
        for key in expected:
            assert actual[key] == expected[key], key
        assert expected["compare"] and expected["find requests"]
    finally:
        pg.close()
        lite.close()


@pytest.mark.slow
def test_four_writers_at_once_lose_and_duplicate_nothing(pg_server: Any, tmp_path: Path) -> None:
    url = pg_server.create_database("four")
    folders = [_shop_part(tmp_path / f"ci{i}" / "trace", SHOP) for i in range(4)]
    _wait([_index_cli(f, url, "--source-branch", f"b{i}") for i, f in enumerate(folders)])
    # and again: unchanged files are not added twice
    _wait([_index_cli(f, url, "--source-branch", f"b{i}") for i, f in enumerate(folders)])
    single = tmp_path / "one.db"
    index_directory(folders[0], IndexOptions(query_db=single, workers=1))
    with psycopg.connect(url) as conn:
        count = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        assert count("SELECT count(*) FROM recordings") == 4 * len(SHOP)
        assert count("SELECT count(DISTINCT (origin, path)) FROM recordings") == 4 * len(SHOP)
        assert count("SELECT count(DISTINCT branch) FROM recordings") == 4
        assert count("SELECT count(*) FROM code_objects") == count(
            "SELECT count(DISTINCT fqid) FROM code_objects"
        )
        lite = open_db(folders[0], single)
        try:
            for table in ("http_requests", "sql_queries", "function_calls", "exceptions"):
                one = lite.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                assert count(f"SELECT count(*) FROM {table}") == 4 * one, table
            assert (
                count("SELECT count(*) FROM code_objects")
                == lite.execute("SELECT count(*) FROM code_objects").fetchone()[0]
            )
        finally:
            lite.close()
        for i in range(4):
            assert count(f"SELECT count(*) FROM recordings WHERE branch = 'b{i}'") == len(SHOP)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracetool", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_connection_problems_are_one_line(pg_server: Any, tmp_path: Path) -> None:
    trace = _shop_part(tmp_path / "trace", MACHINE_1)
    refused = (
        f"postgresql://postgres@127.0.0.1:{pg_server.port + 1 if pg_server.port < 65535 else 1}/x"
    )
    for url, why in (
        (refused, "Connection refused"),
        (f"postgresql://nobody@127.0.0.1:{pg_server.port}/postgres", 'role "nobody"'),
        ("postgresql://127.0.0.1/", "names no database"),
    ):
        done = _cli("query", "endpoints", "--trace-dir", str(trace), "--query-db", url)
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tracetool: cannot connect to postgresql://")
        assert why in lines[0], lines[0]

    url = pg_server.create_database("locked")
    assert _cli("index", "--trace-dir", str(trace), "--query-db", url).returncode == 0
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS reader")
        conn.execute("CREATE ROLE reader LOGIN")
        conn.execute("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC")
    reader = url.replace("postgres@", "reader@")
    done = _cli("query", "endpoints", "--trace-dir", str(trace), "--query-db", reader)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "permission denied" in lines[0], done.stderr
    assert "postgresql://reader@" in lines[0]


def test_trace_yml_names_the_store(
    pg_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = pg_server.create_database("yml")
    _shop_part(tmp_path / "trace", MACHINE_1)
    (tmp_path / "trace.yml").write_text(f"name: shop\ntrace_dir: trace\nquery_db: {url}\n")
    monkeypatch.delenv(store.ENV_QUERY_DB, raising=False)
    monkeypatch.chdir(tmp_path)
    assert _cli("index").returncode == 0
    done = _cli("query", "find", "appmaps", "--json")
    assert done.returncode == 0, done.stderr
    assert '"main/users_show.trace.json"' in done.stdout
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM recordings").fetchone()[0] == 2


def test_front_ends_read_the_store(pg_server: Any, tmp_path: Path) -> None:
    """rpc-client (in-process JSON-RPC), the MCP/UI tool layer and a URL given as a tool
    argument answer from PostgreSQL what they answer from SQLite."""
    from tracetool_daemon import query_tools

    url = pg_server.create_database("front")
    trace = _shop_part(tmp_path / "trace", SHOP)
    _wait([_index_cli(trace, url)])
    lite = tmp_path / "query.db"
    index_directory(trace, IndexOptions(query_db=lite, workers=1))
    rpc = [
        _cli("rpc-client", "query.endpoints", "{}", "--trace-dir", str(trace), "--query-db", db)
        for db in (str(lite), url)
    ]
    assert rpc[0].returncode == 0 and rpc[0].stdout == rpc[1].stdout, rpc[1].stderr
    for name, arguments in (("endpoints", {}), ("hotspots", {}), ("find", {"type": "requests"})):
        expected = query_tools.call_tool(name, arguments, query_db=str(lite))
        assert (
            query_tools.call_tool(name, arguments, trace_dir=str(trace), query_db=url) == expected
        )
        assert query_tools.call_tool(name, {**arguments, "query_db": url}) == expected


def test_live_updates_reach_the_store(pg_server: Any, tmp_path: Path) -> None:
    """The daemon's per-file path (`index_paths`, used by `index --watch` and `rpc`)."""
    from tracetool.index import index_paths

    location = store.bind(tmp_path / "pg" / "query.db", pg_server.create_database("live"))
    trace = _shop_part(tmp_path / "trace", MACHINE_1)
    index_directory(trace, IndexOptions(query_db=location, workers=1))
    added = _shop_part(trace, ["jobs/report_job.trace.json"]) / "jobs/report_job.trace.json"
    gone = trace / MACHINE_1[0]
    gone.unlink()
    result = index_paths(trace, [added, gone], IndexOptions(query_db=location, workers=1))
    assert result.added == ("jobs/report_job.trace.json",) and result.deleted == (MACHINE_1[0],)
    db = open_db(trace, location)
    try:
        assert sorted(r["recording"] for r in find(db, "appmaps")) == [
            "jobs/report_job.trace.json",
            MACHINE_1[1],
        ]
    finally:
        db.close()


def test_messages_never_show_the_password() -> None:
    url = "postgresql://ci:s3cret@127.0.0.1:1/team"
    with pytest.raises(store.StoreError) as caught:
        store.connect(url)
    assert str(caught.value).startswith("cannot connect to postgresql://ci@127.0.0.1:1/team: ")
    assert "s3cret" not in str(caught.value)
