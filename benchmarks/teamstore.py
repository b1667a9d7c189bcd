"""The team store (issue 17.4): PostgreSQL beside SQLite on the same generated recordings.

1. cold index: `index_directory` of `--count` recordings (default 1,000; `--total-mb` in all)
   into an empty SQLite file and into an empty PostgreSQL database (wall seconds, one process,
   `--workers` parse workers each);
2. query latency: `endpoints`, `find appmaps`, `find requests`, `hotspots functions` and
   `hotspots queries` on each (median of `--repeat` warm calls, in-process, one connection).
   `--query-count` (default: the same corpus) indexes a bigger corpus for this part only (the
   issue asks for 10,000 recordings; that takes a while on a shared 2-core machine).

PostgreSQL: `--url postgresql://…` (a database you may drop tables in), else a throwaway server
started like the tests' (`tests/realparts/postgres.py`: Debian's initdb/postgres, 127.0.0.1).

Run: `.venv/bin/python benchmarks/teamstore.py [--count 1000] [--total-mb 100] [--url URL]`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _find_shared() -> Path:
    for base in (ROOT, *ROOT.parents):
        if (base.parent / "shared" / "tools").is_dir():
            return base.parent / "shared"
    return ROOT.parent / "shared"


def _corpus(out: Path, count: int, total_mb: float) -> Path:
    tool = _find_shared() / "tools" / "make_corpus.py"
    subprocess.run(
        [sys.executable, str(tool), "--out", str(out), "--count", str(count),
         "--total-mb", str(total_mb), "--subdirs", "4"],
        check=True,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return out


def _median_ms(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _index(trace: Path, location: Path, workers: int) -> float:
    from tracetool.index import IndexOptions, index_directory

    start = time.perf_counter()
    result = index_directory(trace, IndexOptions(query_db=location, workers=workers))
    assert not result.skipped, result.skipped[:3]
    return time.perf_counter() - start


def _queries(trace: Path, location: Path, repeat: int) -> dict[str, float]:
    from tracetool.query import Filters, endpoints, find, hotspots, open_db

    db = open_db(trace, location)
    try:
        return {
            "query endpoints": _median_ms(lambda: endpoints(db), repeat),
            "find appmaps": _median_ms(lambda: find(db, "appmaps", Filters()), repeat),
            "find requests": _median_ms(lambda: find(db, "requests", Filters()), repeat),
            "hotspots functions": _median_ms(lambda: hotspots(db, "functions"), repeat),
            "hotspots queries": _median_ms(lambda: hotspots(db, "queries"), repeat),
        }
    finally:
        db.close()


def _fresh_database(url: str | None, server: Any, name: str) -> str:
    if url is None:
        return str(server.create_database(name))
    from tracetool import store

    conn = store.connect(url)
    try:
        for table in reversed(store._tables()):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    finally:
        conn.close()
    return url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--total-mb", type=float, default=100.0)
    parser.add_argument("--query-count", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--url", help="PostgreSQL database to use (its tables are dropped)")
    args = parser.parse_args()

    from tracetool import store

    server = None
    if args.url is None:
        from tests.realparts.postgres import start_server

        server = start_server()
    work = Path(tempfile.mkdtemp(prefix="tracetool-teamstore-"))
    try:
        trace = _corpus(work / "trace", args.count, args.total_mb)
        lite = work / "query.db"
        pg = store.bind(work / "pg" / "query.db", _fresh_database(args.url, server, "bench"))
        rows = [("cold index", _index(trace, lite, args.workers), _index(trace, pg, args.workers))]
        qtrace, qlite, qpg = trace, lite, pg
        if args.query_count and args.query_count != args.count:
            scale = args.total_mb * args.query_count / args.count
            qtrace = _corpus(work / "big", args.query_count, scale)
            qlite = work / "big.db"
            qpg = store.bind(work / "pgbig" / "query.db", _fresh_database(args.url, server, "big"))
            _index(qtrace, qlite, args.workers)
            _index(qtrace, qpg, args.workers)
        on_lite = _queries(qtrace, qlite, args.repeat)
        on_pg = _queries(qtrace, qpg, args.repeat)
        n = args.query_count or args.count
        print(f"team store: {args.count} recordings (~{args.total_mb:g} MB) indexed cold; "
              f"queries on {n} recordings (median of {args.repeat}, warm, in-process)")  # fmt: skip
        print(f"{'':<22}{'SQLite':>12}{'PostgreSQL':>12}{'PG/SQLite':>11}")
        for name, a, b in rows:
            print(f"{name + ' (s)':<22}{a:>12.2f}{b:>12.2f}{b / a:>10.2f}x")
        for name in on_lite:
            a, b = on_lite[name], on_pg[name]
            print(f"{name + ' (ms)':<22}{a:>12.1f}{b:>12.1f}{b / a:>10.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
