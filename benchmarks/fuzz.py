"""Long fuzz run: hostile recordings through every reading command (issue 14).

Each input is a mutation of a seed (the shared corpus's small recordings and a generated one:
truncation, per-field type swaps, deep nesting, huge numbers, invalid UTF-8, NaN, duplicate keys,
byte flips, deep call chains), put beside a good recording; every reading command then runs on
them in-process under a time bound (`tests/fuzz/harness.py`: index, query tree, stats, stats -a,
openapi, inspect x2, sequence-diagram, prune x2, trim -r, sanitize -r, sanitize; and for inputs of
odd length, `sanitize` and `trim` of the bad file whole and a block at a time). A failure is an
exception other than tracetool's own errors, a hang, an "internal error" line, a good file left
unprocessed, or a block-at-a-time rewrite that differs from the whole one. Failing inputs are
kept under --keep for replay (`--replay FILE`).

    python benchmarks/fuzz.py [--runs 20000] [--seed 1] [--jobs 2] [--keep /tmp/fuzz-failures]

`--runs` counts command runs (one mutated input is 12-17 runs); `--inputs` counts inputs.
The CI suite runs the same harness for ~15 s (tests/fuzz/test_hostile.py::test_fuzz_short).
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNS_PER_INPUT = 14  # (query tree runs only when the bad input was indexed; 4 more runs when odd)


def _worker(args: tuple[int, int, float, str, float]) -> tuple[int, int, list[str], dict[str, int]]:
    """Run `count` inputs from `seed`; returns (inputs, command runs, failures, kinds)."""
    seed, count, seconds, keep, bound = args
    from tests.conftest import CORPUS
    from tests.fuzz.harness import Runner, dump_case, mutate, run_case, seeds

    rng = random.Random(seed)
    pool = seeds(CORPUS if CORPUS.is_dir() else None)
    failures: list[str] = []
    kinds: dict[str, int] = {}
    runs = 0
    started = time.monotonic()
    calls = {"n": 0}
    original = Runner.__call__

    def counted(self: Runner, *argv: str) -> object:
        calls["n"] += 1
        return original(self, *argv)

    Runner.__call__ = counted  # type: ignore[method-assign]
    done = 0
    with tempfile.TemporaryDirectory(prefix="tracetool-fuzz-") as tmp:
        for number in range(count):
            if time.monotonic() - started > seconds:
                break
            kind, bad = mutate(rng.choice(pool), rng)
            kinds[kind.split("+")[0]] = kinds.get(kind.split("+")[0], 0) + 1
            found = run_case(Path(tmp) / "w", bad, kind, seconds=bound)
            done += 1
            if done % 100 == 0:
                print(
                    f"  [seed {seed}] {done}/{count} inputs, {len(failures)} failures",
                    file=sys.stderr,
                    flush=True,
                )
            if found:
                kept = dump_case(Path(keep), seed * 1_000_000 + number, kind, bad)
                failures.extend(f"{f} (input: {kept})" for f in found)
    runs = calls["n"]
    return done, runs, failures, kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20_000, help="command runs (default 20000)")
    parser.add_argument("--inputs", type=int, default=None, help="mutated inputs (overrides)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="processes")
    parser.add_argument("--seconds", type=float, default=3 * 3600, help="overall time cap")
    parser.add_argument("--bound", type=float, default=30.0, help="time bound per command run")
    parser.add_argument("--keep", default=str(Path(tempfile.gettempdir()) / "tracetool-fuzz"))
    parser.add_argument("--replay", type=Path, help="run one kept input and print failures")
    args = parser.parse_args()

    if args.replay:
        from tests.fuzz.harness import run_case

        with tempfile.TemporaryDirectory() as tmp:
            found = run_case(Path(tmp) / "w", args.replay.read_bytes(), "replay")
        for failure in found:
            print(failure)
        return 1 if found else 0

    inputs = args.inputs or -(-args.runs // RUNS_PER_INPUT)
    jobs = max(1, args.jobs)
    share = [inputs // jobs + (1 if i < inputs % jobs else 0) for i in range(jobs)]
    work = [(args.seed + i, n, args.seconds, args.keep, args.bound) for i, n in enumerate(share)]
    started = time.monotonic()
    if jobs == 1:
        results = [_worker(work[0])]
    else:
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            results = pool.map(_worker, work)
    done = sum(r[0] for r in results)
    runs = sum(r[1] for r in results)
    failures = [f for r in results for f in r[2]]
    kinds: dict[str, int] = {}
    for r in results:
        for k, v in r[3].items():
            kinds[k] = kinds.get(k, 0) + v
    elapsed = time.monotonic() - started
    print(
        f"fuzz: {done} inputs, {runs} command runs in {elapsed:.0f} s "
        f"(seed {args.seed}, {jobs} job(s)); failures: {len(failures)}"
    )
    print("inputs by mutation: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    for failure in failures[:50]:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
