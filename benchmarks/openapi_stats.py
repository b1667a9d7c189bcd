"""openapi and stats benchmark: tracetool vs AppMap's CLI on the same generated corpus.

Runs, side by side and alternating (so both see the same machine load):
* `openapi` over a ~300 MB corpus of 1000 recordings;
* `stats` (directory mode) over the same corpus;
* `stats -a` on one 60 MB recording (memory must stay flat).
Each figure is the median wall time of `--repeat` runs and the peak resident memory of the whole
process tree (sampled from /proc every 10 ms; our workers are children). The peer is
`/tmp/peer/node_modules/.bin/appmap` (see ../shared/README.md to install it); without it the
README's reference figures are printed, clearly labelled as not measured here.

    python benchmarks/openapi_stats.py [--repeat 3] [--corpus /tmp/corpus]

Inputs come from ../shared/tools/make_corpus.py with the same seed for both tools: the peer reads
`*.appmap.json`, so its copy is generated with `--ext .appmap.json` (identical content).
Target (issue 9): ≥ 5× faster at ≤ half the peak memory, for both commands.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

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
REFERENCE = {  # ../shared/README.md, "Measured here on a 2-core machine"
    "openapi": (16.0, 400.0),
    "stats": (16.0, 400.0),
}


def make_corpus(out: Path, ext: str, count: int, total_mb: float, name: str | None = None) -> None:
    if out.is_dir() and any(out.rglob(f"*{ext}")):
        return
    cmd = [sys.executable, str(SHARED / "tools" / "make_corpus.py"), "--out", str(out)]
    cmd += ["--count", str(count), "--total-mb", str(total_mb), "--ext", ext]
    if name:
        cmd += ["--name", name]
    print(f"generating {out} ({count} × {ext}, {total_mb:.0f} MB) ...", file=sys.stderr)
    subprocess.run(cmd, check=True, capture_output=True)


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and all its descendants, in kB."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    stack.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall s, peak tree RSS MB, CPU s of the tree) of one run; output discarded."""
    peak = [0]
    cpu_before = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir()
    )

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-500:]}")
    return wall, peak[0] / 1024, _children_cpu() - cpu_before


def _summary(runs: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Median wall time, highest peak memory, median CPU time."""
    return (
        statistics.median(r[0] for r in runs),
        max(r[1] for r in runs),
        statistics.median(r[2] for r in runs),
    )


def ours(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracetool", *args]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/corpus"))
    parser.add_argument("--peer-corpus", type=Path, default=Path("/tmp/corpus-appmap"))
    parser.add_argument("--big", type=Path, default=Path("/tmp/big60"))
    args = parser.parse_args()

    make_corpus(args.corpus, ".trace.json", 1000, 300)
    make_corpus(args.big, ".trace.json", 1, 60, name="big_recording")
    big = next(args.big.rglob("*.trace.json"))
    have_peer = PEER.exists()
    if have_peer:
        make_corpus(args.peer_corpus, ".appmap.json", 1000, 300)
        peer_big_dir = args.big.with_name(args.big.name + "-appmap")
        make_corpus(peer_big_dir, ".appmap.json", 1, 60, name="big_recording")
        peer_big = next(peer_big_dir.rglob("*.appmap.json"))
    env = {**os.environ, "APPMAP_TELEMETRY_DISABLED": "true", "NO_COLOR": "1"}
    out = Path(tempfile.mkdtemp(prefix="bench-openapi-"))

    cases = {
        "openapi": (
            ours("openapi", "--trace-dir", str(args.corpus), "-o", str(out / "ours.yml")),
            [str(PEER), "openapi", "--appmap-dir", str(args.peer_corpus), "-o", str(out / "p.yml")],
        ),
        "stats": (
            ours("stats", str(args.corpus), "-f", "json"),
            [str(PEER), "stats", str(args.peer_corpus), "-f", "json"],
        ),
    }
    if have_peer:
        cases["stats -a (60 MB)"] = (
            ours("stats", "-a", str(big), "-f", "json"),
            [str(PEER), "stats", "-a", str(peer_big), "-f", "json"],
        )
    else:
        cases["stats -a (60 MB)"] = (ours("stats", "-a", str(big), "-f", "json"), [])

    size_mb = sum(p.stat().st_size for p in args.corpus.rglob("*.trace.json")) / 1e6
    print(
        f"corpus: {args.corpus} ({size_mb:.0f} MB); one recording: {big.stat().st_size / 1e6:.0f} MB"
    )
    print(f"median of {args.repeat} runs each, alternating; memory = peak RSS of the process tree;")
    print("cpu = user+sys seconds of the whole tree (steadier than wall time on a busy machine)\n")
    header = f"{'command':18}{'tracetool':>25}{'appmap':>25}{'speed-up':>10}{'cpu':>7}{'memory':>8}"
    print(header)
    print("-" * len(header))
    for label, (mine, theirs) in cases.items():
        our_runs, peer_runs = [], []
        for _ in range(args.repeat):
            our_runs.append(run(mine, env))
            if have_peer and theirs:
                peer_runs.append(run(theirs, env))
        t, m, c = _summary(our_runs)
        ours_text = f"{t:6.2f} s {c:5.1f} cpu {m:4.0f} MB"
        if peer_runs:
            pt, pm, pc = _summary(peer_runs)
            peer_text = f"{pt:6.2f} s {pc:5.1f} cpu {pm:4.0f} MB"
            ratios = f"{pt / t:9.1f}x{pc / c:6.1f}x{m / pm:7.2f}x"
            print(f"{label:18}{ours_text:>25}{peer_text:>25}{ratios}")
        elif label in REFERENCE:
            pt, pm = REFERENCE[label]
            peer_text = f"~{pt:5.0f} s          ~{pm:4.0f} MB"
            ratios = f"{pt / t:9.1f}x{'':>7}{m / pm:7.2f}x"
            print(
                f"{label:18}{ours_text:>25}{peer_text:>25}{ratios}  (README figures, not measured)"
            )
        else:
            print(f"{label:18}{ours_text:>25}{'(no peer)':>25}")
    print("\ntarget: speed-up >= 5x and memory <= 0.5x for openapi and stats")
    if not have_peer:
        print(f"(peer not installed at {PEER}; see ../shared/README.md)")


if __name__ == "__main__":
    main()
