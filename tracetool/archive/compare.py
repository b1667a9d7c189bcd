"""`tracetool compare`: what changed in behaviour between a base and a head revision.

Contract (spec "compare"; AppMap §3.10 for the report shape):

- Inputs: restored data in `<report-dir>/base` and `<report-dir>/head` (`tracetool restore
  --output-dir`), in our layout or AppMap's (`tracetool.archive.snapshot`). A missing side is a
  `NotFoundError` naming it and the restore command to run. The report directory is
  `--output-dir`, default `.trace/change-report/<base>-<head>`.
- An earlier report there (change-report.json, diff/, report.md) is an error unless
  `--clobber-output-dir`, which removes those outputs — never the restored base/ and head/.
- Only test recordings (recorder type `tests`, or a `test_status`) are classified: request and
  remote recordings are named by time, not by a stable test identity. new = only in head,
  removed = only in base, changed = in both with different digests (sha256 over the root
  subtree digests of the compare-filtered sequence diagram), failed = head `test_status`
  failed. Names are relpaths without extension, so `a.appmap.json` and `a.trace.json` match.
- Per changed recording: the diagram diff in `diff/<name>.diff.sequence.json`, its text per
  root action as keys of `sequenceDiagramDiff`, and `sourceDiff` (`git diff base head` of the
  head recording's source files) when `--source-dir` is a git checkout knowing both revisions.
- When no test failed (as AppMap: a failed run's recordings are incomplete): `apiDiff` of the
  two openapi.yml, `sqlDiff`, and `countDiff` (`tracetool.archive.changes`).
  `--no-report-removed` leaves out removals (API removals, removed queries/tables, shrinking
  counts).
- `--delete-unreferenced` (default) deletes from base/ and head/ the recordings (and their
  analysis) the report does not mention; each side's manifest is updated to match.
- Writes `change-report.json`: AppMap's keys (`testFailures`, `newAppMaps`, `removedAppMaps`,
  `changedAppMaps`, `sequenceDiagramDiff`, `appMapMetadata`, `apiDiff`, `sqlDiff`, `warnings`)
  plus ours: `baseRevision`, `headRevision`, `countDiff`, `recordingPaths` (name → path from
  the report directory, for links). No `findingDiff`: there is no scanner.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tracetool.archive import changes, git
from tracetool.archive.apidiff import diff_openapi, without_removals
from tracetool.archive.compare_filter import load_compare_filter
from tracetool.archive.manifest import (
    ANALYSIS_DIR,
    MANIFEST_NAME,
    Manifest,
    revision_filename,
)
from tracetool.archive.snapshot import Snapshot
from tracetool.config import load_config
from tracetool.errors import NotFoundError, UsageError
from tracetool.trace.document import atomic_write_bytes

REPORT_FILE = "change-report.json"
DIFF_DIR = "diff"
OUTPUTS = (REPORT_FILE, DIFF_DIR, "report.md")
# Files AppMap's index writes in a recording's folder (deleted with an unreferenced recording).
_APPMAP_INDEX_FILES = ("sequence.json", "metadata.json", "classMap.json", "mtime", "version")


@dataclass(frozen=True)
class CompareOptions:
    base_revision: str
    head_revision: str | None = None
    output_dir: Path | None = None
    clobber_output_dir: bool = False
    source_dir: Path = Path(".")
    delete_unreferenced: bool = True
    report_removed: bool = True


@dataclass(frozen=True)
class CompareResult:
    output_dir: Path
    report: Path
    new: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    failed: tuple[str, ...]
    deleted: int
    warnings: tuple[str, ...]


def default_output_dir(base: str, head: str) -> Path:
    return Path(".trace") / "change-report" / f"{revision_filename(base)}-{revision_filename(head)}"


def _prepare(out: Path, clobber: bool) -> None:
    missing = [side for side in ("base", "head") if not Snapshot.has_data(out / side)]
    if missing:
        hint = "; ".join(
            f"tracetool restore -r <{side} revision> --output-dir {out / side}" for side in missing
        )
        raise NotFoundError(
            f"no restored data in {' and '.join(str(out / s) for s in missing)}; run {hint}"
        )
    existing = [name for name in OUTPUTS if (out / name).exists()]
    if existing and not clobber:
        raise UsageError(
            f"{out} already holds a change report ({', '.join(existing)}); pass "
            f"--clobber-output-dir to replace it"
        )
    for name in existing:
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()


def compare(options: CompareOptions) -> CompareResult:
    """Compare base with head (module doc)."""
    head_revision = options.head_revision or git.current_revision()
    base_revision = options.base_revision
    out = options.output_dir or default_output_dir(base_revision, head_revision)
    _prepare(out, options.clobber_output_dir)
    config = load_config()
    cf = load_compare_filter(config.raw, (), str(config.path or "trace.yml"))
    base, head = Snapshot(out / "base", cf), Snapshot(out / "head", cf)
    warnings: dict[str, list[str]] = {}
    _check_analysis(base, head, warnings)
    for snapshot in (base, head):
        snapshot.prefetch()

    b_tests = {n for n in base.recordings if base.is_test(n)}
    h_tests = {n for n in head.recordings if head.is_test(n)}
    new = sorted(h_tests - b_tests)
    removed = sorted(b_tests - h_tests)
    common = sorted(b_tests & h_tests)
    changed = [n for n in common if base.digest(n) != head.digest(n)]
    failed = sorted(n for n in h_tests if head.metadata(n).get("test_status") == "failed")

    report: dict[str, Any] = {
        "baseRevision": base_revision,
        "headRevision": head_revision,
        "testFailures": changes.failed_tests(head, failed, options.source_dir),
        "newAppMaps": new,
        "removedAppMaps": removed,
        "changedAppMaps": [],
        "sequenceDiagramDiff": {},
    }
    _diagram_diffs(report, out, base, head, changed, options, base_revision, head_revision)
    report["appMapMetadata"] = {
        "base": {n: base.metadata(n) for n in sorted(base.recordings)},
        "head": {n: head.metadata(n) for n in sorted(head.recordings)},
    }
    counted: list[str] = []
    if not failed:
        b_api, h_api = base.openapi(), head.openapi()
        if b_api is None or h_api is None:
            warnings.setdefault("apiDiff", []).append(
                "no openapi.yml in "
                + " and ".join(s for s, d in (("base", b_api), ("head", h_api)) if d is None)
            )
        else:
            api = diff_openapi(b_api, h_api)
            report["apiDiff"] = api if options.report_removed else without_removals(api)
        report["sqlDiff"] = changes.sql_diff(base, head, options.report_removed)
        report["countDiff"] = changes.count_diff(base, head, common, options.report_removed)
        counted = sorted({e["appmap"] for part in report["countDiff"].values() for e in part})
    base_ref = set(removed) | set(changed) | set(counted)
    head_ref = set(new) | set(changed) | set(failed) | set(counted)
    report["recordingPaths"] = {
        "base": {n: f"base/{base.recordings[n].relpath}" for n in sorted(base_ref)},
        "head": {n: f"head/{head.recordings[n].relpath}" for n in sorted(head_ref)},
    }
    for snap in (base, head):
        if snap.warnings:
            warnings.setdefault("recordings", []).extend(snap.warnings)
    if warnings:
        report["warnings"] = warnings
    deleted = 0
    if options.delete_unreferenced:
        deleted = _delete_unreferenced(base, base_ref) + _delete_unreferenced(head, head_ref)
    path = out / REPORT_FILE
    atomic_write_bytes(path, orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    return CompareResult(
        output_dir=out,
        report=path,
        new=tuple(new),
        removed=tuple(removed),
        changed=tuple(changed),
        failed=tuple(failed),
        deleted=deleted,
        warnings=tuple(w for ws in warnings.values() for w in ws),
    )


def _check_analysis(base: Snapshot, head: Snapshot, warnings: dict[str, list[str]]) -> None:
    """Digests only compare when both sides were analyzed the same way (module doc)."""
    layouts = {base.layout, head.layout} - {"plain"}
    if len(layouts) > 1:
        warnings.setdefault("analysis", []).append(
            "base and head were archived by different tools (tracetool and AppMap); their SQL "
            "digests differ, so recordings with SQL may show as changed"
        )
    b_key, h_key = base.analysis_key(), head.analysis_key()
    if b_key is not None and h_key is not None and b_key != h_key:
        base.use_stored = head.use_stored = False
        warnings.setdefault("analysis", []).append(
            "base and head were analyzed with different settings or tool versions; "
            "diagrams and index data were rebuilt from the recordings"
        )


def _diagram_diffs(
    report: dict[str, Any],
    out: Path,
    base: Snapshot,
    head: Snapshot,
    changed: list[str],
    options: CompareOptions,
    base_revision: str,
    head_revision: str,
) -> None:
    from tracetool.diagram import Diagram, from_json, text, to_json
    from tracetool.diagram import diff as diffmod

    source_dir = options.source_dir
    use_git = git.is_repository(source_dir) and all(
        git.resolve(r, source_dir) for r in (base_revision, head_revision)
    )
    texts: dict[str, list[str]] = report["sequenceDiagramDiff"]
    for name in changed:
        b = from_json(base.diagram(name), f"base/{name}")
        h = from_json(head.diagram(name), f"head/{name}")
        result = diffmod.diff(b, h)
        entry: dict[str, Any] = {"appmap": name}
        if use_git:
            files = changes.source_files(head.index(name))
            source = git.diff(base_revision, head_revision, files, source_dir)
            if source:
                entry["sourceDiff"] = source
        if result is not None:
            rel = f"{name}.diff.sequence.json"
            atomic_write_bytes(
                out / DIFF_DIR / rel, orjson.dumps(to_json(result), option=orjson.OPT_INDENT_2)
            )
            entry["sequenceDiagramDiff"] = rel
            for root in result.root_actions:
                line = text.render(Diagram(result.actors, [root])).strip("\n")
                names = texts.setdefault(line, [])
                if name not in names:
                    names.append(name)
        report["changedAppMaps"].append(entry)


def _prune_empty(folder: Path, root: Path) -> None:
    """Remove `folder` and its parents below `root` while they are empty."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _delete_unreferenced(snapshot: Snapshot, referenced: set[str]) -> int:
    root = snapshot.root
    gone: list[str] = []
    for name, rec in snapshot.recordings.items():
        if name in referenced:
            continue
        with contextlib.suppress(FileNotFoundError):
            rec.path.unlink()
        _prune_empty(rec.path.parent, root)
        gone.append(rec.relpath)
        ours = root / ANALYSIS_DIR / name
        if ours.is_dir():
            shutil.rmtree(ours)
            _prune_empty(ours.parent, root)
            gone.extend(f"{ANALYSIS_DIR}/{name}/{f}" for f in ("sequence.json", "index.json"))
        appmap = root / name
        if appmap.is_dir():
            for child in appmap.iterdir():
                if child.is_file() and (
                    child.name in _APPMAP_INDEX_FILES
                    or (child.name.startswith("canonical.") and child.suffix == ".json")
                    or child.name == "appmap-findings.json"
                ):
                    child.unlink()
            _prune_empty(appmap, root)
    if gone and snapshot.manifest is not None:
        data = dict(snapshot.manifest.data)
        files = dict(snapshot.manifest.files)
        for rel in gone:
            files.pop(rel, None)
        data["files"] = files
        data["prunedByCompare"] = True
        atomic_write_bytes(root / MANIFEST_NAME, Manifest(data).to_bytes())
    return sum(1 for g in gone if not g.startswith(f"{ANALYSIS_DIR}/"))
