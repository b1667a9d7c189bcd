"""Diagram and prune benchmark: tracetool vs AppMap's CLI on the same generated recording.

Each command runs in its own process, ours and the peer's interleaved (ours, peer, ours, peer…),
`--repeat` times (default 3); a row prints the median wall time, the median CPU time (user +
system of the process tree, from `wait4`) and the highest peak RSS of the process tree (summed
over its processes, sampled from /proc every 10 ms, and never below the largest single process's
`ru_maxrss`):

- `sequence-diagram -f json` and `sequence-diagram -f plantuml` of one 60 MB recording
  (`make_corpus.py --seed 2`, the issue's "seed 2"),
- `prune -s 15mb` of the same recording,
- `sequence-diagram -f png --no-loops` of a recording whose diagram has ~2000 actions (ours draws
  it with Pillow; AppMap needs a Chromium, which is not measured here).

The peer is `/tmp/peer/node_modules/.bin/appmap` (see shared/README.md); when it is missing the
README's reference figures are printed instead, clearly labelled. Goals (issue 18): every row
≥ 10× faster than the peer in wall and in CPU time, at ≤ ½ its peak memory; the PNG in ≤ 5 s
without a browser.

    python benchmarks/diagram.py [--input FILE.appmap.json | --mb 60 --seed 2] [--repeat 3]
        [--no-png] [--only prune]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bytecode import compile_checkout
from quiet import settle

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the project (or beside an ancestor, from a git worktree)
SHARED = next(
    (b.parent / "shared" for b in (ROOT, *ROOT.parents) if (b.parent / "shared/tools").is_dir()),
    ROOT.parent / "shared",
)
PEER = Path("/tmp/peer/node_modules/.bin/appmap")
# shared/README.md, measured on a 2-core machine (one 60 MB recording): wall s, peak MB
REFERENCE = {"json": (9.5, 840.0), "prune": (6.8, 540.0)}
SPEED_GOAL = 10.0
MEMORY_GOAL = 0.5


@dataclass(frozen=True)
class Run:
    wall: float  # seconds
    cpu: float  # seconds, user + system of the process tree
    peak_mb: float  # peak RSS of the process tree
    out: str


def tree_rss_kb(pid: int) -> int:
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


def run(argv: list[str], cwd: Path | None = None) -> Run:
    """One run of `argv` as a child process (see module doc); raises when it fails."""
    env = {**os.environ, "APPMAP_TELEMETRY_DISABLED": "true", "TRACETOOL_NO_BROWSER": "1"}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        settle()  # (untimed: benchmarks/quiet.py)
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], tree_rss_kb(proc.pid))
                done.wait(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, error = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {(error or text)[-500:]}")
    peak_mb = max(peak[0], usage.ru_maxrss) / 1024  # ru_maxrss: kB on Linux
    return Run(wall, usage.ru_utime + usage.ru_stime, peak_mb, text)


def median(runs: list[Run]) -> Run:
    """Median wall and CPU time, highest peak memory."""
    return Run(
        statistics.median(r.wall for r in runs),
        statistics.median(r.cpu for r in runs),
        max(r.peak_mb for r in runs),
        runs[-1].out,
    )


def generate(out: Path, mb: float, name: str, seed: int) -> Path:
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
            "--seed",
            str(seed),
            "--name",
            name,
            "--ext",
            ".appmap.json",
        ],
        check=True,
        capture_output=True,
    )
    return out / f"{name}.appmap.json"


def ours(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracetool", *args]


def commands(recording: Path, out: Path) -> dict[str, list[str]]:
    """The measured commands, without the program (ours and AppMap's take the same options)."""
    r, o = str(recording), str(out)
    return {
        "sequence-diagram -f json": ["sequence-diagram", r, "-f", "json", "--output-dir", o],
        "sequence-diagram -f plantuml": [
            "sequence-diagram",
            r,
            "-f",
            "plantuml",
            "--output-dir",
            o,
        ],
        "prune -s 15mb": ["prune", r, "-s", "15mb", "-o", o],
    }


def compare(
    recording: Path, work: Path, repeat: int, peer: bool, only: list[str] | None = None
) -> dict[str, tuple[Run, Run | None]]:
    """label -> (ours, peer's) medians, the two interleaved run by run."""
    (work / "ours").mkdir(exist_ok=True)
    (work / "peer").mkdir(exist_ok=True)
    mine = commands(recording, work / "ours")
    theirs = commands(recording, work / "peer")
    if only:
        mine = {k: v for k, v in mine.items() if any(k.startswith(o) for o in only)}
    results: dict[str, tuple[list[Run], list[Run]]] = {label: ([], []) for label in mine}
    for round_ in range(repeat):
        for label in mine:
            # alternate who goes first, so neither always runs on a warmer page cache
            order = [False, True] if round_ % 2 == 0 else [True, False]
            for is_peer in order:
                if is_peer and not peer:
                    continue
                argv = [str(PEER), *theirs[label]] if is_peer else ours(*mine[label])
                results[label][is_peer].append(run(argv, cwd=work))
    return {label: (median(a), median(b) if b else None) for label, (a, b) in results.items()}


def _reference(label: str) -> Run | None:
    ref = REFERENCE.get("prune" if label.startswith("prune") else "json")
    if label.endswith("plantuml") or ref is None:
        return None
    return Run(ref[0], float("nan"), ref[1], "")


def report(label: str, mine: Run, peer: Run | None, note: str) -> None:
    line = f"{label:<29} {mine.wall:6.2f} {mine.cpu:6.2f} {mine.peak_mb:6.0f}"
    if peer is None:
        print(line + " |    (no peer figure)")
        return
    wall_x = peer.wall / mine.wall
    cpu_x = peer.cpu / mine.cpu if mine.cpu else float("nan")
    mem_x = mine.peak_mb / peer.peak_mb
    known_cpu = not math.isnan(cpu_x)  # the README's reference figures have no CPU time
    verdict = (
        "ok"
        if wall_x >= SPEED_GOAL and (cpu_x >= SPEED_GOAL or not known_cpu) and mem_x <= MEMORY_GOAL
        else "short of the goal"
    )
    cpu_text = f"{peer.cpu:6.2f}" if known_cpu else "   n/a"
    cpu_ratio = f"{cpu_x:5.1f}x" if known_cpu else "  n/a "
    print(
        f"{line} | {peer.wall:6.2f} {cpu_text} {peer.peak_mb:6.0f} {note:<10}"
        f"| {wall_x:5.1f}x {cpu_ratio} {mem_x:5.2f}x  {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", type=Path, help="an existing recording (*.appmap.json)")
    parser.add_argument("--mb", type=float, default=60.0, help="size of the generated recording")
    parser.add_argument("--seed", type=int, default=2, help="make_corpus seed (issue: 2)")
    parser.add_argument("--png-mb", type=float, default=1.0, help="size of the PNG recording")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs (median)")
    parser.add_argument("--no-png", action="store_true", help="skip the PNG row")
    parser.add_argument(
        "--only", action="append", help="rows whose label starts with this (e.g. prune)"
    )
    args = parser.parse_args()
    compile_checkout()  # our side runs from bytecode, as an installed package does
    work = Path(tempfile.mkdtemp(prefix="tracetool-bench-diagram-"))
    try:
        big = args.input or generate(work / "in", args.mb, "big", args.seed)
        has_peer = PEER.exists()
        print(
            f"recording: {big} ({big.stat().st_size / 1e6:.1f} MB); peer: "
            f"{PEER if has_peer else 'not installed, README reference figures'}; "
            f"median of {args.repeat} interleaved runs; load {os.getloadavg()[0]:.1f}"
        )
        rows = compare(big, work, args.repeat, has_peer, args.only)
        print(
            f"{'':<29} {'ours: wall':>10} {'CPU':>6} {'peak':>6} | "
            f"{'peer: wall':>10} {'CPU':>6} {'peak':>6} {'':<10}| "
            f"{'wall':>6} {'CPU':>6} {'memory':>6}"
        )
        for label, (mine, peer) in rows.items():
            note = "appmap"
            if peer is None:
                peer, note = _reference(label), "README ref"
            report(label, mine, peer, note)
        pruned = work / "ours" / big.name
        if pruned.exists():
            print(f"  pruned file: {pruned.stat().st_size / 2**20:.1f} MiB (target 15 MiB)")
        if not args.no_png:
            small = generate(work / "png", args.png_mb, "png", args.seed)
            png = median(
                [
                    run(
                        ours(
                            "sequence-diagram",
                            str(small),
                            "-f",
                            "png",
                            "--no-loops",
                            "--output-dir",
                            str(work / "ours"),
                        ),
                        cwd=work,
                    )
                    for _ in range(args.repeat)
                ]
            )
            actions = png.out.split("(")[-1].split(" actions")[0] if "actions" in png.out else "?"
            report(f"png, {actions} actions", png, None, "")
        print(
            f"(seconds, MB) goals: each command >= {SPEED_GOAL:.0f}x faster than the peer in "
            f"wall and CPU time at <= {MEMORY_GOAL}x its peak memory; png <= 5 s, no browser"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
