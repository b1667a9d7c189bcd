"""What directory-mode `stats` sums of a recording, from the events the index has already parsed.

The index keeps, per recording, the result of stats' own per-recording pass
(`tracetool.stats._collect.file_overhead`: code-object name, calls that returned, the sum of
their returns' `elapsed_instrumentation`, whether it is SQL). That pass decodes the file a second
time (msgspec `EventHead`s, after a byte scan for numbers msgspec and orjson read otherwise);
`recording_sums(events, class_map)` reads the same fields from the index's own parse instead
(orjson dicts, `eventUpdates` applied, non-object events dropped: what stats' own dict reader
gives it), pairs and keys the calls as `_collect`'s `_nested_sums` does, in the same order (a
float sum depends on it), and names each distinct key as `_collect._file_overhead` does, with a
sample call made an `EventHead` (`_head`) where a name is read from its other fields (a function
call's dict reads as its `EventHead` for every field `ClassMap.code_object_for` reads).

It covers what nearly every recording is: calls that nest plainly in each thread, id values
that hash. Anything else returns None and the caller runs `file_overhead` on the file's bytes
(`tests/index/test_overhead.py` holds the two to the same JSON on the shared corpus and on
recordings made to hit each rule).

The index's worker pairs the parsed events first (`event_sums`: `_raw_sums`, in C where the
accelerator is built, `overhead_pairs` in tracetool/_speedups_extract.c) and names them after
its extract (`extract_named`): a function call by the classMap function the extract resolved it
to, when found at the call's location (in C, `overhead_names`; stats' `Names` finds the same
one), any other call as stats names it. That replaced a second C scan of the raw bytes
(instructions, `worker.process` of 80 recordings of the benchmark's seed 1: the scan's
`nested_sums` 441 M, the pairing 260 M of which 64 M are the Python keys of HTTP calls). Where
the pairing declines, `recording_overhead` runs as before: given the bytes the index parsed,
stats' own C accelerator sums them (`_collect.scanned_overhead`, without simdjson's check:
orjson's parse was as strict), the same sums (it is stats' own pass).

The index names the sums' SQL after its extract (`recording_overhead`, then `named_rows`):
from the analyses the extract made (`tracetool.sql.returned`), whose `normalized` text is what
`sql_fqid` names a query by; a statement the extract did not analyze is named by `sql_fqid`.
"""

from __future__ import annotations

import operator
from collections.abc import Container
from typing import Any, Optional

import msgspec

from tracetool import accel
from tracetool.stats._collect import (
    _SQL,
    Key,
    _other_key,
    named_sums,
    overhead_rows,
    scanned_overhead,
)
from tracetool.stats._names import process_names
from tracetool.trace import events as ev
from tracetool.trace.codeobjects import function_call_key
from tracetool.trace.stream import _head

UNSET: Any = msgspec.UNSET
_NUMBER = (int, float)
_NO_THREAD = object()  # unequal to any thread id
_FUNCTION_KEY = operator.itemgetter("defined_class", "method_id", "path", "lineno", "static")
_PAIRS = accel.function("overhead_pairs")
_NAMES = accel.function("overhead_names")  # (`extract_named`'s test, in C)


def _raw_sums(events: list[dict[str, Any]]) -> Optional[dict[Any, list[Any]]]:
    """`_collect._nested_sums` of the events as dicts: raw key -> [calls, seconds, sample call
    event], or None when the calls do not nest plainly (module doc). In C where the accelerator
    is built (`overhead_pairs`, which declines to None a list of other than dicts too)."""
    if _PAIRS is not None:
        return _PAIRS(events, UNSET, _event_other_key, _SQL)  # type: ignore[no-any-return]
    return _py_raw_sums(events)


def _event_other_key(call: dict[str, Any]) -> Any:
    """`_other_key(_head(call))` read from the dict itself, without making the `EventHead`
    (most of the pairing's time in Python went to that, for each HTTP call): a head holds the
    fields `_other_key` reads (`sql_query`, both requests, `defined_class`, and those `ev.kind`
    tests) as they are, and reads `message` as absent, where the dict may have it (then
    `ev.kind` says MESSAGE of the dict and OTHER of its head)."""
    query = call.get("sql_query")
    if isinstance(query, dict):
        return (_SQL, str(query.get("sql") or ""), str(query.get("database_type") or ""))
    kind = ev.kind(call)
    if kind == ev.MESSAGE:
        kind = ev.OTHER
    return ("\0" + kind, ev.route(call) or str(call.get("defined_class") or ""))


def _py_raw_sums(events: list[dict[str, Any]]) -> Optional[dict[Any, list[Any]]]:
    """`_raw_sums` in Python: the reference of `overhead_pairs` (tracetool/_speedups_extract.c)."""
    raw_sums: dict[Any, list[Any]] = {}
    get = raw_sums.get
    unset = UNSET
    number = _NUMBER
    function_key = _FUNCTION_KEY
    stacks: dict[Any, list[dict[str, Any]]] = {}
    thread: Any = _NO_THREAD
    stack: list[dict[str, Any]] = []
    ids: list[Any] = []
    opened = ids.append
    for event in events:
        kind = event.get("event")
        if kind == "call":
            opened(event.get("id"))
            if event.get("thread_id") != thread:
                thread = event.get("thread_id")
                stack = stacks.setdefault(thread, [])
            stack.append(event)
            continue
        if kind != "return":
            continue
        if event.get("thread_id") != thread:
            thread = event.get("thread_id")
            stack = stacks.setdefault(thread, [])
        parent = event.get("parent_id")
        if not stack:
            if parent is None:
                continue  # closes nothing
            return None
        call = stack.pop()
        raw: Any
        if parent is not None and parent != call.get("id"):
            return None
        if "sql_query" in call:
            query = call["sql_query"]
            if query.__class__ is dict:
                raw = (_SQL, str(query.get("sql") or ""), str(query.get("database_type") or ""))
            else:
                raw = _other_key(_head(call))
        elif "http_server_request" in call or "http_client_request" in call:
            raw = _other_key(_head(call))
        else:
            try:
                raw = function_key(call)  # all five fields: nearly every function call
            except KeyError:
                raw = (
                    call.get("defined_class", unset),
                    call.get("method_id"),
                    call.get("path", unset),
                    call.get("lineno", unset),
                    call.get("static", unset),
                )
            if raw[1] is None:  # no method_id: named as stats names it
                raw = _other_key(_head(call))
        entry = get(raw)
        if entry is None:
            entry = raw_sums[raw] = [0, 0.0, call]
        entry[0] += 1
        seconds = event.get("elapsed_instrumentation")
        if seconds and seconds.__class__ in number:
            entry[1] += seconds
    if len(set(ids)) != len(ids):
        return None
    return raw_sums


def recording_sums(
    events: list[dict[str, Any]], class_map: Any, raw: Optional[bytes] = None
) -> Optional[list[list[Any]]]:
    """`file_overhead` of the recording whose parsed events (`eventUpdates` applied) and
    classMap these are, or None when the caller must run `file_overhead` itself (module doc):
    also when anything here fails (an id or thread that does not hash, a value naming cannot
    read), since only stats' own pass may decide that it refuses the recording. `raw`: the
    bytes orjson parsed them from, summed by stats' C accelerator where it reads them."""
    sums = recording_overhead(events, class_map, raw)
    return None if sums is None else named_rows(sums)


def recording_overhead(
    events: list[dict[str, Any]], class_map: Any, raw: Optional[bytes] = None
) -> Optional[dict[Key, list[float]]]:
    """`recording_sums` before its SQL is named: `_collect._file_overhead`'s sums (a SQL call's
    key its (text, database type or "")), rows by `named_rows`."""
    try:
        if raw is not None:
            sums = scanned_overhead(raw, process_names(), validated=True)
            if sums is not None:
                return sums
        raw_sums = _raw_sums(events)
        if raw_sums is None:
            return None
        return named_sums(raw_sums, process_names().recording(class_map), _dict_of)
    except Exception:
        return None


def named_rows(
    sums: dict[Key, list[float]], analyses: Optional[dict[Any, Any]] = None
) -> Optional[list[list[Any]]]:
    """`file_overhead`'s rows of `recording_overhead`'s sums (`analyses`: the SQL analyses
    made already, `_collect.overhead_rows`), or None when naming fails (as `recording_sums`)."""
    try:
        return overhead_rows(sums, analyses)
    except Exception:
        return None


def _dict_of(call: dict[str, Any]) -> dict[str, Any]:
    return _head(call).to_dict()  # type: ignore[no-any-return]


def event_sums(events: list[dict[str, Any]]) -> Optional[dict[Any, list[Any]]]:
    """Stats' raw sums of the parsed events (`eventUpdates` applied), before they are named:
    raw key -> [calls, seconds, sample call]; None where `recording_overhead` must decide
    (calls that do not nest plainly, anything failing). Named by `extract_named` once the
    extract has resolved the recording's function calls."""
    try:
        return _raw_sums(events)
    except Exception:
        return None


def extract_named(
    raw_sums: dict[Any, list[Any]],
    resolved: dict[tuple[Any, ...], tuple[Any, ...]],
    static: Container[int],
    class_map: Any,
) -> Optional[dict[Key, list[float]]]:
    """`recording_overhead`'s sums of `event_sums`' raw sums, named as stats names them, with the
    extract's help: a function call the extract resolved (`resolved`: `Extractor.fn_info`, by
    `function_call_key`) to a classMap function (`static`: the ids of the classMap's objects)
    found at the call's location is that function, as stats' `Names` finds it (the first
    classMap function at that location with that name; objects made for calls come after).
    Any other call is named as stats names it: where the extract made a dynamic object, which
    one a call gets may depend on the calls resolved before it, in another order than stats'.
    The names are merged in `named_sums`' order, so the float sums are the same. None when
    naming fails."""
    try:
        if _NAMES is not None and static.__class__ is set:
            _NAMES(raw_sums, resolved, static, UNSET)  # (names most entries, in C)
        names = _ResolvedNames(resolved, static, process_names().recording(class_map))
        return named_sums(raw_sums, names, _dict_of)
    except Exception:
        return None


class _ResolvedNames:
    """A `RecordingNames` that names a function call by `Extractor.fn_info` where it can
    (`extract_named`)."""

    def __init__(
        self,
        resolved: dict[tuple[Any, ...], tuple[Any, ...]],
        static: Container[int],
        recording: Any,
    ) -> None:
        self.resolved = resolved
        self.static = static
        self.recording = recording

    def plain_function(
        self, method_id: Any, path: Any, lineno: Any, call: Any, head_of: Any = None
    ) -> tuple[str, Optional[str]]:
        # (`call` is the event dict the extract read: the same key, with None for a missing
        # field; `ClassMap._function_for`'s location of it)
        if call.__class__ is dict:
            found = self.resolved.get(function_call_key(call))
            if found is not None and id(found[0]) in self.static:
                at, line = call.get("path"), call.get("lineno")
                co = found[0]
                if (
                    at is not None
                    and co.location == (f"{at}:{line}" if line is not None else str(at))
                    and co.name == str(call.get("method_id", ""))
                ):
                    return found[1], None
        return self.recording.plain_function(  # type: ignore[no-any-return]
            method_id, path, lineno, call, head_of
        )

    def function(self, call: Any) -> tuple[str, Optional[str]]:
        return self.recording.function(call)  # type: ignore[no-any-return]

    def close(self) -> None:
        self.recording.close()
