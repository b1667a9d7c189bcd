"""Start-up of `tracetool --version` and `tracetool --help` vs a bare `python -c pass`.

Runs every command alternately (so all see the same machine load) and prints, side by side, the
median wall and child CPU time per run, the ratio to the bare interpreter (the venv's python) and
the milliseconds tracetool adds on top of it. Commands: the venv's console script; the
PyInstaller binary when it is built (`bash scripts/build-binary`); and `--before PATH`, another
console script to compare against (e.g. another checkout's `.venv/bin/tracetool`).

    python benchmarks/startup.py [--runs 21] [--script PATH] [--binary PATH] [--before PATH]

Target (issue 18 item 3): `--version` and `--help` ≤ 100 ms in the venv and in the binary. On a
loaded machine the bare interpreter alone can take most of that, so read the ratio and the
"over python" column as well as the absolute figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from binary_startup import one_run

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--script", default=str(ROOT / ".venv" / "bin" / "tracetool"))
    parser.add_argument("--binary", default=str(ROOT / "dist" / "tracetool" / "tracetool"))
    parser.add_argument("--before", help="another tracetool console script to compare")
    args = parser.parse_args()
    if not Path(args.script).exists():
        print(f"{args.script} not found: make the venv with scripts/_venv.sh", file=sys.stderr)
        return 2
    python = str(Path(args.script).parent / "python")
    subjects = {"venv": args.script}
    if Path(args.binary).exists():
        subjects["binary"] = args.binary
    else:
        print(f"(no binary at {args.binary}: `bash scripts/build-binary` to include it)")
    if args.before:
        subjects["before"] = args.before
    print(
        f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
        f"median of {args.runs} interleaved runs"
    )
    print(
        f"{'command':<28}{'wall':>8}{'CPU':>8}{'vs python':>11}{'over python':>13}"
        f"{'  target ≤ ' + str(TARGET_MS) + ' ms'}"
    )
    cmds = {"python -c pass": [python, "-c", "pass"]}
    for label, path in subjects.items():
        for argv in (["--version"], ["--help"]):
            cmds[f"{label}: tracetool {argv[0]}"] = [path, *argv]
    for cmd in cmds.values():  # warm the page cache
        one_run(cmd)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    for _ in range(args.runs):
        for name, cmd in cmds.items():
            samples[name].append(one_run(cmd))
    wall = {k: statistics.median(w for w, _ in v) * 1000 for k, v in samples.items()}
    cpu = {k: statistics.median(c for _, c in v) * 1000 for k, v in samples.items()}
    base = "python -c pass"
    missed = 0
    for name in cmds:
        line = f"{name:<28}{wall[name]:>5.0f} ms{cpu[name]:>5.0f} ms"
        if name != base:
            ok = wall[name] <= TARGET_MS
            missed += not ok
            line += (
                f"{wall[name] / wall[base]:>10.2f}x{wall[name] - wall[base]:>10.0f} ms"
                f"  {'met' if ok else 'NOT met'}"
            )
        print(line)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
