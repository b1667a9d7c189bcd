"""Finding the events of one code object across recordings, with their context (spec `inspect`).

Contract:

- `parse_code_object("type:identifier")` → `CodeObjectRef` (`tracetool.inspect.refs`: the types
  and identifiers); which events match: `tracetool.inspect.matching`.
- `find(ref, trace_dir, query_db=None)` reads the recordings below `trace_dir` that can match:
  when query.db exists for `trace_dir` (or `query_db` is given), only those the index says may
  contain the code object, plus any file the index lacks or holds with another size/mtime
  (`tracetool.inspect.indexed`); otherwise every one (a cheap byte test skips files that cannot
  match). The index only chooses files, so results equal a full scan's. It returns `Match`es
  with, per match, the values of the spec's 11 fields (`FIELDS`, `tracetool.inspect.context`).
  Recordings are searched on the worker pool (`tracetool.workers`, `tracetool.inspect.scan`);
  matches come in file order.
- `summarize(matches)` → the distinct values of each field (sorted; events in scan order).
  Filters (`(field, value)` pairs) keep matches whose field holds the value.
- Not found: `known_identifiers`, `not_found_message` (`tracetool.inspect.suggest`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracetool.inspect.refs import FIELDS, TYPES, CodeObjectRef, Match, parse_code_object
from tracetool.inspect.scan import find_batch, recording_name
from tracetool.inspect.suggest import known_identifiers, not_found_message
from tracetool.trace.reader import find_trace_files, skip_lines


def find(
    ref: CodeObjectRef,
    trace_dir: Path,
    *,
    warn: Any = None,
    query_db: Path | str | None = None,
    use_index: bool = True,
    workers: int | None = None,
) -> list[Match]:
    """Every event matching `ref` in the recordings below `trace_dir` (module doc).

    Recordings are searched on a process pool (`tracetool.workers`); matches and warnings come
    in file order."""
    from tracetool.inspect.indexed import select
    from tracetool.trace.document import gc_paused
    from tracetool.trace.stream import file_size
    from tracetool.workers import INPROCESS_BYTES, INPROCESS_FILES, map_batches

    selection = select(ref, trace_dir, query_db) if use_index else None
    matches: list[Match] = []
    unusable: list[tuple[Path, str]] = []
    files = find_trace_files(trace_dir, unusable)
    if warn:
        for line in skip_lines(unusable):
            warn(line)
    chosen = [
        path
        for path in files
        if selection is None or selection.must_read(recording_name(path, trace_dir), path)
    ]
    found: dict[Path, tuple[list[Match], str | None]] = {}
    names = [recording_name(path, trace_dir) for path in chosen]
    index = selection.sql_names(names) if selection is not None else None
    search = functools.partial(find_batch, ref, trace_dir, index)
    sized = [(p, file_size(p)) for p in chosen]
    covered = index is not None and len(index.indexed) == len(names)
    if (
        not covered  # recordings the index holds take their SQL names from it
        and len(sized) > INPROCESS_FILES
        and sum(s for _, s in sized) > INPROCESS_BYTES
    ):
        from tracetool import sql

        sql.analyze("SELECT 1")  # SQL contexts import sqlglot: once here, not in every worker
    # The matches arrive pickled (~13 containers each): unpickled with the cyclic GC on, its
    # collections walked the ones held so far again and again (0.38 s → 0.06 s for the common
    # function's 18k matches). They are acyclic.
    with gc_paused():
        for part in map_batches(search, sized, workers=workers):
            found.update(part)
    for path in chosen:
        in_file, error = found[path]
        if error is not None:
            if warn:
                warn(error)
            continue
        matches.extend(in_file)
    return matches


def apply_filters(matches: Iterable[Match], filters: Iterable[tuple[str, str]]) -> list[Match]:
    """Matches whose field holds the value, for every (field, value) filter."""
    active = list(filters)
    return [m for m in matches if all(v in m.values.get(f, ()) for f, v in active)]


def summarize(matches: list[Match]) -> dict[str, list[str]]:
    """Distinct values of each field over the matches (events in scan order, others sorted)."""
    out: dict[str, list[str]] = {}
    for key, _ in FIELDS:
        values: list[str] = []
        seen: set[str] = set()
        for m in matches:
            for v in m.values.get(key, ()):
                if v not in seen:
                    seen.add(v)
                    values.append(v)
        out[key] = values if key == "events" else sorted(values)
    return out


def report(ref: CodeObjectRef, trace_dir: Path, matches: list[Match]) -> dict[str, Any]:
    """The JSON that non-interactive `inspect` prints."""
    return {
        "codeObject": ref.text,
        "traceDir": str(trace_dir),
        "recordings": len({m.recording for m in matches}),
        "matches": [m.to_json() for m in matches],
        **summarize(matches),
    }


__all__ = [
    "FIELDS",
    "TYPES",
    "CodeObjectRef",
    "Match",
    "apply_filters",
    "find",
    "known_identifiers",
    "not_found_message",
    "parse_code_object",
    "report",
    "summarize",
]
