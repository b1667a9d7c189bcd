"""trim / sanitize throughput and memory vs a plain orjson load + dump of the same bytes (the floor).

Two inputs, generated with ../shared/tools/make_corpus.py: one 50 MB recording, and 1000 small
ones. For each, in separate processes (so peaks do not mix):

- MB/s of bytes → bytes, in CPU time of the worker process (user + system: steadier than wall
  time on a shared machine, and the disk's fsync latency is the same for everyone): the floor is `orjson.dumps(orjson.loads(raw))` with the cyclic GC paused
  (the fastest a full parse and re-serialization can be in Python); ours is `trim_bytes` /
  `sanitize_bytes` (parse, normalize for sanitize, rewrite, serialize). Best of --repeat runs.
- "files" rows: the same through `trim_files` / `sanitize_files` (read, transform, atomic write
  into a temporary output directory), what the CLI does, against a floor that also reads each
  file and writes it atomically (fsync included).
- peak memory, relative to the largest file: peak RSS above the worker's baseline (imports done,
  nothing read), and the peak of traced Python allocations while processing any one file
  (tracemalloc, its own pass; RSS of many small files is mostly allocator slack and caches).

Targets (issue 7): trim >= 1/3 of the floor's speed, sanitize >= 1/5; peak memory <= 5x the
largest file. Machines are noisy; the ratios, measured in one run, are what count.

    python benchmarks/transform.py [--mb 50] [--count 1000] [--small-mb 25] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _find_shared() -> Path:
    """`../shared` beside the project root (or beside an ancestor, from a git worktree)."""
    for base in (ROOT, *ROOT.parents):
        if (base.parent / "shared" / "tools").is_dir():
            return base.parent / "shared"
    return ROOT.parent / "shared"


SHARED = _find_shared()

WORKER = r"""
import gc, json, resource, sys, tempfile, time, tracemalloc
from pathlib import Path
mode, listing, repeat = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
files = [Path(p) for p in listing.read_text().splitlines()]
import orjson
from tracetool.transform.sanitize import sanitize_bytes, sanitize_files, _parameterize
from tracetool.transform.trim import trim_bytes, trim_files
_parameterize("SELECT 1", "postgres")  # sqlglot imported and warm before the baseline

def floor(raw):
    gc.disable()
    try:
        return orjson.dumps(orjson.loads(raw))
    finally:
        gc.enable()

step = {"floor": floor, "trim": trim_bytes, "sanitize": sanitize_bytes}.get(mode)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
best = float("inf")
def floor_files(paths, output_dir):
    from tracetool.trace import atomic_write_bytes
    for path in paths:
        atomic_write_bytes(Path(output_dir) / path.name, floor(path.read_bytes()))
    return []

if mode.endswith("-files"):
    run = {"trim-files": trim_files, "sanitize-files": sanitize_files}.get(mode, floor_files)
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            t0 = time.process_time()
            reports = run(files, output_dir=out)
            best = min(best, time.process_time() - t0)
        assert all(r.status != "error" for r in reports)
    traced = 0.0
else:
    blobs = [f.read_bytes() for f in files] if len(files) > 1 else None
    for _ in range(repeat):
        t0 = time.process_time()
        for i, f in enumerate(files):
            # one big file is read inside the timing (every mode pays it alike); many small
            # ones are read beforehand, so 1000 file opens do not drown the comparison
            raw = blobs[i] if blobs is not None else f.read_bytes()
            step(raw)
            del raw
        best = min(best, time.process_time() - t0)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # peak traced allocations while processing one file (reading its bytes included)
    del blobs
    tracemalloc.start()
    traced = 0.0
    for f in files:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        raw = f.read_bytes()
        step(raw)
        del raw
        traced = max(traced, tracemalloc.get_traced_memory()[1] - before)
    tracemalloc.stop()
if mode.endswith("-files"):
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": best, "peak_kb": peak_rss, "base_kb": base, "traced": traced}))
"""

MODES = ("floor", "trim", "sanitize", "floor-files", "trim-files", "sanitize-files")
TARGETS = {"trim": 1 / 3, "sanitize": 1 / 5, "trim-files": 1 / 3, "sanitize-files": 1 / 5}


def measure(mode: str, listing: Path, repeat: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", WORKER, mode, str(listing), str(repeat)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if out.returncode:
        raise SystemExit(f"{mode} worker failed:\n{out.stderr}")
    result: dict[str, float] = json.loads(out.stdout)
    return result


def report(label: str, files: list[Path], repeat: int, tmp: Path) -> None:
    listing = tmp / f"{label.split()[0]}.txt"
    listing.write_text("\n".join(map(str, files)))
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    largest_mb = max(f.stat().st_size for f in files) / 1e6
    results = {mode: measure(mode, listing, repeat) for mode in MODES}
    floors = {"": results["floor"]["seconds"], "-files": results["floor-files"]["seconds"]}
    print(f"\n{label}: {len(files)} files, {size_mb:.1f} MB, largest {largest_mb:.2f} MB")
    print(
        f"{'':28}{'MB/s':>8}{'x floor speed':>15}{'target':>8}"
        f"{'peak RSS MB':>13}{'RSS/largest':>13}{'traced/lgst':>13}"
    )
    for mode in MODES:
        r = results[mode]
        name = {
            "floor": "orjson load+dump (floor)",
            "floor-files": "floor-files (+read, write)",
        }.get(mode, mode)
        speed = floors["-files" if mode.endswith("-files") else ""] / r["seconds"]
        target = f">={TARGETS[mode]:.2f}" if mode in TARGETS else ""
        rss_mb = max(0.0, (r["peak_kb"] - r["base_kb"]) / 1024)
        traced = f"{r['traced'] / 1e6 / largest_mb:.2f}x" if r["traced"] else "-"
        print(
            f"{name:28}{size_mb / r['seconds']:8.1f}{speed:15.2f}{target:>8}"
            f"{rss_mb:13.1f}{rss_mb / largest_mb:12.2f}x{traced:>13}"
        )


def generate(out: Path, *args: str) -> list[Path]:
    subprocess.run(
        [sys.executable, str(SHARED / "tools" / "make_corpus.py"), "--out", str(out), *args],
        check=True,
        capture_output=True,
    )
    return sorted(out.rglob("*.json"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=50, help="size of the big recording")
    parser.add_argument("--count", type=int, default=1000, help="number of small recordings")
    parser.add_argument("--small-mb", type=float, default=25, help="total size of the small ones")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        big = generate(tmp / "big", "--count", "1", "--total-mb", str(args.mb), "--name", "big")
        report(f"big ({args.mb:.0f} MB recording)", big, args.repeat, tmp)
        small = generate(
            tmp / "small", "--count", str(args.count), "--total-mb", str(args.small_mb)
        )
        report(f"small ({args.count} recordings)", small, args.repeat, tmp)
    print(
        "\nx floor speed = floor time / our time (1.00 = as fast as parsing and re-serializing)."
        "\nRSS/largest = peak RSS above the worker's baseline / largest file; traced/lgst = peak"
        "\nPython allocations while processing any one file (its bytes included) / largest file."
        "\nTargets: trim >= 0.33, sanitize >= 0.20 of the floor's speed; memory <= 5x."
    )


if __name__ == "__main__":
    main()
