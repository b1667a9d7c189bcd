"""`tracetool archive`: recordings of one revision, with their analysis, in a tar file.

Contract (spec "archive"; layout and manifest in `tracetool.archive.manifest`):

- Needs trace.yml (`ConfigError` otherwise) and recordings in its trace_dir (`NotFoundError`).
  The revision is `-r` or `git rev-parse HEAD` (outside git, `-r` is required).
- Only recordings (`*.trace.json`, `*.appmap.json`) and the derived files are archived —
  nothing else in trace_dir. Recordings bigger than `max_size_mb` (MiB, as the filesystem
  reports) are archived but not analyzed, and listed as `oversized`.
- Analysis (default on): per recording a sequence diagram with the compare filter and an index
  entry (`tracetool.archive.analysis`), tests that failed listed, and `openapi.yml`. A file
  that cannot be analyzed is archived anyway, with a warning.
- Type `auto` is `incremental` when trace_dir holds a restored manifest, else `full`. An
  incremental archive stores only files that are new or changed against that base state and
  lists the deleted ones; derived files of unchanged recordings are not recomputed when the
  base was analyzed the same way (same analysis key), so an incremental run analyzes only what
  changed. A full archive reuses them too when the restored files are still present.
- Output `.trace/archive/<type>/<revision>.tar` (or `--output-dir`, `-f`), written atomically.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tracetool import __version__
from tracetool.archive import git
from tracetool.archive.analysis import (
    AnalysisTask,
    analysis_key,
    generate_openapi,
    run_analysis,
)
from tracetool.archive.compare_filter import load_compare_filter
from tracetool.archive.manifest import (
    FORMAT,
    FORMAT_VERSION,
    KIND_DIAGRAM,
    KIND_INDEX,
    KIND_OPENAPI,
    KIND_RECORDING,
    MANIFEST_NAME,
    OPENAPI_PATH,
    Manifest,
    diagram_path,
    index_path,
    read_manifest,
    recording_name,
    revision_filename,
    sha256_file,
)
from tracetool.archive.tarball import write_archive
from tracetool.config import load_config, resolve_trace_dir
from tracetool.errors import NotFoundError, UsageError
from tracetool.trace import find_trace_files

TYPES = ("full", "incremental", "auto")
DEFAULT_ARCHIVE_DIR = Path(".trace") / "archive"


@dataclass(frozen=True)
class ArchiveOptions:
    type: str = "auto"
    revision: str | None = None
    output_dir: Path | None = None
    output_file: str | None = None
    analyze: bool = True
    max_size_mb: float = 50.0
    filters: tuple[str, ...] = ()
    thread_count: int | None = None


@dataclass(frozen=True)
class ArchiveResult:
    path: Path
    type: str
    revision: str
    base_revision: str | None
    recordings: int
    analyzed: int  # recordings analyzed in this run
    reused: int  # recordings whose analysis came from the base
    members: int  # files stored in the tar (manifest excluded)
    deleted: int
    failed_tests: tuple[str, ...]
    oversized: tuple[str, ...]
    warnings: tuple[str, ...]


Report = Callable[[str], None]


def _entry(path: Path, kind: str) -> dict[str, Any]:
    sha, size = sha256_file(path)
    return {"sha256": sha, "size": size, "kind": kind}


class _State:
    """The files of the archived state and where each member's bytes come from."""

    def __init__(self, trace_dir: Path, base: Manifest | None, incremental: bool) -> None:
        self.trace_dir = trace_dir
        self.base = base
        self.incremental = incremental
        self.files: dict[str, dict[str, Any]] = {}
        self.sources: dict[str, Path] = {}

    def add(self, path: str, source: Path, kind: str) -> None:
        self.files[path] = _entry(source, kind)
        self.sources[path] = source

    def carry(self, path: str) -> bool:
        """Keep the base's entry for `path`, if this archive can: an incremental one only needs
        the hash; a full one needs the restored file, unchanged, in trace_dir."""
        if self.base is None or path not in self.base.files:
            return False
        entry = self.base.files[path]
        local = self.trace_dir / path
        if not self.incremental:
            if not local.is_file() or _entry(local, str(entry.get("kind")))["sha256"] != entry.get(
                "sha256"
            ):
                return False
            self.sources[path] = local
        self.files[path] = dict(entry)
        return True


def create_archive(options: ArchiveOptions, report: Report | None = None) -> ArchiveResult:
    """Build one archive (module doc)."""
    if options.type not in TYPES:
        raise UsageError(f"unknown archive type {options.type!r} (full, incremental, auto)")
    if options.max_size_mb <= 0:
        raise UsageError("--max-size must be a positive number of MB")
    config = load_config(required=True)
    trace_dir = resolve_trace_dir(None).absolute()
    if not trace_dir.is_dir():
        raise NotFoundError(f"{trace_dir}: no recordings directory (trace_dir of {config.path})")
    recordings = find_trace_files(trace_dir)
    if not recordings:
        raise NotFoundError(f"{trace_dir}: no recordings (*.trace.json, *.appmap.json) to archive")
    revision = options.revision or git.current_revision(config.root)
    base = read_manifest(trace_dir)
    kind = options.type
    if kind == "auto":
        kind = "incremental" if base is not None else "full"
    if kind == "incremental" and base is None:
        raise UsageError(
            f"{trace_dir} holds no restored archive ({MANIFEST_NAME}), so there is no base for "
            f"an incremental archive; restore one there first (tracetool restore -r <base> "
            f"--output-dir {trace_dir}) or use --type full"
        )
    cf = load_compare_filter(config.raw, options.filters, str(config.path))
    key = analysis_key(cf)
    base_key = base.analysis.get("key") if base is not None else None
    same_analysis = base is not None and base.analysis.get("analyzed") and base_key == key
    state = _State(trace_dir, base, kind == "incremental")
    base_files = base.files if base is not None else {}
    base_recs = base.recordings if base is not None else {}
    max_bytes = int(options.max_size_mb * 1024 * 1024)

    warnings: list[str] = []
    oversized: list[str] = []
    recs: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}
    tasks: list[AnalysisTask] = []
    reused = 0
    base_recordings = {p for p, e in base_files.items() if e.get("kind") == KIND_RECORDING}
    current = {p.relative_to(trace_dir).as_posix() for p in recordings}
    changed_any = base is None or base_recordings != current
    for path in recordings:
        rel = path.relative_to(trace_dir).as_posix()
        state.add(rel, path, KIND_RECORDING)
        entry = state.files[rel]
        name = recording_name(rel)
        recs[rel] = {"name": name, "size": entry["size"]}
        if name in names:
            warnings.append(f"{rel}: same name as {names[name]}; not analyzed")
            continue
        names[name] = rel
        unchanged = base_files.get(rel, {}).get("sha256") == entry["sha256"]
        changed_any = changed_any or not unchanged
        if entry["size"] > max_bytes:
            oversized.append(rel)
            continue
        derived = (diagram_path(name), index_path(name))
        can_reuse = unchanged and (same_analysis or not options.analyze)
        if can_reuse and all(state.carry(p) for p in derived):
            recs[rel].update({k: v for k, v in base_recs.get(rel, {}).items() if k != "size"})
            reused += 1
            continue
        for p in derived:
            state.files.pop(p, None)
            state.sources.pop(p, None)
        if options.analyze:
            tasks.append(AnalysisTask(str(path), rel, cf.to_json()))

    with tempfile.TemporaryDirectory(prefix=".staging-", dir=_ensure_dir(options, kind)) as tmp:
        staging = Path(tmp)
        analyzed = 0
        for result in run_analysis(tasks, options.thread_count):
            if result.error is not None:
                warnings.append(f"{result.relpath}: not analyzed: {result.error}")
                continue
            analyzed += 1
            name = recording_name(result.relpath)
            for rel_path, payload, file_kind in (
                (diagram_path(name), result.diagram, KIND_DIAGRAM),
                (index_path(name), result.index, KIND_INDEX),
            ):
                target = staging / rel_path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(payload)
                state.add(rel_path, target, file_kind)
            info = recs[result.relpath]
            info.update({"test_status": result.test_status, "recorder_type": result.recorder_type})
            if result.name:
                info["title"] = result.name
            if report is not None:
                report(f"analyzed {result.relpath}")
        # openapi.yml describes all recordings: reused only when none changed.
        if not options.analyze or (not changed_any and same_analysis):
            if not changed_any:
                state.carry(OPENAPI_PATH)
        if options.analyze and OPENAPI_PATH not in state.files:
            inputs = [trace_dir / rel for rel in sorted(recs) if rel not in oversized]
            openapi_yml, notes = generate_openapi(inputs, config.name, options.thread_count)
            warnings.extend(notes)
            if openapi_yml is not None:
                target = staging / OPENAPI_PATH
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(openapi_yml)
                state.add(OPENAPI_PATH, target, KIND_OPENAPI)

        files = dict(sorted(state.files.items()))
        if kind == "incremental":
            members = [
                p for p in files if base_files.get(p, {}).get("sha256") != files[p]["sha256"]
            ]
            deleted = sorted(set(base_files) - set(files))
        else:
            members, deleted = list(files), []
        failed = [rel for rel, info in recs.items() if info.get("test_status") == "failed"]
        now = time.time()
        data: dict[str, Any] = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "type": kind,
            "revision": revision,
            "createdAt": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="seconds"),
            "tool": f"tracetool {__version__}",
            "traceDir": _relative(trace_dir, config.root),
            "config": dict(config.raw),
            "analysis": {"analyzed": options.analyze, "key": key},
            "files": files,
            "members": members,
            "deleted": deleted,
            "recordings": recs,
            "failedTests": [
                {"recording": r, "name": recs[r].get("title", recs[r]["name"])} for r in failed
            ],
            "oversized": oversized,
            "warnings": warnings,
        }
        if kind == "incremental" and base is not None:
            data["baseRevision"] = base.revision
        out_dir = options.output_dir or DEFAULT_ARCHIVE_DIR / kind
        target = out_dir / (options.output_file or f"{revision_filename(revision)}.tar")
        write_archive(target, Manifest(data), [(m, state.sources[m]) for m in members], now)
    return ArchiveResult(
        path=target,
        type=kind,
        revision=revision,
        base_revision=data.get("baseRevision"),
        recordings=len(recordings),
        analyzed=analyzed,
        reused=reused,
        members=len(members),
        deleted=len(deleted),
        failed_tests=tuple(failed),
        oversized=tuple(oversized),
        warnings=tuple(warnings),
    )


def _ensure_dir(options: ArchiveOptions, kind: str) -> Path:
    out_dir = options.output_dir or DEFAULT_ARCHIVE_DIR / kind
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create output directory {out_dir}: {exc.strerror}") from None
    return out_dir


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return os.fspath(path)
