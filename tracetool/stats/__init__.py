"""`stats`: how big recordings are and what recording them cost (spec "stats", Limits).

Directory mode, `directory_stats(directory)`:
* the recordings bigger than 1024 kb (1024 × 1024 bytes, as the filesystem reports), largest
  first, at most `limit`;
* per code object (fqid, as in `inspect`), the number of calls that returned and the sum of their
  returns' `elapsed_instrumentation` (the agent's own overhead, seconds); the `limit` functions
  with the highest overhead (functions without any are not listed), each with its share of the
  total, and the total over all recordings.
Single-file mode, `recording_stats(path)`: the functions of one recording (SQL and HTTP events
excluded) with their call count and estimated size (see `tracetool.stats._collect`), largest
first.

Every recording is streamed (`tracetool.trace.stream`), so memory stays flat however big a file
is; directories are processed on a process pool. A malformed file is skipped with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracetool.errors import NotFoundError, UsageError
from tracetool.stats._collect import OverheadPartial, function_sizes, overhead_batch
from tracetool.trace.reader import find_trace_files, guarded, skip_lines
from tracetool.trace.stream import file_size

SIZE_THRESHOLD = 1024 * 1024
DEFAULT_LIMIT = 10

__all__ = [
    "DEFAULT_LIMIT",
    "SIZE_THRESHOLD",
    "DirectoryStats",
    "FunctionOverhead",
    "FunctionSize",
    "LargeRecording",
    "RecordingStats",
    "directory_stats",
    "recording_stats",
]


@dataclass(frozen=True)
class LargeRecording:
    path: str  # relative to the directory
    size: int  # bytes


@dataclass(frozen=True)
class FunctionOverhead:
    name: str  # code-object fqid, e.g. function:app/models/User#save
    time: float  # seconds of elapsed_instrumentation, summed
    percent: float  # share of the total instrumentation time
    count: int  # calls that returned


@dataclass(frozen=True)
class DirectoryStats:
    directory: str
    recordings: int
    largest: tuple[LargeRecording, ...]
    functions: tuple[FunctionOverhead, ...]
    total_instrumentation: float  # seconds
    warnings: tuple[str, ...] = ()

    @property
    def has_instrumentation(self) -> bool:
        return bool(self.functions)


@dataclass(frozen=True)
class FunctionSize:
    function: str  # code-object fqid
    count: int
    size: int  # estimated bytes (UTF-16 code units of the compact JSON of each call)
    location: str | None


@dataclass(frozen=True)
class RecordingStats:
    path: str
    calls: int  # function call events
    functions: tuple[FunctionSize, ...]
    total_functions: int


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1 (got {limit})")


def directory_stats(
    directory: Path | str,
    *,
    limit: int | None = DEFAULT_LIMIT,
    threshold: int = SIZE_THRESHOLD,
    workers: int | None = None,
) -> DirectoryStats:
    """Largest recordings and instrumentation overhead of every recording below `directory`."""
    from tracetool.workers import map_batches

    _check_limit(limit)
    root = Path(directory)
    if not root.is_dir():
        raise NotFoundError(f"{root}: no such directory")
    unusable: list[tuple[Path, str]] = []
    files = find_trace_files(root, unusable)
    sized = [(path, file_size(path)) for path in files]
    big = sorted(
        ((p, s) for p, s in sized if s > threshold), key=lambda item: (-item[1], str(item[0]))
    )
    largest = tuple(LargeRecording(_relative(p, root), s) for p, s in big[:limit])

    total = OverheadPartial()
    for partial in map_batches(overhead_batch, sized, workers=workers):
        total.merge(partial)
    sums = _name_sql(total.sums)
    seconds = sum(time for _, time in sums.values())
    ranked = sorted(
        ((name, count, time) for name, (count, time) in sums.items() if time > 0),
        key=lambda row: (-row[2], -row[1], row[0]),
    )
    functions = tuple(
        FunctionOverhead(name, time, (100.0 * time / seconds) if seconds else 0.0, int(count))
        for name, count, time in ranked[:limit]
    )
    return DirectoryStats(
        directory=str(root),
        recordings=len(files),
        largest=largest,
        functions=functions,
        total_instrumentation=seconds,
        warnings=tuple(sorted([*total.warnings, *skip_lines(unusable)])),
    )


def _name_sql(sums: dict[Any, list[float]]) -> dict[str, list[float]]:
    """Fold raw-SQL keys into `query:` fqids — only when some SQL carries overhead.

    Naming runs the SQL normalizer on every distinct statement; when no SQL call has any
    instrumentation time, none of them can rank, so they are dropped unnamed (exactly the same
    table and total).
    """
    named: dict[str, list[float]] = {}
    raw = {k: v for k, v in sums.items() if isinstance(k, tuple)}
    for key, value in sums.items():
        if isinstance(key, str):
            named[key] = value
    if raw and any(time > 0 for _, time in raw.values()):
        from tracetool import sql

        for (text, dbtype), (count, time) in raw.items():
            fqid = "query:" + sql.normalize(text, dbtype or None)
            entry = named.setdefault(fqid, [0, 0.0])
            entry[0] += count
            entry[1] += time
    return named


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def recording_stats(path: Path | str, *, limit: int | None = DEFAULT_LIMIT) -> RecordingStats:
    """Functions of one recording with count and estimated size, largest first."""
    _check_limit(limit)
    p = Path(path)
    if not p.exists():
        raise NotFoundError(f"{p}: no such file")
    with guarded(p):
        rows, calls = function_sizes(p)
    rows.sort(key=lambda row: (-row[2], -row[1], row[0]))
    functions = tuple(FunctionSize(*row) for row in rows[:limit])
    return RecordingStats(str(p), calls, functions, len(rows))
