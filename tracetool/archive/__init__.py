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
