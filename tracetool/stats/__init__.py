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
Directory mode takes the sums of a recording from the query database instead when the index
kept them for the file as it is now (`tracetool.stats._kept`): the same numbers, so the output is
the same with or without an index.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracetool.stats._api import (
        DEFAULT_LIMIT,
        SIZE_THRESHOLD,
        DirectoryStats,
        FunctionOverhead,
        FunctionSize,
        LargeRecording,
        RecordingStats,
        directory_stats,
        recording_stats,
    )

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


def __getattr__(name: str) -> Any:
    # The names live in tracetool.stats._api, imported on first use: the indexer imports
    # tracetool.stats._collect (a stats sum per recording) without paying for the rest.
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("tracetool.stats._api"), name)
    globals()[name] = value
    return value
