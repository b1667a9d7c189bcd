"""Per-recording passes behind `tracetool.stats`: one streamed pass over the events of each file.

`overhead_batch(paths)` (directory mode, run in worker processes) pairs every call with its
return as AppMap's model does — by `parent_id`, or the innermost open call of the thread when a
return has none — and sums, per code object, the calls that returned and the return events'
`elapsed_instrumentation`. Calls that never returned are not counted. SQL calls are summed under
their raw text: naming them needs the SQL normalizer, which is only worth running when SQL
carries overhead at all (see `tracetool.stats.directory_stats`).

`function_sizes(path)` (single-file mode) counts the function call events (not SQL or HTTP) per
code object and their estimated size: the length of each call event as compact JSON, in UTF-16
code units like JavaScript's `JSON.stringify(event).length`, which AppMap reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import orjson

from tracetool.errors import TraceToolError
from tracetool.stats._names import Names
from tracetool.trace import events as ev
from tracetool.trace.document import gc_paused
from tracetool.trace.reader import guarded
from tracetool.trace.stream import iter_pairs, open_stream

SqlKey = tuple[str, str]  # (sql text, database type or "")
Key = Union[str, SqlKey]  # fqid, or raw SQL awaiting its name


@dataclass
class OverheadPartial:
    """Sums over some recordings: key -> [calls, seconds]; mergeable in any order."""

    sums: dict[Key, list[float]] = field(default_factory=dict)
    files: int = 0
    warnings: list[str] = field(default_factory=list)

    def merge(self, other: OverheadPartial) -> None:
        for key, (count, seconds) in other.sums.items():
            entry = self.sums.get(key)
            if entry is None:
                self.sums[key] = [count, seconds]
            else:
                entry[0] += count
                entry[1] += seconds
        self.files += other.files
        self.warnings.extend(other.warnings)


def _function_key(call: dict[str, Any]) -> tuple[Any, ...]:
    get = call.get
    return (get("defined_class"), get("method_id"), get("path"), get("lineno"), get("static"))


_SQL = "\0sql"


def _other_key(call: dict[str, Any]) -> tuple[str, ...]:
    sql = call.get("sql_query")
    if isinstance(sql, dict):
        return (_SQL, str(sql.get("sql") or ""), str(sql.get("database_type") or ""))
    return ("\0" + ev.kind(call), ev.route(call) or str(call.get("defined_class") or ""))


def _file_overhead(path: Path, names: Names) -> dict[Key, list[float]]:
    stream = open_stream(path, header_keys=("classMap",))
    # Sum under a raw key first (cheap: a tuple of the call's identifying fields) and name each
    # distinct key once at the end; a function call is identified by its defined_class,
    # method_id, path, lineno and static, anything else by its kind and text.
    raw_sums: dict[Any, list[Any]] = {}  # raw key -> [calls, seconds, sample call]
    number = (int, float)
    for call, ret in iter_pairs(stream.events()):
        if ret is None:
            continue
        get = call.get
        method_id = get("method_id")
        if (
            method_id is not None
            and "sql_query" not in call
            and "http_server_request" not in call
            and "http_client_request" not in call
        ):
            raw: Any = (get("defined_class"), method_id, get("path"), get("lineno"), get("static"))
        else:
            raw = _other_key(call)
        entry = raw_sums.get(raw)
        if entry is None:
            entry = raw_sums[raw] = [0, 0.0, call]
        entry[0] += 1
        seconds = ret.get("elapsed_instrumentation")
        if seconds and type(seconds) in number:
            entry[1] += seconds
    sums: dict[Key, list[float]] = {}
    recording = names.recording(stream.class_map)
    for raw, (count, seconds, call) in raw_sums.items():
        # (a `sql_query` that is not an object makes a 2-tuple: named like any other call)
        sql = raw[0] == _SQL and len(raw) == 3
        key: Key = raw[1:] if sql else recording.function(call)[0]
        entry = sums.get(key)
        if entry is None:
            sums[key] = [count, seconds]
        else:
            entry[0] += count
            entry[1] += seconds
    recording.close()
    return sums


def overhead_batch(paths: list[Path]) -> OverheadPartial:
    """Directory-mode sums for a batch of recordings; unreadable files become warnings."""
    partial = OverheadPartial()
    names = Names()
    # Parsed recordings are acyclic (and code objects are released): the cyclic GC would
    # only walk them again and again.
    with gc_paused():
        for path in paths:
            try:
                with guarded(path):
                    sums = _file_overhead(path, names)
            except TraceToolError as exc:
                partial.warnings.append(f"skipped {exc}")
                continue
            partial.merge(OverheadPartial(sums, 1))
    return partial


def js_length(encoded: bytes) -> int:
    """Length in UTF-16 code units of UTF-8 `encoded` (what JavaScript's `.length` reports)."""
    if encoded.isascii():
        return len(encoded)
    text = encoded.decode("utf-8", "replace")
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def function_sizes(path: Path) -> tuple[list[tuple[str, int, int, str | None]], int]:
    """(fqid, count, size, location) per function of one recording, and the number of calls."""
    stream = open_stream(path, header_keys=("classMap",))
    sums: dict[tuple[Any, ...], list[Any]] = {}
    calls = 0
    dumps = orjson.dumps
    for event in stream.events():
        if (
            event.get("event") != "call"
            or "sql_query" in event
            or "http_server_request" in event
            or "http_client_request" in event
        ):
            continue
        calls += 1
        key = _function_key(event)
        size = js_length(dumps(event))
        entry = sums.get(key)
        if entry is None:
            sums[key] = [1, size, event]
        else:
            entry[0] += 1
            entry[1] += size
    recording = Names().recording(stream.class_map)
    by_fqid: dict[str, list[Any]] = {}
    for count, size, sample in sums.values():
        fqid, location = recording.function(sample)
        entry = by_fqid.get(fqid)
        if entry is None:
            by_fqid[fqid] = [count, size, location]
        else:
            entry[0] += count
            entry[1] += size
    recording.close()
    rows = [(fqid, int(c), int(s), loc) for fqid, (c, s, loc) in by_fqid.items()]
    return rows, calls
