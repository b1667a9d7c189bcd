"""stats, inspect, query tree, trim and sanitize at scale: MB/s and peak memory as the input
grows (issue 18, "Scale").

Rows (tracetool only; AppMap's CLI cannot read a 1 GB recording at all, and has no call-tree
query):
* `stats -a` on one recording of 60 MB, 200 MB and 1 GB;
* `inspect` (no index) of a function in the folder holding that one recording;
* `query tree` of that one recording: its first 1000 rows (the default), and `--depth 0` with
  no row limit, which reads every event (one row per run of roots); the recording is indexed
  first (not timed), since `query` finds it through the index;
* `trim --max-length 20` and `sanitize` of that one recording into a temporary folder (the
  output is written: a block of events at a time, through a temporary file of the events);
* `stats` over 1000 recordings (300 MB) and 3000 recordings (900 MB).
Each row prints the input size, median wall and CPU time of `--repeat` runs, MB/s of wall and of
CPU time, and the peak resident memory of the process tree (see openapi_stats.py). Streaming
shows as a steady MB/s and a peak memory that does not follow the input size.

    python benchmarks/scale_stats.py [--repeat 1] [--only stats] [--only tree] [--only trim]

Inputs default to the shared pre-generated /tmp/bench/{seed2,mb200,gb1}/big.appmap.json,
/tmp/bench/seed1 and /tmp/bench/seed3k (../shared/tools/make_corpus.py seeds 2, 3, 4, 1, 5); a
missing one is skipped with a note.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bytecode import compile_checkout
from openapi_stats import ours, run, summary

BENCH = Path("/tmp/bench")
FUNCTION = "function:app/models/User#save"  # in the 60 MB, 200 MB and 1 GB recordings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--bench", type=Path, default=BENCH, help="folder of the inputs")
    parser.add_argument("--only", action="append", help="rows whose label starts with this")
    args = parser.parse_args()
    compile_checkout()  # our side runs from bytecode, as an installed package does

    home = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1"}
    no_db = str(home / "no-index.db")  # never created: inspect reads the recording
    rows: list[tuple[str, Path, list[str]]] = []
    for name, folder in (("60 MB", "seed2"), ("200 MB", "mb200"), ("1 GB", "gb1")):
        big = args.bench / folder / "big.appmap.json"
        rows.append((f"stats -a {name}", big, ours("stats", "-a", str(big), "-f", "json")))
    for name, folder in (("60 MB", "seed2"), ("200 MB", "mb200"), ("1 GB", "gb1")):
        big = args.bench / folder / "big.appmap.json"
        cmd = ours("inspect", FUNCTION, "--trace-dir", str(big.parent), "--query-db", no_db)
        rows.append((f"inspect {name}", big, cmd))
    for name, folder in (("60 MB", "seed2"), ("200 MB", "mb200"), ("1 GB", "gb1")):
        big = args.bench / folder / "big.appmap.json"
        db = str(home / f"{folder}.db")
        tree = ours("query", "tree", "big", "--query-db", db, "--json")
        rows.append((f"tree {name}", big, tree))
        rows.append((f"tree -d0 all {name}", big, [*tree, "--depth", "0", "--limit", "1000000000"]))
    for name, folder in (("60 MB", "seed2"), ("200 MB", "mb200"), ("1 GB", "gb1")):
        big = args.bench / folder / "big.appmap.json"
        out = str(home / f"rewritten-{folder}")  # (rewritten each run: nothing is skipped)
        trim = ours("trim", "--max-length", "20", str(big), "-o", out)
        rows.append((f"trim {name}", big, trim))
        rows.append((f"sanitize {name}", big, ours("sanitize", str(big), "-o", out)))
    for name, folder in (("1000", "seed1"), ("3000", "seed3k")):
        corpus = args.bench / folder
        rows.append((f"stats {name} files", corpus, ours("stats", str(corpus), "-f", "json")))

    print(f"median of {args.repeat} run(s); cpu = user+sys of the process tree;")
    print(f"mem = peak RSS of the process tree; inspect: {FUNCTION}\n")
    header = f"{'command':22}{'input':>9}{'wall':>9}{'cpu':>8}{'MB/s wall':>11}{'MB/s cpu':>10}{'peak':>9}"
    print(header)
    print("-" * len(header))
    try:
        for label, source, cmd in rows:
            if args.only and not any(label.startswith(o) for o in args.only):
                continue
            if not source.exists():
                print(f"{label:22}  (missing {source})")
                continue
            if label.startswith("tree"):
                _index_once(source, cmd[cmd.index("--query-db") + 1], env)
            files = [source] if source.is_file() else list(source.rglob("*.appmap.json"))
            size = sum(p.stat().st_size for p in files) / 1e6
            t, m, c = summary([run(cmd, env) for _ in range(args.repeat)])
            print(
                f"{label:22}{size:6.0f} MB{t:7.1f} s{c:6.1f} s{size / t:11.0f}{size / c:10.0f}"
                f"{m:6.0f} MB",
                flush=True,
            )
    finally:
        shutil.rmtree(home, ignore_errors=True)  # (the indexes of the big recordings)


def _index_once(recording: Path, db: str, env: dict[str, str]) -> None:
    """Index the folder of `recording` into `db` unless done (not timed)."""
    if Path(db).exists():
        return
    print(f"indexing {recording.parent} (not timed) ...", file=sys.stderr, flush=True)
    cmd = ours("index", "--trace-dir", str(recording.parent), "--query-db", db)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
