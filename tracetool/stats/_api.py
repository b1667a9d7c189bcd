"""The body of `tracetool.stats` (see its doc), imported on first use of one of its names."""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracetool.errors import NotFoundError, UsageError
from tracetool.stats._collect import OverheadPartial, function_sizes, overhead_batch
from tracetool.trace.reader import find_trace_files, guarded, skip_lines

SIZE_THRESHOLD = 1024 * 1024
DEFAULT_LIMIT = 10


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
    query_db: Path | str | None = None,
) -> DirectoryStats:
    """Largest recordings and instrumentation overhead of every recording below `directory`;
    the sums the index kept (`query_db`, default: the index of `directory`) for recordings it
    holds as they are now, the others read."""
    from tracetool.stats._kept import kept_sums
    from tracetool.workers import map_batches

    _check_limit(limit)
    root = Path(directory)
    if not root.is_dir():
        raise NotFoundError(f"{root}: no such directory")
    unusable: list[tuple[Path, str]] = []
    files = find_trace_files(root, unusable)
    stats = [(path, _stat(path)) for path in files]
    sized = [(path, size) for path, (size, _) in stats]
    big = sorted(
        ((p, s) for p, s in sized if s > threshold), key=lambda item: (-item[1], str(item[0]))
    )
    largest = tuple(LargeRecording(_relative(p, root), s) for p, s in big[:limit])

    total = OverheadPartial()
    kept = kept_sums(root, [(path, size, mtime_ns) for path, (size, mtime_ns) in stats], query_db)
    for rows in kept.values():
        total.add(
            (name, count, seconds) if not sql else ((name,), count, seconds)
            for name, count, seconds, sql in rows
        )
    todo = [(path, size) for path, size in sized if path not in kept]
    for partial in map_batches(overhead_batch, todo, workers=workers):
        total.merge(partial)
    # every recording's time, SQL left unnamed included (before `_name_sql` merges parts)
    seconds = math.fsum(itertools.chain.from_iterable(parts for _, parts in total.sums.values()))
    sums = _name_sql(total.sums)
    ranked = sorted(
        (
            (name, count, time)
            for name, count, time in ((n, c, math.fsum(parts)) for n, (c, parts) in sums.items())
            if time > 0
        ),
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


def _stat(path: Path) -> tuple[int, int]:
    """(size, mtime_ns) as the filesystem reports them ((0, -1) if the file vanished)."""
    try:
        st = os.stat(path)
    except OSError:
        return 0, -1
    return st.st_size, st.st_mtime_ns


def _name_sql(sums: dict[Any, list[Any]]) -> dict[str, list[Any]]:
    """Fold SQL keys into `query:` fqids — only when some SQL carries overhead.

    SQL keys are raw `(text, database type)` (named by the SQL normalizer) or `(fqid,)` (named
    by the index). Naming runs the normalizer on every distinct statement; when no SQL call has
    any instrumentation time, none of them can rank, so they are dropped unnamed (the same
    table; their time still counts in the total, see `directory_stats`).
    """
    named: dict[str, list[Any]] = {}
    raw = {k: v for k, v in sums.items() if isinstance(k, tuple)}
    for key, value in sums.items():
        if isinstance(key, str):
            named[key] = value
    if raw and any(time > 0 for _, parts in raw.values() for time in parts):
        from tracetool.stats._collect import sql_fqid

        for key, (count, parts) in raw.items():
            fqid = key[0] if len(key) == 1 else sql_fqid(*key)
            entry = named.get(fqid)
            if entry is None:
                named[fqid] = [count, list(parts)]
            else:
                entry[0] += count
                entry[1].extend(parts)
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
