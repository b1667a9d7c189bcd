"""Index benchmark: `tracetool index` against AppMap's `appmap index`, side by side.

Default run, on the same recordings for both (default: 1000 generated recordings, ~300 MB,
`make_corpus.py` seed 1; `--corpus DIR` takes an existing folder of `*.trace.json` or
`*.appmap.json`, mirrored by hard links so nothing is copied and the folder is never written):
- cold index, re-index with nothing changed, with one file changed (a newline appended: new
  bytes, the same rows) and with one file re-recorded (its timings changed: its rows change too,
  as when a test is run again): wall time, CPU time
  (the process and its workers) and peak memory of the process tree (sum of RSS, sampled every
  20 ms; PSS too, every 0.2 s, which counts shared pages once: see `TreeSampler`) — each run `--repeat` times (default 3),
  ours and the peer's interleaved, medians compared with the targets (>= 10x faster in wall
  and CPU time, <= 1/2 the peer's peak memory);
- every `query` verb on our database: warm time of the core function (best of 5, after one
  warm-up call) and the wall time of the CLI command (`--json`, a new process each time).
The peer is AppMap CLI 3.198.0 (`/tmp/peer/node_modules/.bin/appmap`, see ../shared/README.md;
~1.8 s of Node start-up per call, included). Without it (or with `--no-peer`) the shared
README's figure is printed, labelled as a reference and not measured.
`benchmarks/scale_index.py` prints MB/s and peak memory per input size.

    python benchmarks/index.py [--count 1000] [--total-mb 300] [--corpus DIR] [--repeat 3]
                               [--no-peer] [--no-queries]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bytecode import compile_checkout
from quiet import settle

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
TARGETS = {"speedup": 10.0, "memory_share": 0.5, "reindex_s": 1.0, "query_ms": 200.0}
SUFFIXES = (".trace.json", ".appmap.json")
STEPS = ("cold", "nothing changed", "one file changed", "one file re-recorded")


def _children(pid: int) -> list[int]:
    """The child processes of `pid`, from its threads' `children` lists (no scan of /proc)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                out.extend(int(c) for c in handle.read().split())
        except (OSError, ValueError):
            continue
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
    """Peak summed RSS and PSS (MB) of a process and its descendants.

    RSS (`status`, a counter the kernel keeps) is read every `interval`; PSS only every
    `PSS_EVERY`-th time: `smaps_rollup` walks the process's page tables holding its memory-map
    lock, which stalls the measured process's page faults meanwhile (read every 20 ms, on a
    VM where such kernel work is costly, it inflated our 3-process tree's cold-index CPU by
    ~20% and the sampler itself used a third of a core). PSS is reported for information;
    the memory target is judged on RSS. Children are found from each process's own
    `task/*/children` lists rather than by reading every `/proc/*/stat`.
    """

    PSS_EVERY = 10

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_rss = self.peak_pss = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        tick = 0
        while not self.done.is_set():
            pids = _tree(self.pid)
            rss = sum(_memory_kb(p, "VmRSS:", "status") for p in pids) / 1024
            self.peak_rss = max(self.peak_rss, rss)
            if tick % self.PSS_EVERY == 0:
                pss = sum(_memory_kb(p, "Pss:", "smaps_rollup") for p in pids) / 1024
                self.peak_pss = max(self.peak_pss, pss)
            tick += 1
            self.done.wait(self.interval)


def measure(
    cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> dict[str, Any]:
    """Run `cmd` to completion; output goes to files (a full pipe would block the child)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        settle()  # (untimed: benchmarks/quiet.py)
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


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:  # another file system
        shutil.copy2(src, dst)


def recordings(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.name.endswith(SUFFIXES) and p.is_file())


def mirror(src: Path, dst: Path, ext: str) -> list[Path]:
    """Hard-link every recording below `src` into `dst`, named `*<ext>`; returns the links."""
    out = []
    for f in recordings(src):
        rel = f.relative_to(src).as_posix()
        stem = next(rel[: -len(s)] for s in SUFFIXES if rel.endswith(s))
        target = dst / (stem + ext)
        _link(f, target)
        out.append(target)
    return out


def replace_bytes(path: Path, data: bytes) -> None:
    """New content under the same name without writing through a hard link (the source
    corpus may be shared)."""
    tmp = path.with_name(path.name + ".bench-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def reset_peer(folder: Path, trash: Path) -> None:
    """Set aside what `appmap index` wrote (a folder beside every recording), for a cold run:
    moved into `trash` (deleted with the rest of the work folder at the end), not deleted now.

    Deleting them here freed ~16,000 inodes just before our cold run. On a file system that
    skips recently freed inodes when it allocates one (ext4 without a journal, as on the
    benchmark machine: `recently_deleted`), each sidecar our run then created scanned past
    them (~3.5% of our cold run's CPU in perf), while the deletion's write-back ran beside it:
    a 15,000-file delete right before our cold run against a move, 3 interleaved pairs, median
    4.97 s against 4.42 s. The peer's run never paid that for ours (our runs free nothing).
    Moved away, neither side runs right after the other's deletions."""
    trash.mkdir(parents=True, exist_ok=True)
    for n, f in enumerate(folder.rglob("*.appmap.json")):
        index_dir = f.with_name(f.name[: -len(".appmap.json")])
        if index_dir.is_dir():
            index_dir.rename(trash / str(n))


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "peak_mb", "peak_pss_mb")
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--total-mb", type=float, default=300)
    parser.add_argument(
        "--corpus", type=Path, help="existing recordings (*.trace.json or *.appmap.json)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs per side (median)")
    parser.add_argument("--no-peer", action="store_true", help="do not run appmap index")
    parser.add_argument("--no-queries", action="store_true", help="skip the query verbs")
    args = parser.parse_args()
    compile_checkout()  # our side runs from bytecode, as an installed package does

    work = Path(tempfile.mkdtemp(prefix="tt-index-bench-"))
    env = {**os.environ, "HOME": str(work / "home"), "TRACETOOL_TRACE_DIR": ""}
    peer_env = {**env, "APPMAP_TELEMETRY_DISABLED": "true"}
    use_peer = not args.no_peer and PEER.exists()
    try:
        source = args.corpus
        if source is None:
            source = work / "source"
            print(f"generating {args.count} recordings ({args.total_mb:.0f} MB) ...", flush=True)
            generate(source, args.count, args.total_mb, ".trace.json")
        ours_dir, peer_dir = work / "ours", work / "peer"
        files = mirror(source, ours_dir, ".trace.json")
        peer_files = mirror(source, peer_dir, ".appmap.json") if use_peer else []
        if not files:
            raise SystemExit(f"{source}: no recordings")
        size_mb = sum(f.stat().st_size for f in files) / 1e6
        victim = len(files) // 2
        original = files[victim].read_bytes()

        runs: dict[str, list[dict[str, Any]]] = {}
        qdb = work / "query.db"  # the query verbs run on the last run's database
        print(
            f"{len(files)} recordings, {size_mb:.0f} MB; {args.repeat} interleaved runs per side"
            f"{' (peer: appmap index)' if use_peer else ''} ...",
            flush=True,
        )
        for rep in range(args.repeat):
            qdb = work / f"run{rep}" / "query.db"
            index = tracetool("index", "--trace-dir", str(ours_dir), "--query-db", str(qdb))
            peer_cmd = [str(PEER), "index", "--appmap-dir", str(peer_dir)]
            replace_bytes(files[victim], original)
            if use_peer:
                replace_bytes(peer_files[victim], original)
                reset_peer(peer_dir, work / "trash" / str(rep))
            steps = [
                ("cold", None),
                ("nothing changed", None),
                ("one file changed", original + b"\n"),
                ("one file re-recorded", rerecorded(original)),
            ]
            for step, content in steps:
                if content is not None:
                    replace_bytes(files[victim], content)
                runs.setdefault(f"ours {step}", []).append(measure(index, env))
                if use_peer:
                    if content is not None:
                        replace_bytes(peer_files[victim], content)
                    runs.setdefault(f"peer {step}", []).append(measure(peer_cmd, peer_env, work))
            print(
                f"  run {rep + 1}: "
                + ", ".join(f"{k} {v[-1]['wall']:.1f} s" for k, v in runs.items()),
                flush=True,
            )

        verbs: dict[str, Any] = {"times": {}}
        cli: dict[str, float] = {}
        if not args.no_queries:
            print("query verbs ...", flush=True)
            verbs, cli = query_verbs(qdb, env)
        report(len(files), size_mb, runs, verbs["times"], cli, use_peer, args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def rerecorded(original: bytes) -> bytes:
    """The recording as its test would record it again: every event's `elapsed` 1.5 times as
    long. Unlike "one file changed" (a newline appended: new bytes, the same rows), its rows
    change, so the re-index writes them."""
    doc = json.loads(original)
    for event in doc.get("events", []):
        if isinstance(event, dict) and isinstance(event.get("elapsed"), (int, float)):
            event["elapsed"] = event["elapsed"] * 1.5
    return json.dumps(doc, separators=(",", ":")).encode()


def query_verbs(qdb: Path, env: dict[str, str]) -> tuple[dict[str, Any], dict[str, float]]:
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
    return verbs, cli


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def report(
    n: int,
    size_mb: float,
    runs: dict[str, list[dict[str, Any]]],
    verbs: dict[str, float],
    cli: dict[str, float],
    measured_peer: bool,
    repeat: int,
) -> None:
    load = os.getloadavg()[0]
    print(
        f"\n== index of {n} recordings, {size_mb:.0f} MB: median of {repeat} interleaved runs "
        f"({os.cpu_count()} CPUs, load average {load:.1f})"
    )
    label = "appmap index" if measured_peer else "appmap (README)"
    print(f"{'':34}{'tracetool':>10}{label:>16}   ratio")
    speed, share = TARGETS["speedup"], TARGETS["memory_share"]
    for step in STEPS:
        ours = median_run(runs[f"ours {step}"])
        if measured_peer:
            ref: dict[str, Any] | None = median_run(runs[f"peer {step}"])
        else:
            ref = PEER_REFERENCE if step == "cold" else None
        for key, name in (("wall", "wall (s)"), ("cpu", "CPU (s)")):
            line = f"{step + ', ' + name:34}{ours[key]:10.2f}"
            if ref is not None:
                ratio = ref[key] / max(ours[key], 1e-9)
                line += f"{ref[key]:16.2f}   {ratio:5.1f}x  (target >= {speed:.0f}x: "
                line += f"{_verdict(ratio >= speed)})"
            print(line)
        line = f"{step + ', peak RSS (MB)':34}{ours['peak_mb']:10.0f}"
        if ref is not None:
            part = ours["peak_mb"] / ref["peak_mb"]
            line += f"{ref['peak_mb']:16.0f}   {part:5.2f}   (target <= {share}: "
            line += f"{_verdict(part <= share)})"
        print(line)
        print(f"{step + ', peak PSS (MB)':34}{ours['peak_pss_mb']:10.0f}")
    print("\nevery run (wall s / CPU s / peak RSS MB):")
    for name, values in runs.items():
        cells = "   ".join(f"{r['wall']:.1f}/{r['cpu']:.1f}/{r['peak_mb']:.0f}" for r in values)
        print(f"  {name:26}{cells}")
    if not verbs:
        return
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
