"""openapi, stats and inspect benchmark: tracetool vs AppMap's CLI on the same generated files.

Runs, side by side and interleaved (ours, peer, ours, peer... so both see the same machine load):
* `openapi` over a ~300 MB corpus of 1000 recordings (make_corpus.py seed 1);
* `stats` (directory mode) over the same corpus, without our index (every recording is read) and
  with it (`stats, idx`: the per-recording sums `tracetool index` keeps, index built once, not
  timed);
* `stats -a` on one 60 MB recording (seed 2);
* `inspect` of a function found in most recordings, without an index (every recording that can
  match is read) and with our index (`tracetool index`, built once, not timed), and of a rarer
  function with the index. The peer's `inspect` always reads its own index (`appmap index`,
  built once in a hard-linked mirror of the corpus, not timed).
Each figure is the median wall and CPU time (user+sys of the whole process tree) of `--repeat`
runs and the highest peak resident memory of the process tree (sampled from /proc every 10 ms;
our workers are children). The peer is `/tmp/peer/node_modules/.bin/appmap` (see
../shared/README.md to install it); without it only our side is printed.

    python benchmarks/openapi_stats.py [--repeat 3] [--corpus DIR] [--big FILE] [--only stats]

Inputs: `--corpus` and `--big` default to the shared pre-generated /tmp/bench/seed1 and
/tmp/bench/seed2/big.appmap.json when they exist, else they are generated with
../shared/tools/make_corpus.py (`*.appmap.json`, which both tools read).
Target (issue 18): >= 10x faster in wall and CPU time at <= 1/2 the peak memory, every row.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bytecode import compile_checkout
from diagram import tree_rss_kb  # one process-tree RSS sampler for the benchmarks
from quiet import settle

ROOT = Path(__file__).resolve().parents[1]
SHARED = next(
    (
        b.parent / "shared"
        for b in (ROOT, *ROOT.parents)
        if (b.parent / "shared" / "tools").is_dir()
    ),
    ROOT.parent / "shared",
)
PEER = Path("/tmp/peer/node_modules/.bin/appmap")
SPEED_TARGET = 10.0
MEMORY_TARGET = 0.5
COMMON = "function:app/models/User.find"  # in 959 of the 1000 seed-1 recordings
RARE = "function:app/models/User#destroy"  # in 89 of them


def make_corpus(out: Path, count: int, total_mb: float, seed: int, name: str | None = None) -> None:
    if out.is_dir() and any(out.rglob("*.appmap.json")):
        return
    cmd = [sys.executable, str(SHARED / "tools" / "make_corpus.py"), "--out", str(out)]
    cmd += ["--count", str(count), "--total-mb", str(total_mb), "--ext", ".appmap.json"]
    cmd += ["--seed", str(seed)]
    if name:
        cmd += ["--name", name]
    print(f"generating {out} ({count} recordings, {total_mb:.0f} MB) ...", file=sys.stderr)
    subprocess.run(cmd, check=True, capture_output=True)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall s, peak tree RSS MB, CPU s of the tree) of one run; output discarded."""
    peak = [0]
    cpu_before = _children_cpu()
    settle()  # (untimed: benchmarks/quiet.py)
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir()
    )

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss_kb(proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-500:]}")
    return wall, peak[0] / 1024, _children_cpu() - cpu_before


def summary(runs: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Median wall time, highest peak memory, median CPU time."""
    return (
        statistics.median(r[0] for r in runs),
        max(r[1] for r in runs),
        statistics.median(r[2] for r in runs),
    )


def ours(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracetool", *args]


def peer_index(corpus: Path, mirror: Path, env: dict[str, str]) -> Path:
    """A hard-linked mirror of `corpus` indexed by `appmap index` (its inspect reads the index
    folders it writes beside each recording; the shared corpus stays untouched)."""
    if not (mirror / ".indexed").exists():
        if mirror.exists():
            shutil.rmtree(mirror)
        subprocess.run(["cp", "-al", str(corpus), str(mirror)], check=True)
        print(f"indexing {mirror} with appmap index (not timed) ...", file=sys.stderr)
        cmd = [str(PEER), "index", "--appmap-dir", str(mirror)]
        subprocess.run(cmd, check=True, env=env, capture_output=True, cwd=tempfile.gettempdir())
        (mirror / ".indexed").write_text("")
    return mirror


def our_index(corpus: Path, db: Path, env: dict[str, str]) -> Path:
    """Index (not timed); a database already there is brought up to date (rebuilt when of an
    older schema), which costs little when it is."""
    print(f"indexing {corpus} into {db} (not timed) ...", file=sys.stderr)
    cmd = ours("index", "--trace-dir", str(corpus), "--query-db", str(db))
    subprocess.run(cmd, check=True, env=env, capture_output=True, cwd=tempfile.gettempdir())
    return db


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--big", type=Path, default=None, help="one ~60 MB recording")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench-stats")
    parser.add_argument("--only", action="append", help="rows whose label starts with this")
    args = parser.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    corpus = args.corpus or Path("/tmp/bench/seed1")
    if args.corpus is None and not corpus.is_dir():
        corpus = args.work / "seed1"
        make_corpus(corpus, 1000, 300, seed=1)
    big = args.big or Path("/tmp/bench/seed2/big.appmap.json")
    if args.big is None and not big.is_file():
        make_corpus(args.work / "seed2", 1, 60, seed=2, name="big")
        big = next((args.work / "seed2").rglob("*.appmap.json"))

    have_peer = PEER.exists()
    compile_checkout()  # our side runs from bytecode, as an installed package does
    # our side runs with its own HOME: no index or settings of the user's leak in
    home = args.work / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "APPMAP_TELEMETRY_DISABLED": "true", "NO_COLOR": "1"}
    our_env = {**env, "HOME": str(home)}
    out = Path(tempfile.mkdtemp(prefix="bench-openapi-", dir=args.work))
    no_db = str(args.work / "no-index.db")  # never created: inspect reads every candidate

    cases: dict[str, tuple[list[str], list[str]]] = {
        "openapi": (
            ours("openapi", "--trace-dir", str(corpus), "-o", str(out / "ours.yml")),
            [str(PEER), "openapi", "--appmap-dir", str(corpus), "-o", str(out / "p.yml")],
        ),
        "stats": (
            ours("stats", str(corpus), "-f", "json", "--query-db", no_db),
            [str(PEER), "stats", str(corpus), "-f", "json"],
        ),
        "stats -a (60 MB)": (
            ours("stats", "-a", str(big), "-f", "json"),
            [str(PEER), "stats", "-a", str(big), "-f", "json"],
        ),
    }

    def chosen(label: str) -> bool:
        return not args.only or any(label.startswith(o) or o.startswith(label) for o in args.only)

    wanted = [label for label in ("openapi", "stats", "stats -a", "inspect") if chosen(label)]
    if "stats" in wanted:
        db = our_index(corpus, args.work / "query.db", our_env)
        cases["stats, idx"] = (
            ours("stats", str(corpus), "-f", "json", "--query-db", str(db)),
            cases["stats"][1],
        )
    if "inspect" in wanted:
        db = our_index(corpus, args.work / "query.db", our_env)
        mirror = peer_index(corpus, args.work / "peer-corpus", env) if have_peer else corpus
        for label, code_object, index in (
            ("inspect common", COMMON, no_db),
            ("inspect common, idx", COMMON, str(db)),
            ("inspect rare, idx", RARE, str(db)),
        ):
            cases[label] = (
                ours("inspect", code_object, "--trace-dir", str(corpus), "--query-db", index),
                [str(PEER), "inspect", code_object, "--appmap-dir", str(mirror)],
            )
    cases = {
        k: v for k, v in cases.items() if not args.only or any(k.startswith(o) for o in args.only)
    }

    size_mb = sum(p.stat().st_size for p in corpus.rglob("*.appmap.json")) / 1e6
    print(
        f"corpus: {corpus} ({size_mb:.0f} MB); one recording: {big} ({big.stat().st_size / 1e6:.0f} MB)"
    )
    print(f"median of {args.repeat} interleaved runs; cpu = user+sys seconds of the process tree;")
    print("mem = peak RSS of the process tree; x = peer / ours (wall, cpu), mem = ours / peer")
    print(f"inspect: {COMMON} (common), {RARE} (rare); idx = with our index (built, not timed)\n")
    header = f"{'command':21}{'tracetool':>24}{'appmap':>26}{'wall':>8}{'cpu':>7}{'mem':>7}  target"
    print(header)
    print("-" * len(header))
    for label, (mine, theirs) in cases.items():
        our_runs, peer_runs = [], []
        for _ in range(args.repeat):
            our_runs.append(run(mine, our_env))
            if have_peer:
                peer_runs.append(run(theirs, env))
        t, m, c = summary(our_runs)
        ours_text = f"{t:6.2f} s {c:5.1f} cpu {m:4.0f} MB"
        if not peer_runs:
            print(f"{label:21}{ours_text:>24}{'(no peer)':>26}", flush=True)
            continue
        pt, pm, pc = summary(peer_runs)
        peer_text = f"{pt:6.2f} s {pc:6.1f} cpu {pm:5.0f} MB"
        met = pt / t >= SPEED_TARGET and pc / c >= SPEED_TARGET and m / pm <= MEMORY_TARGET
        ratios = f"{pt / t:7.1f}x{pc / c:6.1f}x{m / pm:7.2f}"
        print(
            f"{label:21}{ours_text:>24}{peer_text:>26}{ratios}  {'met' if met else 'NOT met'}",
            flush=True,
        )
    print(
        f"\ntarget: >= {SPEED_TARGET:.0f}x in wall and cpu time, memory <= {MEMORY_TARGET}x the peer's"
    )
    if not have_peer:
        print(f"(peer not installed at {PEER}; see ../shared/README.md)")


if __name__ == "__main__":
    main()
