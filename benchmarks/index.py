"""Index benchmark: `tracetool index` and `tracetool query` against AppMap's `appmap index`.

One run measures, on the same generated corpus (default: 1000 recordings, ~300 MB):
- cold index: wall time, CPU time and peak memory of the whole process tree (sum of RSS of the
  process and its workers, sampled every 20 ms; PSS too, which counts shared pages once);
- re-index with one file changed, and with nothing changed;
- every `query` verb: warm time of the core function (best of 5, after one warm-up call) and the
  wall time of the CLI command (`--json`, new process each time, so it includes start-up).
The peer (`appmap index`, AppMap CLI 3.198.0) runs on an identical copy of the corpus named
`*.appmap.json` when `/tmp/peer/node_modules/.bin/appmap` exists; otherwise the README's figure
for this machine is printed, labelled as a reference and not measured.

    python benchmarks/index.py [--count 1000] [--total-mb 300] [--corpus DIR] [--no-peer]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _find_shared() -> Path:
    """`../shared` beside the project root (or beside an ancestor, from a git worktree)."""
    for base in (ROOT, *ROOT.parents):
        if (base.parent / "shared" / "tools").is_dir():
            return base.parent / "shared"
    return ROOT.parent / "shared"


SHARED = _find_shared()
PEER = Path("/tmp/peer/node_modules/.bin/appmap")
# shared/README.md: "appmap index on 1000 generated recordings (300 MB) 98 s wall / 415 MB peak"
PEER_REFERENCE = {"wall": 98.0, "cpu": 185.0, "peak_mb": 415.0}
TARGETS = {"speedup": 5.0, "memory_share": 0.5, "reindex_s": 1.0, "query_ms": 200.0}


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(_children(p))
    return found


def _memory_kb(pid: int, key: str, name: str) -> int:
    try:
        with open(f"/proc/{pid}/{name}", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeSampler(threading.Thread):
    """Peak summed RSS and PSS (MB) of a process and its descendants."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_rss = self.peak_pss = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            pids = _tree(self.pid)
            rss = sum(_memory_kb(p, "VmRSS:", "status") for p in pids) / 1024
            pss = sum(_memory_kb(p, "Pss:", "smaps_rollup") for p in pids) / 1024
            self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)
            self.done.wait(self.interval)


def measure(
    cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> dict[str, Any]:
    """Run `cmd` to completion; output goes to files (a full pipe would block the child)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd, text=True)
        sampler = TreeSampler(proc.pid)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        sampler.done.set()
        sampler.join()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({code}):\n{stderr[-2000:]}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak_mb": sampler.peak_rss,
        "peak_pss_mb": sampler.peak_pss,
        "stdout": stdout,
    }


def generate(out: Path, count: int, total_mb: float, ext: str) -> None:
    subprocess.run(
        [
            sys.executable,
            str(SHARED / "tools" / "make_corpus.py"),
            "--out",
            str(out),
            "--count",
            str(count),
            "--total-mb",
            str(total_mb),
            "--ext",
            ext,
        ],
        check=True,
        capture_output=True,
    )


def tracetool(*args: str) -> list[str]:
    return [sys.executable, "-m", "tracetool", *args]


QUERY_CODE = r"""
import json, sys, time
from tracetool import query as q
db = q.open_db(query_db=sys.argv[1])
rec = db.execute("SELECT path FROM recordings ORDER BY size DESC LIMIT 1").fetchone()[0]
mid = db.execute("SELECT path FROM recordings ORDER BY path LIMIT 1 OFFSET 500").fetchone()
mid = mid[0] if mid else rec
branch = db.execute("SELECT branch FROM recordings LIMIT 1").fetchone()[0]
F = q.parse_filters
cases = {
    "endpoints": lambda: q.endpoints(db),
    "find appmaps --status >=400": lambda: q.find(db, "appmaps", F(status=">=400")),
    "find requests --duration >10ms": lambda: q.find(db, "requests", F(duration=">10ms")),
    "find queries --table users": lambda: q.find(db, "queries", F(table="users")),
    "find calls --class UserService": lambda: q.find(db, "calls", F(class_="UserService")),
    "find exceptions": lambda: q.find(db, "exceptions"),
    "find logs --since 30d": lambda: q.find(db, "logs", F(since="30d")),
    "tree <median recording>": lambda: q.tree(db, mid),
    "tree <largest recording>": lambda: q.tree(db, rec),
    "related <largest recording>": lambda: q.related(db, rec),
    "hotspots": lambda: q.hotspots(db),
    "hotspots --by queries": lambda: q.hotspots(db, "queries"),
    "compare <branch> <branch>": lambda: q.compare(db, branch, branch),
}
out = {}
for name, fn in cases.items():
    fn()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t)
    out[name] = best * 1000
print(json.dumps({"times": out, "largest": rec, "median": mid, "branch": branch}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--total-mb", type=float, default=300)
    parser.add_argument("--corpus", type=Path, help="existing *.trace.json corpus to use")
    parser.add_argument("--no-peer", action="store_true", help="do not run appmap index")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tt-index-bench-"))
    env = {**os.environ, "HOME": str(work / "home"), "TRACETOOL_TRACE_DIR": ""}
    try:
        corpus = args.corpus
        if corpus is None:
            corpus = work / "corpus"
            print(f"generating {args.count} recordings ({args.total_mb:.0f} MB) ...", flush=True)
            generate(corpus, args.count, args.total_mb, ".trace.json")
        files = sorted(corpus.rglob("*.trace.json"))
        size_mb = sum(f.stat().st_size for f in files) / 1e6
        qdb = work / "query.db"
        index = tracetool("index", "--trace-dir", str(corpus), "--query-db", str(qdb))

        print(f"tracetool index: cold, {len(files)} files, {size_mb:.0f} MB ...", flush=True)
        cold = measure(index, env)
        nochange = measure(index, env)
        victim = files[len(files) // 2]
        original = victim.read_bytes()
        victim.write_bytes(original + b"\n")
        one = measure(index, env)
        victim.write_bytes(original)
        measure(index, env)

        print("query verbs ...", flush=True)
        verbs = json.loads(
            subprocess.run(
                [sys.executable, "-c", QUERY_CODE, str(qdb)],
                check=True,
                capture_output=True,
                text=True,
                env=env,
                cwd=ROOT,
            ).stdout
        )
        cli_cases = {
            "endpoints": ["endpoints"],
            "find queries --table users": ["find", "queries", "--table", "users"],
            "tree <largest recording>": ["tree", verbs["largest"]],
            "related <largest recording>": ["related", verbs["largest"]],
            "hotspots": ["hotspots"],
            "compare": ["compare", verbs["branch"], verbs["branch"]],
        }
        cli = {
            name: measure(tracetool("query", *a, "--query-db", str(qdb), "--json"), env)["wall"]
            for name, a in cli_cases.items()
        }

        peer: dict[str, Any] | None = None
        if not args.no_peer and PEER.exists():
            print("appmap index (peer): cold, same corpus as *.appmap.json ...", flush=True)
            peer_corpus = work / "peer"
            if args.corpus is None:
                generate(peer_corpus, args.count, args.total_mb, ".appmap.json")
            else:
                for f in files:
                    target = peer_corpus / f.relative_to(corpus)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(f, str(target)[: -len(".trace.json")] + ".appmap.json")
            peer_env = {**env, "APPMAP_TELEMETRY_DISABLED": "true"}
            peer = measure([str(PEER), "index", "--appmap-dir", str(peer_corpus)], peer_env, work)
        report(len(files), size_mb, cold, nochange, one, verbs["times"], cli, peer)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(
    n: int,
    size_mb: float,
    cold: dict[str, Any],
    nochange: dict[str, Any],
    one: dict[str, Any],
    verbs: dict[str, float],
    cli: dict[str, float],
    peer: dict[str, Any] | None,
) -> None:
    label = (
        "appmap index" if peer else "appmap index (REFERENCE from shared/README.md, not measured)"
    )
    ref = peer or PEER_REFERENCE
    print(
        f"\n== cold index of {n} recordings, {size_mb:.0f} MB (2 workers on this machine: "
        f"{os.cpu_count()} CPUs)"
    )
    print(f"{'':28}{'tracetool':>12}{label:>16}   ratio")
    print(
        f"{'wall (s)':28}{cold['wall']:12.1f}{ref['wall']:16.1f}   "
        f"{ref['wall'] / cold['wall']:.1f}x faster (target >= {TARGETS['speedup']:.0f}x)"
    )
    print(
        f"{'CPU (s)':28}{cold['cpu']:12.1f}{ref['cpu']:16.1f}   "
        f"{ref['cpu'] / max(cold['cpu'], 1e-9):.1f}x less"
    )
    print(
        f"{'peak memory, RSS sum (MB)':28}{cold['peak_mb']:12.0f}{ref['peak_mb']:16.0f}   "
        f"{cold['peak_mb'] / ref['peak_mb']:.2f} of peer (target <= {TARGETS['memory_share']})"
    )
    print(f"{'peak memory, PSS sum (MB)':28}{cold['peak_pss_mb']:12.0f}")
    print("\n== incremental")
    print(
        f"{'re-index, 1 file changed (s)':34}{one['wall']:8.2f}   (target <= "
        f"{TARGETS['reindex_s']:.0f} s; includes ~0.15 s Python start-up)"
    )
    print(f"{'re-index, nothing changed (s)':34}{nochange['wall']:8.2f}")
    print("\n== query verbs on that database (warm; target <= 200 ms)")
    print(f"{'':34}{'function ms':>12}{'CLI wall ms':>13}")
    for name, ms in verbs.items():
        wall = cli.get(name)
        wall_txt = f"{wall * 1000:13.0f}" if wall is not None else f"{'':13}"
        flag = "" if ms <= TARGETS["query_ms"] else "  OVER"
        print(f"{name:34}{ms:12.1f}{wall_txt}{flag}")
    for name, wall in cli.items():
        if name not in verbs:
            print(f"{name:34}{'':12}{wall * 1000:13.0f}")
    print(
        "\nCLI wall includes interpreter start-up and imports (~150-250 ms here); the function"
        "\ncolumn is what the daemon, MCP and the UI pay per request."
    )


if __name__ == "__main__":
    main()
