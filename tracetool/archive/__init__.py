"""Archive, restore and compare recordings by git revision (spec: archive, restore, compare,
compare-report).

Public API (what the CLI calls; each returns a frozen result dataclass):

- `create_archive(ArchiveOptions(...)) -> ArchiveResult` — `tracetool archive`.
- `restore(RestoreOptions(...)) -> RestoreResult` — `tracetool restore`.
- `compare(CompareOptions(...)) -> CompareResult` — `tracetool compare`.
- `write_report(report_dir, ReportOptions(...)) -> Path` — `tracetool compare-report`.

Layout and manifest: `tracetool.archive.manifest`. Per-recording analysis (diagram + index
entry): `tracetool.archive.analysis`. The compare filter: `tracetool.archive.compare_filter`.
Hosting artifacts: `tracetool.archive.hosting`. Reading restored data (ours or AppMap's):
`tracetool.archive.snapshot`. API diff: `tracetool.archive.apidiff`.

A CI flow: on the base branch, `tracetool archive` after the tests (upload the tar as artifact
`trace-archive-full_<sha>`); on a pull request, `tracetool restore -r <base> --output-dir
<trace_dir>` before the tests, `tracetool archive` after them (auto: incremental), then
`restore` base and head into `.trace/change-report/<base>-<head>/{base,head}`, `tracetool
compare -b <base>` and `tracetool compare-report <that dir>`.

Differences from AppMap (reference/appmap.md §3.8–3.11, lessons 13–15), on purpose:

- The archive holds recordings and derived files only, listed in a JSON manifest with sha256
  and size per file (AppMap tars everything in the directory, twice nested and gzipped); it is
  written and read with `tarfile` and every extracted file is verified. Derived files live in
  a hidden `.analysis/` folder, not in per-recording index folders beside the recordings.
- Incremental archives are real deltas: new or changed files plus a `deleted` list against the
  base manifest (AppMap's "incremental" archives are full copies and never delete). Unchanged
  recordings are not re-analyzed.
- Restore follows each incremental's base revision back to a full archive and applies the
  chain in history order (AppMap: alphabetical SHA order), from the hosting service too (AppMap
  takes incrementals from the local directory only); the token never leaves the API host.
- compare-filter keys are read the same way everywhere (snake_case, camelCase accepted).
- The change report adds `countDiff` (calls per query and route: N+1 growth),
  `recordingPaths`, `baseRevision`/`headRevision`, and a `description` per API difference; it
  has no `findingDiff` (no scanner). The API diff is ours, not `openapi-diff`: paths, methods,
  status codes and parameters (a new required parameter counts as breaking).
- SQL digests in our diagrams are not AppMap's (`tracetool.diagram.digests`): compare two
  revisions archived by the same tool. AppMap-restored directories are read as they are.
- `--clobber-output-dir` replaces an earlier report but keeps base/ and head/ (AppMap deletes
  the whole directory, restored data included, which then fails).
"""

from __future__ import annotations

from tracetool.archive.archive import ArchiveOptions, ArchiveResult, create_archive
from tracetool.archive.compare import CompareOptions, CompareResult, compare
from tracetool.archive.report import ReportOptions, write_report
from tracetool.archive.restore import RestoreOptions, RestoreResult, restore

__all__ = [
    "ArchiveOptions",
    "ArchiveResult",
    "CompareOptions",
    "CompareResult",
    "ReportOptions",
    "RestoreOptions",
    "RestoreResult",
    "compare",
    "create_archive",
    "restore",
    "write_report",
]
