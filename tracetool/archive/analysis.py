"""Analysis of recordings for archive and compare: one diagram and one index entry each.

`analyze_file(task)` reads a recording once and returns two JSON documents:

- the sequence diagram (`tracetool.diagram`, compare filter applied, loops folded) in AppMap's
  sequence.json shape — what `compare` diffs;
- the index entry: the recording's metadata, bound classMap, AppMap canonical forms and
  fingerprints (all from `tracetool.index.extract`, the indexer's own code), the recording
  digest, and per-route / per-query counts (what `compare` reports as N+1 growth):

      {"version", "recording", "sha256", "digest", "metadata", "classMap", "canonical",
       "fingerprints", "stats",
       "routes":  {"GET /users/{id}": {"count", "statuses", "sqlCount"}},
       "queries": {"<normalized sql>": {"count", "tables", "callers": ["path:line", ...]}}}

The recording digest is AppMap's: sha256 of the root actions' subtree digests, concatenated.
A bad file is data, not an error: the result carries a one-line `error` instead.
`run_analysis(tasks, workers)` runs tasks inline or on a process pool; `generate_openapi`
calls the `openapi` feature when this build has it.
"""

from __future__ import annotations

import hashlib
import importlib
import multiprocessing
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tracetool import __version__
from tracetool.archive.compare_filter import CompareFilter
from tracetool.archive.manifest import ANALYSIS_VERSION, as_dict
from tracetool.errors import TraceToolError

# Below this much work a process pool costs more than it saves (start-up, pickling results).
POOL_MIN_FILES = 4
POOL_MIN_BYTES = 16_000_000


@dataclass(frozen=True)
class AnalysisTask:
    path: str  # absolute
    relpath: str  # POSIX, relative to the recordings directory
    filter: dict[str, Any]  # CompareFilter.to_json()


@dataclass(frozen=True)
class AnalysisResult:
    relpath: str
    sha256: str = ""
    diagram: bytes = b""  # sequence.json
    index: bytes = b""  # index.json
    test_status: str | None = None
    recorder_type: str | None = None
    name: str | None = None
    error: str | None = None


def recording_digest(root_subtree_digests: Sequence[str]) -> str:
    """AppMap's per-recording digest: sha256 over the root subtree digests, concatenated."""
    from tracetool.diagram import roots_digest

    return roots_digest(root_subtree_digests)


def analysis_key(compare_filter: CompareFilter) -> dict[str, Any]:
    """What produced derived files; a base whose key differs is not reused."""
    return {
        "version": ANALYSIS_VERSION,
        "tool": f"tracetool {__version__}",
        "filter": compare_filter.to_json(),
    }


def _language(metadata: Any) -> str | None:
    if isinstance(metadata, dict):
        lang = metadata.get("language")
        if isinstance(lang, dict) and isinstance(lang.get("name"), str):
            return str(lang["name"])
    return None


def analyze_document(doc: Any, relpath: str, sha256: str, cf: CompareFilter) -> tuple[dict, dict]:
    """(sequence.json object, index entry) of one loaded document (module doc).

    The diagram is built first: `extract` normalizes the document in place afterwards.
    """
    from tracetool.diagram import DiagramOptions, build_diagram, to_json
    from tracetool.index import extract
    from tracetool.index.sidecar import fingerprints

    state = cf.state(_language(doc.metadata))
    # client requests by normalized route: ephemeral loopback ports are not a change
    diagram = to_json(build_diagram(doc, DiagramOptions(loops=True, client_routes=True), state))
    digest = recording_digest([a.get("subtreeDigest", "") for a in diagram["rootActions"]])
    data = extract(doc, relpath)
    locations = {fqid: row[6] for fqid, row in data.items.items() if row[0] == "function"}
    routes: dict[str, dict[str, Any]] = {}
    for request in data.requests:
        key = f"{request[1]} {request[2]}"
        route = routes.setdefault(key, {"count": 0, "statuses": [], "sqlCount": 0})
        route["count"] += 1
        route["sqlCount"] += request[6]
        if request[4] is not None and request[4] not in route["statuses"]:
            route["statuses"].append(request[4])
    queries: dict[str, dict[str, Any]] = {}
    for row in data.queries:
        fqid, caller = row[2], row[4]
        normalized = fqid.split(":", 1)[1] if fqid.startswith("query:") else fqid
        entry = queries.get(normalized)
        if entry is None:
            item: tuple[Any, ...] = data.items.get(fqid) or ()
            tables = item[9] if len(item) > 9 and item[9] else ""
            entry = queries[normalized] = {
                "count": 0,
                "tables": [t for t in str(tables).split(",") if t],
                "callers": [],
            }
        entry["count"] += 1
        where = locations.get(caller) if caller else None
        if where and where not in entry["callers"]:
            entry["callers"].append(where)
    for route in routes.values():
        route["statuses"].sort()
    index = {
        "version": ANALYSIS_VERSION,
        "recording": relpath,
        "sha256": sha256,
        "digest": digest,
        "metadata": data.metadata,
        "classMap": data.class_map,
        "canonical": data.canonical,
        "fingerprints": fingerprints(sha256, data.canonical),
        "stats": {
            k: data.recording.get(k)
            for k in ("events", "requests", "queries", "calls", "exceptions")
        },
        "routes": dict(sorted(routes.items())),
        "queries": dict(sorted(queries.items())),
    }
    return diagram, index


def analyze_file(task: AnalysisTask) -> AnalysisResult:
    """Analyze one recording file (module doc); never raises for a bad file."""
    from tracetool.trace import gc_paused, parse

    rel = task.relpath
    try:
        with open(task.path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        return AnalysisResult(rel, error=f"cannot read ({exc.strerror})")
    sha = hashlib.sha256(raw).hexdigest()
    try:
        with gc_paused():
            doc = parse(raw, rel)
            del raw
            diagram, index = analyze_document(doc, rel, sha, CompareFilter.from_json(task.filter))
    except TraceToolError as exc:
        return AnalysisResult(rel, sha, error=str(exc).removeprefix(f"{rel}: "))
    except MemoryError:
        return AnalysisResult(rel, sha, error="too large to analyze in memory")
    except Exception as exc:  # one odd file must not stop an archive
        return AnalysisResult(
            rel, sha, error=f"could not be analyzed ({type(exc).__name__}: {exc})"
        )
    md = as_dict(index["metadata"])
    recorder = as_dict(md.get("recorder"))
    return AnalysisResult(
        rel,
        sha,
        orjson.dumps(diagram, option=orjson.OPT_INDENT_2),
        orjson.dumps(index),
        md.get("test_status"),
        recorder.get("type"),
        md.get("name"),
    )


def run_analysis(tasks: list[AnalysisTask], workers: int | None) -> Iterator[AnalysisResult]:
    """Results of `analyze_file` for every task, in completion order."""
    count = workers or os.cpu_count() or 1
    if count <= 1 or len(tasks) < POOL_MIN_FILES or _total_size(tasks) < POOL_MIN_BYTES:
        for task in tasks:
            yield analyze_file(task)
        return
    # fork is cheapest and safe while this process has no other threads; spawn otherwise.
    methods = multiprocessing.get_all_start_methods()
    method = "fork" if "fork" in methods and threading.active_count() == 1 else "spawn"
    with ProcessPoolExecutor(
        max_workers=min(count, len(tasks)), mp_context=multiprocessing.get_context(method)
    ) as pool:
        yield from pool.map(analyze_file, tasks, chunksize=1)


def _total_size(tasks: list[AnalysisTask]) -> int:
    total = 0
    for task in tasks:
        try:
            total += os.path.getsize(task.path)
        except OSError:
            pass
    return total


def generate_openapi(
    files: Sequence[Path], title: str, workers: int | None
) -> tuple[bytes | None, list[str]]:
    """(openapi.yml bytes, warnings) from the `openapi` feature, or (None, why) without it."""
    try:
        module = importlib.import_module("tracetool.openapi")
    except ImportError:
        return None, ["openapi.yml not written: this build has no `tracetool.openapi` yet"]
    options = module.OpenApiOptions(default_title=title, workers=workers)
    result = module.generate(list(files), options)
    return result.yaml().encode("utf-8"), [str(w) for w in result.warnings]
