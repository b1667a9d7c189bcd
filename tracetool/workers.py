"""Running a per-file function over many recordings on a process pool.

`map_batches(fn, files, workers=None)` splits the files into batches of similar total size
(largest files first, so one big recording does not finish last), runs `fn(batch)` in worker
processes and yields each batch's result as it completes. `fn` must be a module-level function
(it is pickled by name) and should return a small, mergeable summary rather than documents.

Small jobs run in this process: a pool costs ~50–100 ms to start, more than it saves on a few
files (and multiprocessing is only imported for a pool: ~8 ms a small job need not pay). Results arrive in completion order, so callers must merge them order-independently (or
sort) to keep output deterministic.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import multiprocessing.context

R = TypeVar("R")

# Below this much input (bytes) or this many files, a pool does not pay for itself.
INPROCESS_BYTES = 4 * 1024 * 1024
INPROCESS_FILES = 4


def default_workers() -> int:
    """CPUs this process may use (affinity-aware), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def batches(sized: Sequence[tuple[Path, int]], count: int) -> list[list[Path]]:
    """Split (path, size) pairs into about `count` batches of similar total size."""
    if not sized:
        return []
    ordered = sorted(sized, key=lambda item: (-item[1], str(item[0])))
    total = sum(size for _, size in ordered)
    count = max(1, min(count, len(ordered)))
    target = max(1, total // count)
    out: list[list[Path]] = []
    current: list[Path] = []
    current_size = 0
    for path, size in ordered:
        current.append(path)
        current_size += size
        if current_size >= target:
            out.append(current)
            current, current_size = [], 0
    if current:
        out.append(current)
    return out


def _context() -> multiprocessing.context.BaseContext:
    # fork starts workers in milliseconds; with other threads alive it is unsafe, so use
    # forkserver then (the daemon has threads; the CLI does not).
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context("spawn")


def map_batches(
    fn: Callable[[list[Path]], R],
    sized: Sequence[tuple[Path, int]],
    *,
    workers: int | None = None,
    per_worker: int = 4,
) -> Iterator[R]:
    """Yield `fn(batch)` for batches of `sized` (see module doc)."""
    if not sized:
        return
    workers = default_workers() if workers is None else max(1, workers)
    total = sum(size for _, size in sized)
    if workers == 1 or len(sized) <= INPROCESS_FILES or total <= INPROCESS_BYTES:
        yield fn([path for path, _ in sorted(sized, key=lambda item: str(item[0]))])
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed

    jobs = batches(sized, workers * per_worker)
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=_context()) as pool:
        futures = [pool.submit(fn, job) for job in jobs]
        for future in as_completed(futures):
            yield future.result()
