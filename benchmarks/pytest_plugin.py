"""pytest plugin overhead on the example app's suite (examples/shop/tests).

Three configurations of the same suite, each a fresh pytest process, run interleaved
`--rounds` times (median wall time reported, so one noisy run does not decide):

- `not installed`: ``-p no:tracetool`` (the plugin is never imported) -- the baseline;
- `installed, off`: the plugin loaded, recording off -- target ≤ 2 % over the baseline;
- `recording`: ``--trace-record`` (one trace document per test) -- target ≤ 1.2× the baseline
  (AppMap's Python agent needs 1.44× on a comparable suite).

Wall time is reported as median and minimum, and CPU time (user+sys of the pytest process) as
median: on a loaded machine wall medians swing by tens of percent, CPU time much less.

The suite is copied to a temporary directory (so recordings land there) and its test modules
are replicated ``--copies`` times, so that per-test costs dominate interpreter start-up. Without
examples/shop, a generated suite with a recorded package stands in.

    python benchmarks/pytest_plugin.py [--rounds 7] [--copies 20]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "examples" / "shop"
CONFIGS = {
    "not installed": ["-p", "no:tracetool"],
    "installed, off": [],
    "recording": ["--trace-record"],
}

GENERATED_PKG = """
def price(cents, qty):
    return cents * qty

def total(items):
    return sum(price(c, q) for c, q in items)

class Cart:
    def __init__(self):
        self.items = []

    def add(self, cents, qty=1):
        self.items.append((cents, qty))
        return self

    def total(self):
        return total(self.items)
"""

GENERATED_TESTS = """
import pytest
from benchpkg import Cart, total

@pytest.mark.parametrize("n", range(10))
def test_cart(n):
    cart = Cart()
    for i in range(n):
        cart.add(100 + i, 2)
    assert cart.total() == total(cart.items)
"""


def prepare_suite(work: Path, copies: int) -> tuple[Path, str]:
    if (SHOP / "tests").is_dir():
        project = work / "shop"
        shutil.copytree(
            SHOP, project, ignore=shutil.ignore_patterns("tmp", "__pycache__", ".pytest_cache")
        )
        what = "examples/shop/tests"
    else:
        project = work / "generated"
        (project / "benchpkg").mkdir(parents=True)
        (project / "benchpkg" / "__init__.py").write_text(GENERATED_PKG, encoding="utf-8")
        (project / "trace.yml").write_text("name: bench\npackages:\n  - path: benchpkg\n")
        (project / "tests").mkdir()
        (project / "tests" / "test_cart.py").write_text(GENERATED_TESTS, encoding="utf-8")
        (project / "conftest.py").write_text("")
        what = "a generated suite (examples/shop is missing)"
    tests = project / "tests"
    originals = sorted(tests.glob("test_*.py"))
    for k in range(1, copies):
        for module in originals:
            shutil.copy(module, tests / f"{module.stem}_copy{k}.py")
    return project, what


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(project: Path, extra: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one pytest process on the suite, and its last output line."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TRACETOOL") and k != "PYTEST_ADDOPTS"
    }
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    cpu = _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return elapsed, cpu, done.stdout.strip().splitlines()[-1]


OFF_COST = r"""
import os, sys, time
for name in ("TRACETOOL", "TRACETOOL_URL"):
    os.environ.pop(name, None)
import pytest  # already loaded when pytest loads its plugins (and with it typing, pathlib, ...)
t0 = time.perf_counter()
import pytest_tracetool.plugin as plugin
imported = time.perf_counter() - t0
from _pytest.config import get_config
config = get_config()
config.pluginmanager.register(plugin, "tracetool-bench")
parser = config._parser
n = 2000
t0 = time.perf_counter()
for _ in range(n):
    plugin.recording_mode(config, parser.parse_known_args([]))
hooks = (time.perf_counter() - t0) / n
print(imported, hooks)
"""


def off_cost() -> tuple[float, float]:
    """Seconds to import the plugin, and per session for its off-path hooks (mode decision)."""
    out = subprocess.run(
        [sys.executable, "-c", OFF_COST], capture_output=True, text=True, check=True, cwd=ROOT
    )
    imported, hooks = out.stdout.split()
    return float(imported), float(hooks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--copies", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project, what = prepare_suite(Path(tmp), args.copies)
        wall: dict[str, list[float]] = {name: [] for name in CONFIGS}
        cpu: dict[str, list[float]] = {name: [] for name in CONFIGS}
        summary = {}
        for name, extra in CONFIGS.items():  # warm-up: imports cached, .pyc written
            _, _, summary[name] = run(project, extra)
        for _ in range(args.rounds):
            for name, extra in CONFIGS.items():
                elapsed, used, last = run(project, extra)
                wall[name].append(elapsed)
                cpu[name].append(used)
                counts = last.split(" in ")[0]
                if counts != summary[name].split(" in ")[0]:
                    raise SystemExit(f"{name}: {last!r} differs from the first run's")
        written = len(list((project / "tmp" / "trace" / "pytest").glob("*.trace.json")))
    print(f"suite: {what} x{args.copies} -- {summary['not installed']}")
    print(f"{args.rounds} interleaved rounds; recordings written: {written}")
    print("ratios against `not installed`; CPU time (user+sys) is the least disturbed by load\n")
    targets = {"not installed": "", "installed, off": "<= 1.02", "recording": "<= 1.20"}
    header = ("configuration", "wall median", "ratio", "wall min", "ratio", "CPU median", "ratio")
    print(f"{header[0]:<16}" + "".join(f"{h:>12}" for h in header[1:]) + "  target")
    base = {
        "wall": statistics.median(wall["not installed"]),
        "min": min(wall["not installed"]),
        "cpu": statistics.median(cpu["not installed"]),
    }
    for name in CONFIGS:
        cells = [
            (statistics.median(wall[name]), base["wall"]),
            (min(wall[name]), base["min"]),
            (statistics.median(cpu[name]), base["cpu"]),
        ]
        row = "".join(f"{value:>11.3f}s{value / ref:>12.3f}" for value, ref in cells)
        print(f"{name:<16}{row}  {targets[name]}")
    imported, hooks = off_cost()
    share = (imported + 2 * hooks) / base["cpu"]
    print(
        f"\nthe plugin's own cost when off (measured directly, immune to load): import "
        f"{imported * 1e3:.2f} ms + mode decision 2 x {hooks * 1e6:.1f} us = {share:.4%} of the "
        "suite's CPU time"
    )


if __name__ == "__main__":
    main()
