"""Start-up of the PyInstaller binary vs the venv's console script: `tracetool --version`.

Runs both alternately (so both see the same machine load) and prints, side by side, the median
wall time and the median CPU time (user + sys of the child) per run, with their ratio. The
binary is built by `bash scripts/build-binary` (dist/tracetool/tracetool); the script is the
project venv's `tracetool` (scripts/_venv.sh). Also times `--help` (which imports click and lists
the commands) for both.

    python benchmarks/binary_startup.py [--runs 30] [--binary PATH] [--script PATH]

Target (issue 13): the binary's `--version` ≤ 100 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_run(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one run."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--binary", default=str(ROOT / "dist" / "tracetool" / "tracetool"))
    parser.add_argument("--script", default=str(ROOT / ".venv" / "bin" / "tracetool"))
    args = parser.parse_args()
    for path, how in (
        (args.binary, "bash scripts/build-binary"),
        (args.script, "scripts/_venv.sh"),
    ):
        if not Path(path).exists():
            print(f"{path} not found: build it with {how}", file=sys.stderr)
            return 2
    print(
        f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.runs} runs each"
    )
    print(
        f"{'command':<22}{'binary wall':>13}{'script wall':>13}{'ratio':>7}{'binary CPU':>12}{'script CPU':>12}"
    )
    verdict = 0
    for argv in (["--version"], ["--help"]):
        for cmd in ([args.binary, *argv], [args.script, *argv]):  # warm the page cache
            one_run(cmd)
        samples: dict[str, list[tuple[float, float]]] = {"binary": [], "script": []}
        for _ in range(args.runs):
            samples["binary"].append(one_run([args.binary, *argv]))
            samples["script"].append(one_run([args.script, *argv]))
        wall = {k: statistics.median(w for w, _ in v) * 1000 for k, v in samples.items()}
        cpu = {k: statistics.median(c for _, c in v) * 1000 for k, v in samples.items()}
        print(
            f"tracetool {' '.join(argv):<12}{wall['binary']:>10.0f} ms{wall['script']:>10.0f} ms"
            f"{wall['binary'] / wall['script']:>6.2f}x{cpu['binary']:>9.0f} ms{cpu['script']:>9.0f} ms"
        )
        if argv == ["--version"]:
            ok = wall["binary"] <= 100
            print(f"  target: binary --version <= 100 ms wall: {'met' if ok else 'NOT met'}")
            verdict = 0 if ok else 1
    return verdict


if __name__ == "__main__":
    sys.exit(main())
