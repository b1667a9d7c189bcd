"""Index scaling: MB/s and peak memory of a cold `tracetool index` per input size.

Issue 18: indexing must run at a steady MB/s with peak memory that does not grow with the input
beyond what the output needs. One cold `tracetool index` per input (fresh query.db; `--repeat`
runs, median), printing input size, files, wall and CPU time, MB/s (input bytes / wall time),
peak RSS of the process tree and files skipped (with the first reason), so growth is visible:

- one recording of 60 MB, 200 MB and 1 GB;
- 1,000 recordings / 300 MB and 3,000 recordings / 900 MB.

Inputs: `--input LABEL=DIR` (repeatable; recordings named `*.trace.json` or `*.appmap.json`,
hard-linked into a scratch folder as `*.trace.json`, never written). Without `--input`, the
shared pre-generated set under `--bench-dir` (default /tmp/bench: seed2/, mb200/, gb1/, seed1/,
seed3k/) is used when present, else the inputs are generated with ../shared/tools/make_corpus.py
(`--generate-max-mb` caps what is generated; default 300, so 1 GB and 900 MB are opt-in).
`appmap index` is not run here: it skips recordings over 50 MB (see benchmarks/index.py for the
side-by-side comparison).

    python benchmarks/scale_index.py [--input LABEL=DIR ...] [--repeat 1] [--generate-max-mb 300]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from index import SHARED, measure, mirror, tracetool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bytecode import compile_checkout

# (label, folder under --bench-dir, what make_corpus.py makes of it: count, MB, seed)
DEFAULT_INPUTS = (
    ("1 recording, 60 MB", "seed2", 1, 60, 2),
    ("1 recording, 200 MB", "mb200", 1, 200, 3),
    ("1 recording, 1 GB", "gb1", 1, 1000, 4),
    ("1000 recordings, 300 MB", "seed1", 1000, 300, 1),
    ("3000 recordings, 900 MB", "seed3k", 3000, 900, 5),
)


def _generate(out: Path, count: int, total_mb: float, seed: int) -> None:
    import subprocess

    argv = [sys.executable, str(SHARED / "tools" / "make_corpus.py"), "--out", str(out)]
    argv += ["--count", str(count), "--total-mb", str(total_mb), "--seed", str(seed)]
    subprocess.run(argv, check=True, capture_output=True)


def inputs(args: argparse.Namespace, work: Path) -> list[tuple[str, Path]]:
    if args.input:
        out = []
        for spec in args.input:
            label, _, folder = spec.partition("=")
            out.append((label, Path(folder)))
        return out
    found = []
    for label, name, count, mb, seed in DEFAULT_INPUTS:
        folder = args.bench_dir / name
        if folder.is_dir():
            found.append((label, folder))
        elif mb <= args.generate_max_mb:
            print(f"generating {label} ...", flush=True)
            _generate(work / "gen" / name, count, mb, seed)
            found.append((label, work / "gen" / name))
        else:
            print(f"({label}: not in {args.bench_dir}; --generate-max-mb {mb} makes it)")
    return found


def run_one(label: str, source: Path, work: Path, repeat: int) -> dict[str, Any]:
    folder = work / "in"
    shutil.rmtree(folder, ignore_errors=True)
    files = mirror(source, folder, ".trace.json")
    size = sum(f.stat().st_size for f in files)
    env = {**os.environ, "HOME": str(work / "home"), "TRACETOOL_TRACE_DIR": ""}
    runs = []
    result: dict[str, Any] = {}
    for rep in range(repeat):
        qdb = work / f"q{rep}" / "query.db"
        argv = tracetool("index", "--trace-dir", str(folder), "--query-db", str(qdb), "--json")
        runs.append(measure(argv, env))
        result = json.loads(runs[-1]["stdout"])
        shutil.rmtree(qdb.parent, ignore_errors=True)
    med = {k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "peak_mb")}
    skipped = result.get("skipped") or []
    return {
        "label": label,
        "files": len(files),
        "mb": size / 1e6,
        **med,
        "mb_s": size / 1e6 / med["wall"],
        "skipped": len(skipped),
        "reason": skipped[0].get("reason", "") if skipped else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--input", action="append", help="LABEL=DIR (repeatable)")
    parser.add_argument("--bench-dir", type=Path, default=Path("/tmp/bench"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--generate-max-mb", type=float, default=300)
    args = parser.parse_args()
    compile_checkout()  # our side runs from bytecode, as an installed package does
    work = Path(tempfile.mkdtemp(prefix="tt-scale-bench-"))
    rows = []
    try:
        for label, folder in inputs(args, work):
            print(f"{label} ...", flush=True)
            rows.append(run_one(label, folder, work, args.repeat))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()[0]
    print(
        f"\n== cold `tracetool index` by input size (median of {args.repeat}; "
        f"{os.cpu_count()} CPUs, load average {load:.1f})"
    )
    head = f"{'input':26}{'files':>6}{'MB':>8}{'wall s':>8}{'CPU s':>8}{'MB/s':>7}"
    print(head + f"{'peak RSS MB':>12}{'RSS/input':>10}  skipped")
    for r in rows:
        skipped = f"{r['skipped']}" + (f" ({r['reason']})" if r["reason"] else "")
        print(
            f"{r['label']:26}{r['files']:6d}{r['mb']:8.0f}{r['wall']:8.1f}{r['cpu']:8.1f}"
            f"{r['mb_s']:7.1f}{r['peak_mb']:12.0f}{r['peak_mb'] / r['mb']:10.2f}  {skipped}"
        )


if __name__ == "__main__":
    main()
