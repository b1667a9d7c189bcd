"""Agent overhead per call: no agent, agent enabled but idle, recording, writing the document.

Three workloads of `--calls` recorded calls each (default 10^5) in a generated package
configured in trace.yml: a tiny function, a recursive one (10 calls deep), and methods on an
object. Every configuration runs in its own interpreter, started the way users start it
(`TRACETOOL=true` and the `.pth` hook; no agent at all for the baseline); each workload is timed
`--repeat` times and the best run counts. Printed per workload: µs per call without the agent,
µs *added* per call when idle and when recording (parameters and return values captured), and
µs per recorded call to write the document — with the ratio to the target.

`--with-appmap` adds AppMap's Python agent as a peer (`pip install appmap` into a venv under
/tmp, made on first use; skipped with a message when that fails), configured the same way
(`APPMAP=true`, appmap.yml, `APPMAP_DISPLAY_PARAMS=true` so it captures values as we do).

Targets (issue 3): idle ≤ 0.5 µs added per call, recording ≤ 4 µs, writing ≤ 2 µs per recorded
call. Run: `.venv/bin/python benchmarks/agent.py [--calls N] [--repeat R] [--with-appmap]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

TARGETS = {"idle": 0.5, "record": 4.0, "write": 2.0}
WORKLOADS = ("tiny", "recursive", "methods")
APPMAP_VENV = Path(tempfile.gettempdir()) / "tracetool-bench-appmap-venv"

PACKAGE = """
def tiny(x):
    return x


def recursive(n):
    return 0 if n == 0 else recursive(n - 1) + 1


class Account:
    def __init__(self, balance):
        self.balance = balance

    def deposit(self, amount):
        self.balance += amount
        return self.balance

    def can_pay(self, amount):
        return self.balance >= amount
"""

WORKER = """
import gc, json, os, sys, time
from benchpkg.work import Account, recursive, tiny

MODE, CALLS, REPEAT, OUT = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
clock = time.process_time if sys.argv[5] == "cpu" else time.perf_counter


def run(name):
    if name == "tiny":
        for i in range(CALLS):
            tiny(i)
    elif name == "recursive":
        for _ in range(CALLS // 10):
            recursive(9)
    else:
        account = Account(0)
        for i in range(CALLS // 2):
            account.deposit(i)
            account.can_pay(i)


def tracetool_session():
    from tracetool.agent.recorder import get_recorder
    recorder = get_recorder()

    class Session:
        def __enter__(self):
            assert recorder.start()
        def __exit__(self, *exc):
            self.recording = recorder.finish()
        def write(self, path):
            self.recording.write(path)
            return self.recording.event_count
    return Session()


def appmap_session():
    import appmap
    from _appmap import generation

    class Session:
        def __enter__(self):
            self.rec = appmap.Recording()
            self.rec.__enter__()
        def __exit__(self, *exc):
            self.rec.__exit__(*exc)
        def write(self, path):
            with open(path, "w") as handle:
                handle.write(generation.dump(self.rec))
            return len(self.rec.events)
    return Session()


results = {}
for name in ("tiny", "recursive", "methods"):
    run(name)  # warm-up: imports, specialization
    best, best_write, events = None, None, 0
    for _ in range(REPEAT):
        session = None
        if MODE == "record":
            session = tracetool_session()
        elif MODE == "appmap-record":
            session = appmap_session()
        gc.collect()
        if session is not None:
            session.__enter__()
        t0 = clock()
        run(name)
        elapsed = clock() - t0
        if session is not None:
            session.__exit__(None, None, None)
            t1 = clock()
            events = session.write(os.path.join(os.path.dirname(OUT), name + ".json"))
            wrote = clock() - t1
            best_write = wrote if best_write is None else min(best_write, wrote)
            del session
        best = elapsed if best is None else min(best, elapsed)
    results[name] = {"call": best / CALLS * 1e6, "events": events}
    if best_write is not None:
        results[name]["write"] = best_write / CALLS * 1e6
with open(OUT, "w") as handle:
    json.dump(results, handle)
"""


def make_project(root: Path) -> None:
    (root / "benchpkg").mkdir(parents=True)
    (root / "benchpkg" / "__init__.py").write_text("")
    (root / "benchpkg" / "work.py").write_text(PACKAGE)
    (root / "worker.py").write_text(textwrap.dedent(WORKER))
    (root / "trace.yml").write_text("name: bench\ntrace_dir: out\npackages:\n  - path: benchpkg\n")
    (root / "appmap.yml").write_text(
        "name: bench\nappmap_dir: out\npackages:\n  - path: benchpkg\n"
    )


CLOCK = "cpu"


def run_worker(python: str, root: Path, mode: str, calls: int, repeat: int, env: dict) -> dict:
    out = root / f"result-{mode}-{os.getpid()}.json"
    base_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("TRACETOOL", "APPMAP", "_APPMAP"))
    }
    base_env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [python, "worker.py", mode, str(calls), str(repeat), str(out), CLOCK],
        cwd=root,
        env={**base_env, **env},
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{mode} worker failed:\n{proc.stderr}")
    return json.loads(out.read_text())


def appmap_python() -> str | None:
    python = APPMAP_VENV / "bin" / "python"
    if python.exists():
        return str(python)
    print(f"(creating {APPMAP_VENV} with `pip install appmap` ...)", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(APPMAP_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "appmap"],
            check=True,
            capture_output=True,
            timeout=600,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"AppMap's agent skipped: pip install appmap failed ({exc})")
        return None
    return str(python)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100_000, help="recorded calls per workload")
    parser.add_argument("--repeat", type=int, default=5, help="runs per workload (best counts)")
    parser.add_argument("--with-appmap", action="store_true", help="compare with AppMap's agent")
    parser.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="process CPU time (default: steady on a shared machine) or wall-clock time",
    )
    args = parser.parse_args()
    global CLOCK
    CLOCK = args.clock

    with tempfile.TemporaryDirectory(prefix="tracetool-bench-") as tmp:
        root = Path(tmp)
        make_project(root)
        py = sys.executable
        on = {"TRACETOOL": "true"}
        runs = {
            "base": run_worker(py, root, "base", args.calls, args.repeat, {}),
            "idle": run_worker(py, root, "idle", args.calls, args.repeat, on),
            "record": run_worker(py, root, "record", args.calls, args.repeat, on),
        }
        appmap = None
        if args.with_appmap:
            python = appmap_python()
            if python is not None:
                env = {"APPMAP": "true", "APPMAP_DISPLAY_PARAMS": "true"}
                appmap = {
                    "base": run_worker(python, root, "base", args.calls, args.repeat, {}),
                    "idle": run_worker(python, root, "idle", args.calls, args.repeat, env),
                    "record": run_worker(
                        python, root, "appmap-record", args.calls, args.repeat, env
                    ),
                }
    report(runs, appmap, args.calls, args.clock)


def report(runs: dict, appmap: dict | None, calls: int, clock: str) -> None:
    print(
        f"\nagent overhead, µs per call ({calls:,} recorded calls per workload, best of the runs, "
        f"{'process CPU' if clock == 'cpu' else 'wall-clock'} time)"
    )
    header = f"{'workload':<10} {'no agent':>9} {'idle +':>8} {'record +':>9} {'write':>7}"
    if appmap:
        header += f"  | {'AppMap idle +':>13} {'record +':>9} {'write':>8}"
    print(header)
    worst = {"idle": 0.0, "record": 0.0, "write": 0.0}
    for name in WORKLOADS:
        base = runs["base"][name]["call"]
        idle = runs["idle"][name]["call"] - base
        rec = runs["record"][name]["call"] - base
        write = runs["record"][name]["write"]
        worst = {
            "idle": max(worst["idle"], idle),
            "record": max(worst["record"], rec),
            "write": max(worst["write"], write),
        }
        line = f"{name:<10} {base:9.3f} {idle:8.3f} {rec:9.3f} {write:7.3f}"
        if appmap:
            abase = appmap["base"][name]["call"]
            line += (
                f"  | {appmap['idle'][name]['call'] - abase:13.3f}"
                f" {appmap['record'][name]['call'] - abase:9.3f}"
                f" {appmap['record'][name]['write']:8.3f}"
            )
        print(line)
    print("\nworst workload vs target (ratio ≤ 1.00 meets it)")
    for key, label in (("idle", "idle added"), ("record", "recording added"), ("write", "writing")):
        print(
            f"  {label:<16} {worst[key]:6.3f} µs / target {TARGETS[key]:.1f} µs = {worst[key] / TARGETS[key]:.2f}"
        )
    if appmap:
        print("\nAppMap's agent / tracetool (higher = we are faster)")
        for key, mode in (("idle", "idle"), ("record", "record")):
            ratios = []
            for name in WORKLOADS:
                ours = runs[mode][name]["call"] - runs["base"][name]["call"]
                theirs = appmap[mode][name]["call"] - appmap["base"][name]["call"]
                ratios.append(f"{name} {theirs / max(ours, 1e-3):.0f}x")
            print(f"  {key:<7} " + ", ".join(ratios))
        ratios = [
            f"{name} {appmap['record'][name]['write'] / runs['record'][name]['write']:.0f}x"
            for name in WORKLOADS
        ]
        print("  write   " + ", ".join(ratios))


if __name__ == "__main__":
    main()
