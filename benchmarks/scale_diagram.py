"""Scale of `sequence-diagram -f json`, `-f plantuml` and `prune -s 15mb` with the recording's size.

For one recording per size (default 60 MB, 200 MB and 1 GB, generated with
`make_corpus.py --count 1 --seed 2`, or given with `--inputs`), each command runs `--repeat`
times (median) in its own process; a row prints the input size, wall and CPU seconds, the
throughput (input MB per wall second) and the peak RSS of the process tree, also as a multiple
of the input size, and the size of the output. Goal (issue 18): a steady MB/s, and peak memory
that does not grow with the input beyond what the output itself needs (streaming).

    python benchmarks/scale_diagram.py [--inputs A.appmap.json B.appmap.json ...]
                                       [--sizes 60,200,1000] [--repeat 1] [--only json,prune]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bytecode import compile_checkout
from diagram import generate, median, ours, run

COMMANDS = {
    "json": ["sequence-diagram", "{in}", "-f", "json", "--output-dir", "{out}"],
    "plantuml": ["sequence-diagram", "{in}", "-f", "plantuml", "--output-dir", "{out}"],
    "prune": ["prune", "{in}", "-s", "15mb", "-o", "{out}"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", nargs="*", type=Path, help="existing recordings")
    parser.add_argument("--sizes", default="60,200,1000", help="MB to generate (no --inputs)")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="runs per row (median)")
    parser.add_argument("--only", default=",".join(COMMANDS), help="commands, comma-separated")
    args = parser.parse_args()
    compile_checkout()  # our side runs from bytecode, as an installed package does
    work = Path(tempfile.mkdtemp(prefix="tracetool-bench-scale-"))
    try:
        inputs = list(args.inputs or [])
        if not inputs:
            for mb in (float(s) for s in args.sizes.split(",")):
                inputs.append(generate(work / f"in{mb:.0f}", mb, "big", args.seed))
        print(
            f"median of {args.repeat} run(s) per row; load {os.getloadavg()[0]:.1f}\n"
            f"{'command':<9} {'input MB':>9} {'wall s':>7} {'CPU s':>7} {'MB/s':>7} "
            f"{'peak MB':>8} {'peak/in':>8} {'output MB':>10}"
        )
        for name in args.only.split(","):
            for recording in inputs:
                out = work / "out"
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                argv = [
                    a.replace("{in}", str(recording)).replace("{out}", str(out))
                    for a in COMMANDS[name]
                ]
                result = median([run(ours(*argv), cwd=work) for _ in range(args.repeat)])
                size = recording.stat().st_size / 1e6
                written = sum(p.stat().st_size for p in out.iterdir()) / 1e6
                print(
                    f"{name:<9} {size:9.0f} {result.wall:7.2f} {result.cpu:7.2f} "
                    f"{size / result.wall:7.1f} {result.peak_mb:8.0f} "
                    f"{result.peak_mb / size:8.2f} {written:10.1f}",
                    flush=True,
                )
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
