"""Diagram and prune benchmark: tracetool vs AppMap's CLI on the same generated recordings.

Measures, each command in its own process (wall time and peak RSS of that process tree):
- `sequence-diagram -f json` of a 60 MB recording,
- `prune -s 15mb` of the same recording,
- `sequence-diagram -f png --no-loops` of a recording whose diagram has ~2000 actions
  (ours draws it with Pillow; AppMap needs a Chromium, which is not measured here).
The peer runs when `/tmp/peer/node_modules/.bin/appmap` exists (see shared/README.md); otherwise
the README's reference figures are printed, clearly labelled. Goals: JSON diagram and prune each
≥ 5× faster than the peer at ≤ half its peak memory; the PNG in ≤ 5 s without a browser.

    python benchmarks/diagram.py [--mb 60] [--png-mb 1.0] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the project (or beside an ancestor, from a git worktree)
SHARED = next(
    (b.parent / "shared" for b in (ROOT, *ROOT.parents) if (b.parent / "shared/tools").is_dir()),
    ROOT.parent / "shared",
)
PEER = Path("/tmp/peer/node_modules/.bin/appmap")
# shared/README.md, measured on a 2-core machine (one 60 MB recording)
REFERENCE = {"diagram": (9.5, 840.0), "prune": (6.8, 540.0)}

# Runs argv as a child and prints its wall time and the peak RSS of the child tree (MB).
RUNNER = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"seconds": wall, "peak_mb": peak, "rc": done.returncode,
                  "out": done.stdout.decode(errors="replace")[-400:],
                  "err": done.stderr.decode(errors="replace")[-400:]}))
"""


def measure(argv: list[str], cwd: Path, repeat: int) -> dict[str, float]:
    best: dict[str, float] | None = None
    env = {**os.environ, "APPMAP_TELEMETRY_DISABLED": "true", "TRACETOOL_NO_BROWSER": "1"}
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", RUNNER, *argv],
            capture_output=True,
            text=True,
            check=True,
            cwd=cwd,
            env=env,
        )
        result = json.loads(out.stdout)
        if result["rc"] != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {result['err'] or result['out']}")
        if best is None or result["seconds"] < best["seconds"]:
            best = result
    assert best is not None
    return best


def generate(out: Path, mb: float, name: str) -> Path:
    subprocess.run(
        [
            sys.executable,
            str(SHARED / "tools" / "make_corpus.py"),
            "--out",
            str(out),
            "--count",
            "1",
            "--total-mb",
            str(mb),
            "--name",
            name,
            "--ext",
            ".appmap.json",
        ],
        check=True,
        capture_output=True,
    )
    return out / f"{name}.appmap.json"


def row(label: str, ours: dict[str, float], peer: tuple[float, float] | None, note: str) -> None:
    line = f"{label:<26} ours {ours['seconds']:6.2f} s {ours['peak_mb']:6.0f} MB"
    if peer is not None:
        speed = peer[0] / ours["seconds"]
        mem = ours["peak_mb"] / peer[1]
        line += f" | {note} {peer[0]:6.2f} s {peer[1]:6.0f} MB | {speed:4.1f}x faster, {mem:4.2f}x memory"
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=60.0, help="size of the big recording")
    parser.add_argument("--png-mb", type=float, default=1.0, help="size of the PNG recording")
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tracetool-bench-diagram-"))
    try:
        big = generate(work / "in", args.mb, "big")
        small = generate(work / "png", args.png_mb, "png")
        ours_cli = [sys.executable, "-m", "tracetool"]
        has_peer = PEER.exists()
        print(
            f"recording: {big.stat().st_size / 1e6:.1f} MB; peer: "
            f"{PEER if has_peer else 'not installed, README reference figures'}"
        )

        (work / "o1").mkdir()
        diagram = measure(
            [
                *ours_cli,
                "sequence-diagram",
                str(big),
                "-f",
                "json",
                "--output-dir",
                str(work / "o1"),
            ],
            work,
            args.repeat,
        )
        prune = measure(
            [*ours_cli, "prune", str(big), "-s", "15mb", "-o", str(work / "o1")], work, args.repeat
        )
        png = measure(
            [
                *ours_cli,
                "sequence-diagram",
                str(small),
                "-f",
                "png",
                "--no-loops",
                "--output-dir",
                str(work / "o1"),
            ],
            work,
            args.repeat,
        )
        actions = png["out"].split("(")[-1].split(" actions")[0] if "actions" in png["out"] else "?"

        peer_diagram: tuple[float, float] | None = REFERENCE["diagram"]
        peer_prune: tuple[float, float] | None = REFERENCE["prune"]
        note = "README ref"
        if has_peer:
            (work / "o2").mkdir()
            d = measure(
                [
                    str(PEER),
                    "sequence-diagram",
                    str(big),
                    "-f",
                    "json",
                    "--output-dir",
                    str(work / "o2"),
                ],
                work,
                args.repeat,
            )
            p = measure(
                [str(PEER), "prune", str(big), "-s", "15mb", "-o", str(work / "o2")],
                work,
                args.repeat,
            )
            peer_diagram, peer_prune = (d["seconds"], d["peak_mb"]), (p["seconds"], p["peak_mb"])
            note = "appmap"
        row("sequence-diagram -f json", diagram, peer_diagram, note)
        row("prune -s 15mb", prune, peer_prune, note)
        pruned = work / "o1" / big.name
        print(f"  pruned file: {pruned.stat().st_size / 2**20:.1f} MiB (target 15 MiB)")
        row(f"png, {actions} actions", png, None, "")
        print("goals: diagram and prune >= 5x faster at <= 0.5x memory; png <= 5 s, no browser")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
