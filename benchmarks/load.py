"""Load benchmark: tracetool.trace.load vs plain orjson.loads of the same bytes (the floor).

Prints MB/s and peak memory (each measurement in its own process, so peaks do not mix) for the
shared corpus and for a generated 50 MB document. Ratios are what matter: machines are noisy.

    python benchmarks/load.py [--mb 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

WORKER = r"""
import json, resource, sys, time
from pathlib import Path
mode, files, repeat = sys.argv[1], [Path(p) for p in sys.argv[2].split("\n")], int(sys.argv[3])
import orjson
from tracetool.trace import load, normalize
blobs = None
best = float("inf")
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in range(repeat):
    t0 = time.perf_counter()
    for f in files:
        if mode == "orjson":
            doc = orjson.loads(f.read_bytes())
        elif mode == "load":
            doc = load(f)
        else:
            doc = load(f); normalize(doc)
        if f is files[-1]:
            status = Path("/proc/self/status").read_text()
            held = int(status.split("VmRSS:")[1].split()[0])
        del doc
    best = min(best, time.perf_counter() - t0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": best, "peak_kb": peak, "base_kb": base, "held_kb": held}))
"""


def measure(mode: str, files: list[Path], repeat: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", WORKER, mode, "\n".join(map(str, files)), str(repeat)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def report(label: str, files: list[Path], repeat: int) -> None:
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    floor = measure("orjson", files, repeat)
    ours = measure("load", files, repeat)
    norm = measure("load+normalize", files, repeat)
    print(f"\n{label}: {len(files)} files, {size_mb:.1f} MB")
    print(
        f"{'':22}{'MB/s':>10}{'peak MB':>10}{'x floor time':>14}{'peak/size':>11}{'held/size':>11}"
    )
    for name, r in (
        ("orjson.loads (floor)", floor),
        ("tracetool load", ours),
        ("load + normalize", norm),
    ):
        mbs = size_mb / r["seconds"]
        peak_mb = (r["peak_kb"] - r["base_kb"]) / 1024
        held_mb = (r["held_kb"] - r["base_kb"]) / 1024
        print(
            f"{name:22}{mbs:10.1f}{peak_mb:10.1f}{r['seconds'] / floor['seconds']:14.2f}"
            f"{peak_mb / size_mb:11.2f}{held_mb / size_mb:11.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    corpus = sorted((SHARED / "corpus" / "appmap-js").rglob("*.appmap.json"))
    if corpus:
        report("shared corpus", corpus, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                str(SHARED / "tools" / "make_corpus.py"),
                "--out",
                tmp,
                "--count",
                "1",
                "--total-mb",
                str(args.mb),
                "--name",
                "big",
            ],
            check=True,
            capture_output=True,
        )
        big = sorted(Path(tmp).rglob("*.json"))
        report(f"generated {args.mb:.0f} MB document", big, args.repeat)
    print(
        "\ntarget: tracetool load within 2x of the orjson floor; memory <= ~5x the file size."
        "\n'held' is what the loaded document keeps (RSS with it in memory); 'peak' also counts the"
        "\nfile's bytes and orjson's transient parse tree, which the floor pays just the same."
    )


if __name__ == "__main__":
    main()
