"""Per-recording passes behind `tracetool.stats`: one streamed pass over the events of each file.

`overhead_batch(paths)` (directory mode, run in worker processes) pairs every call with its
return as AppMap's model does — by `parent_id`, or the innermost open call of the thread when a
return has none — and sums, per code object, the calls that returned and the return events'
`elapsed_instrumentation`. Calls that never returned are not counted. SQL calls are summed under
their raw text: naming them needs the SQL normalizer, which is only worth running when SQL
carries overhead at all (see `tracetool.stats.directory_stats`). Each recording's sum per key is
kept apart (`OverheadPartial.sums`: key -> [calls, [seconds of each recording]]) and added up
once at the end with `math.fsum`, so the result depends neither on the order in which recordings
are merged nor on where their sums come from (`file_overhead`, kept by the index). A recording whose calls nest
plainly (every return closes the innermost open call of its thread; nearly all do) is paired
and summed in the same pass that reads its events (`_nested_sums`), any other is read again and
paired by `iter_pairs` (`_paired_sums`): the same sums, added in the same order.

`function_sizes(path)` (single-file mode) counts the function call events (not SQL or HTTP) per
code object and their estimated size: the length of each call event as compact JSON, in UTF-16
code units like JavaScript's `JSON.stringify(event).length`, which AppMap reports.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Optional, Union

import msgspec
import orjson

from tracetool import accel
from tracetool.errors import TraceToolError
from tracetool.lazyre import lazy
from tracetool.records import Record
from tracetool.stats import _scan
from tracetool.stats._names import Names, process_names
from tracetool.trace import events as ev
from tracetool.trace.document import gc_paused, reuse_freed_buffers
from tracetool.trace.reader import guarded
from tracetool.trace.stream import (
    EventHead,
    TraceStream,
    iter_pairs,
    open_stream,
    read_small,
    run_pass,
)

UNSET: Any = msgspec.UNSET
SqlKey = Union[tuple[str, str], tuple[str]]  # (sql text, database type or ""), or (its fqid,)
Key = Union[str, SqlKey]  # fqid, or SQL awaiting its name


class OverheadPartial(Record):
    """Sums over some recordings: key -> [calls, [seconds summed in each recording]];
    mergeable in any order. (A record, as the dataclass it was.)"""

    _fields = ("sums", "files", "warnings")

    def __init__(
        self,
        sums: dict[Key, list[Any]] | None = None,
        files: int = 0,
        warnings: list[str] | None = None,
    ) -> None:
        self.sums: dict[Key, list[Any]] = {} if sums is None else sums
        self.files = files
        self.warnings: list[str] = [] if warnings is None else warnings

    def add(self, sums: Iterable[tuple[Key, Any, float]]) -> None:
        """Add one recording's sums: (key, calls, seconds), a key possibly more than once."""
        get = self.sums.get
        for key, count, seconds in sums:
            entry = get(key)
            if entry is None:
                self.sums[key] = [count, [seconds]]
            else:
                entry[0] += count
                entry[1].append(seconds)
        self.files += 1

    def add_recording(self, sums: dict[Key, list[Any]]) -> None:
        """`add` of `_file_overhead`'s sums (key -> [calls, seconds]), without a tuple each."""
        mine = self.sums
        get = mine.get
        for key, (count, seconds) in sums.items():
            entry = get(key)
            if entry is None:
                mine[key] = [count, [seconds]]
            else:
                entry[0] += count
                entry[1].append(seconds)
        self.files += 1

    def add_named(self, raw_sums: dict[Any, list[Any]]) -> bool:
        """`add_recording` of `named_sums(raw_sums)` when the accelerator has named every entry
        (`_speedups.add_named`, in C); False, and nothing added, when it has not (or is not
        built)."""
        if _ADD_NAMED is None or not _ADD_NAMED(self.sums, raw_sums):
            return False
        self.files += 1
        return True

    def merge(self, other: OverheadPartial) -> None:
        for key, (count, parts) in other.sums.items():
            entry = self.sums.get(key)
            if entry is None:
                self.sums[key] = [count, parts]
            else:
                entry[0] += count
                entry[1].extend(parts)
        self.files += other.files
        self.warnings.extend(other.warnings)


_ADD_NAMED = accel.function("add_named")

# (defined_class, method_id, path, lineno, static): what identifies a function call
_function_key: Callable[[EventHead], tuple[Any, ...]] = operator.attrgetter(
    "defined_class", "method_id", "path", "lineno", "static"
)


_SQL = "\0sql"


def _other_key(call: EventHead) -> tuple[str, ...]:
    sql = call.sql_query
    if isinstance(sql, dict):
        return (_SQL, str(sql.get("sql") or ""), str(sql.get("database_type") or ""))
    event: Any = call  # an `EventHead` reads as its `to_dict()` for `kind` and `route`
    return ("\0" + ev.kind(event), ev.route(event) or str(call.get("defined_class") or ""))


_NUMBER = (int, float)
_NO_THREAD = object()  # unequal to any thread id


def _nested_sums(events: Iterable[EventHead]) -> Optional[dict[Any, list[Any]]]:
    """Raw key -> [calls, seconds, sample call] of the calls that returned, in one pass, for a
    recording whose calls nest plainly: every return names (by `parent_id`, or by having none)
    the innermost open call of its thread, and no call id is open twice. `iter_pairs` pairs
    such a recording exactly so; None for any other (the caller pairs it with `iter_pairs`)."""
    raw_sums: dict[Any, list[Any]] = {}
    get = raw_sums.get
    unset = UNSET
    number = _NUMBER
    function_key = _function_key
    stacks: dict[Any, list[EventHead]] = {}
    thread: Any = _NO_THREAD  # the thread of `stack`
    stack: list[EventHead] = []
    ids: list[Any] = []
    opened = ids.append
    for event in events:
        kind = event.event
        if kind == "call":
            opened(event.id)
            if event.thread_id != thread:
                thread = event.thread_id
                stack = stacks.setdefault(thread, [])
            stack.append(event)
            continue
        if kind != "return":
            continue
        if event.thread_id != thread:
            thread = event.thread_id
            stack = stacks.setdefault(thread, [])
        parent = event.parent_id
        if not stack:
            if parent is None:
                continue  # closes nothing
            return None
        call = stack.pop()
        if parent is not None and parent != call.id:
            return None
        method = call.method_id
        if (
            call.sql_query is unset
            and call.http_server_request is unset
            and call.http_client_request is unset
            and method is not None
            and method is not unset
        ):
            raw: Any = function_key(call)
        else:
            raw = _other_key(call)
        entry = get(raw)
        if entry is None:
            entry = raw_sums[raw] = [0, 0.0, call]
        entry[0] += 1
        seconds = event.elapsed_instrumentation
        if seconds and seconds.__class__ in number:
            entry[1] += seconds
    # a call id used twice (opened while the first is open, it hides that one from
    # `iter_pairs`): rare, checked once at the end
    if len(set(ids)) != len(ids):
        return None
    return raw_sums


def _paired_sums(events: Iterable[EventHead]) -> dict[Any, list[Any]]:
    """`_nested_sums` of any recording, by `iter_pairs`."""
    raw_sums: dict[Any, list[Any]] = {}
    get = raw_sums.get
    unset = UNSET
    number = _NUMBER
    for call, ret in iter_pairs(events):
        if ret is None:
            break  # the calls that never returned come last
        method = call.method_id
        if (
            call.sql_query is unset
            and call.http_server_request is unset
            and call.http_client_request is unset
            and method is not None
            and method is not unset
        ):
            raw: Any = _function_key(call)
        else:
            raw = _other_key(call)
        entry = get(raw)
        if entry is None:
            entry = raw_sums[raw] = [0, 0.0, call]
        entry[0] += 1
        seconds = ret.elapsed_instrumentation
        if seconds and seconds.__class__ in number:
            entry[1] += seconds
    return raw_sums


def _file_overhead(
    path: Path,
    names: Names,
    raw_bytes: Optional[bytes] = None,
    batch: Optional[OverheadPartial] = None,
) -> Optional[dict[Key, list[float]]]:
    """The recording's sums (`named_sums`), or None when they went to `batch` already (`add_named`)."""
    if raw_bytes is None and _scan.available():
        raw_bytes = read_small(path)  # (None when streamed: big files keep their reader)
    if raw_bytes is not None:
        scanned = _scan.scanned_sums(raw_bytes, _other_key, names.event_function, names.chain_names)
        if scanned is not None:
            if batch is not None and batch.add_named(scanned[0]):
                return None
            return _scanned_named(scanned, names)
    stream = open_stream(path, header_keys=("classMap",), heads=True, raw=raw_bytes)
    # Sum under a raw key first (cheap: a tuple of the call's identifying fields) and name each
    # distinct key once at the end; a function call is identified by its defined_class,
    # method_id, path, lineno and static, anything else by its kind and text.
    raw_sums = _nested_sums(stream.events())
    if raw_sums is None:  # calls that do not nest plainly: read again, paired by `iter_pairs`
        stream = open_stream(path, header_keys=("classMap",), heads=True, raw=raw_bytes)
        raw_sums = _paired_sums(stream.events())
    return named_sums(raw_sums, names.recording(stream.class_map), _struct_dict)


def scanned_overhead(
    raw: bytes, names: Names, validated: bool = False
) -> Optional[dict[Key, list[float]]]:
    """`_file_overhead` of a recording's bytes by the C accelerator (`_scan.scanned_sums`), or
    None where it does not read them (or is not built); `validated`: the bytes were parsed by
    orjson already (simdjson need not check them)."""
    scanned = _scan.scanned_sums(
        raw, _other_key, names.event_function, names.chain_names, validated
    )
    return None if scanned is None else _scanned_named(scanned, names)


def _scanned_named(scanned: tuple[Any, Any, memoryview], names: Names) -> dict[Key, list[float]]:
    """`named_sums` of `_scan.scanned_sums`' answer."""
    found, class_map, view = scanned
    samples = _scan.Samples(view)
    return named_sums(found, names.recording(class_map), samples.dict_of, samples.head)


def overhead_rows(
    sums: dict[Key, list[float]], analyses: Optional[dict[Any, Any]] = None
) -> list[list[Any]]:
    """`file_overhead`'s rows of `_file_overhead`'s sums. `analyses`: `sql.analyze` results by
    its arguments (`sql.returned`), read where they hold a key's SQL: `sql_fqid` is "query:"
    and its `normalized` text (`sql.normalize`'s)."""
    if not analyses:
        return [
            [key, count, seconds, 0]
            if isinstance(key, str)
            else [sql_fqid(*key), count, seconds, 1]
            for key, (count, seconds) in sums.items()
        ]
    rows: list[list[Any]] = []
    get = analyses.get
    for key, (count, seconds) in sums.items():
        if isinstance(key, str):
            rows.append([key, count, seconds, 0])
            continue
        rows.append([_known_fqid(get, *key), count, seconds, 1])
    return rows


def _known_fqid(get: Callable[[Any], Any], text: str, database_type: str) -> str:
    """`sql_fqid`, from `get((text, database type or None))`'s analysis where it has one."""
    info = get((text, database_type or None))
    return sql_fqid(text, database_type) if info is None else "query:" + info.normalized


def _struct_dict(call: Any) -> dict[str, Any]:
    return call.to_dict()  # type: ignore[no-any-return]


def named_sums(
    raw_sums: dict[Any, list[Any]],
    recording: Any,
    dict_of: Callable[[Any], dict[str, Any]],
    head_of: Optional[Callable[[Any], Any]] = None,
) -> dict[Key, list[float]]:
    """The sums under raw keys (`_nested_sums`: calls, seconds, a sample call; the call's name
    after them when `_scan` found it) under their names, each
    distinct raw key named once; `dict_of` gives a sample call as a dict, `head_of` as the call
    a function is named from when the classMap does not name it (the sample itself by default).
    Closes `recording` (the `Names.recording` of the file's classMap)."""
    sums: dict[Key, list[float]] = {}
    get = sums.get
    try:
        for raw, entry in raw_sums.items():
            # (a `sql_query` that is not an object makes a 2-tuple: named like any other call)
            key: Any = entry[3] if len(entry) > 3 else None  # (named already, by `_scan`)
            if key is None:
                if len(raw) == 5:  # a function call: named from its key, not read again
                    key = recording.plain_function(raw[1], raw[2], raw[3], entry[2], head_of)[0]
                elif raw[0] == _SQL and len(raw) == 3:
                    key = raw[1:]
                else:
                    key = recording.function(dict_of(entry[2]))[0]
            named = get(key)
            if named is None:
                sums[key] = [entry[0], entry[1]]
            else:
                named[0] += entry[0]
                named[1] += entry[1]
    finally:
        recording.close()
    return sums


def overhead_batch(paths: list[Path]) -> OverheadPartial:
    """Directory-mode sums for a batch of recordings; unreadable files become warnings."""
    partial = OverheadPartial()
    names = process_names()  # (a worker runs several batches: names made once)
    reuse_freed_buffers()  # each recording's bytes and class text: the last one's room
    # Parsed recordings are acyclic (and code objects are released): the cyclic GC would
    # only walk them again and again.
    with gc_paused():
        for path in paths:
            try:
                with guarded(path):
                    sums = _file_overhead(path, names, batch=partial)
            except TraceToolError as exc:
                partial.warnings.append(f"skipped {exc}")
                continue
            if sums is not None:  # (else added already, all at once)
                partial.add_recording(sums)
    return partial


def file_overhead(path: Path, raw_bytes: Optional[bytes] = None) -> list[list[Any]]:
    """What the index keeps of one recording for directory-mode stats: `[name, calls, seconds,
    sql]` per key of `_file_overhead`, its raw SQL named (`sql_fqid`; `sql` is 1 for those,
    they may repeat a name). Only names, counts and sums: no SQL text. `raw_bytes` are the
    file's bytes when already read. Raises `TraceToolError` for a file stats would skip."""
    with gc_paused(), guarded(path):
        sums = _file_overhead(path, process_names(), raw_bytes)
    assert sums is not None  # (no batch)
    return overhead_rows(sums)


def sql_fqid(text: str, database_type: str) -> str:
    """The code-object name of a SQL call summed under (text, database type or "")."""
    from tracetool import sql

    return "query:" + sql.normalize(text, database_type or None)


def js_length(encoded: bytes) -> int:
    """Length in UTF-16 code units of UTF-8 `encoded` (what JavaScript's `.length` reports)."""
    if encoded.isascii():
        return len(encoded)
    text = encoded.decode("utf-8", "replace")
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


# What orjson may write otherwise than the source's compact text: a `\\u` escape (orjson writes
# the character itself, or `\\n` for a newline) or `\\/`; a number with a fraction or exponent
# (`2.50`, `1e5`), `-0`, an integer past 64 bits. Numbers are found in the text mapped to
# classes (`_CLASSES`: separators `,:[]}` -> `:`, digits -> `0`, `.eE` -> `e`, `-` kept, the
# rest -> `x`): after whitespace is stripped a number always follows a separator, so a number
# token is `:` then `-?0+`; digits inside a string follow a quote (`x`), or are a false alarm.
_ESCAPE_RISK = lazy(rb"\\[u/]")
# (`:-?0+e|:-0:|:-?0{19}` as two searches, each with a two-byte literal prefix that re finds
# fast: `:` alone starts most keys and values; `0*+` is possessive, so an integer's digits are
# not tried again one by one)
_NUMBER_RISK = lazy(rb":0(?:0*+e|0{18})")
_NEGATIVE_RISK = lazy(rb":-0(?:0*+e|:|0{18})")


def _number_risk(text: bytes) -> bool:
    classes = text.translate(_CLASSES)
    return bool(_NUMBER_RISK.search(classes) or _NEGATIVE_RISK.search(classes))


def _classes() -> bytes:
    table = bytearray(b"x" * 256)
    for chars, mapped in ((b",:[]}", b":"), (b"0123456789", b"0"), (b".eE", b"e"), (b"-", b"-")):
        for c in chars:
            table[c] = mapped[0]
    return bytes(table)


_CLASSES = _classes()


def compact_length(text: Any) -> int:
    """`js_length(orjson.dumps(event))` of an event given as its JSON text, without parsing it
    when the text, whitespace stripped, is already what orjson writes (no escape or number it
    would write otherwise, see `_ESCAPE_RISK`). Duplicate keys are the one difference left
    (counted as written)."""
    compact = msgspec.json.format(text, indent=-1)
    if _ESCAPE_RISK.search(compact) or _number_risk(compact):
        compact = orjson.dumps(orjson.loads(compact))
    return js_length(compact)


# Events tested together for what orjson would write otherwise (`compact_lengths`)
_BATCH = 1024


def compact_lengths(texts: list[Any]) -> list[int]:
    """`compact_length` of each text, tested `_BATCH` at a time (`_batch_lengths`)."""
    if len(texts) <= _BATCH:
        return _batch_lengths(texts)
    out: list[int] = []
    for at in range(0, len(texts), _BATCH):
        out.extend(_batch_lengths(texts[at : at + _BATCH]))
    return out


def _batch_lengths(texts: list[Any]) -> list[int]:
    """`compact_length` of each text: formatted only where there is whitespace (all `format`
    changes), tested for what orjson would write otherwise all at once (a test that finds
    nothing in the joined texts finds nothing in any of them); the texts are sized one by one
    only when it finds something."""
    joined = b",".join(texts)
    spaced = _spaced(joined, len(texts))
    compacts = texts
    if spaced is None:  # (many: formatted all at once, which changes nothing when compact)
        array = b"[" + joined + b"]"
        if msgspec.json.format(array, indent=-1) != array:
            compacts = [msgspec.json.format(text, indent=-1) for text in texts]
            joined = b",".join(compacts)
    elif spaced:
        ends = list(itertools.accumulate([len(text) + 1 for text in texts]))  # (its comma's)
        compacts = list(texts)
        for at in {bisect.bisect_right(ends, at) for at in spaced}:
            compacts[at] = msgspec.json.format(texts[at], indent=-1)
        joined = b",".join(compacts)
    # (a backslash is found by memchr: the escape regex runs only where there is one)
    if (joined.find(b"\\") >= 0 and _ESCAPE_RISK.search(joined)) or _number_risk(joined):
        return [compact_length(text) for text in texts]
    if joined.isascii():
        return list(map(len, compacts))
    return [js_length(bytes(compact)) for compact in compacts]  # (a text may be a `Raw`)


_WHITESPACE = (b" ", b"\n", b"\r", b"\t")


def _spaced(joined: bytes, count: int) -> Optional[list[int]]:
    """Where `joined` (`count` texts joined by commas) holds whitespace bytes, found by memchr
    (`bytes.find`: a compact recording has a few, inside strings); None when there are more
    than one for every two texts."""
    found: list[int] = []
    most = count // 2
    for space in _WHITESPACE:
        at = joined.find(space)
        while at >= 0:
            found.append(at)
            if len(found) > most:
                return None
            at = joined.find(space, at + 1)
    return found


def function_sizes(path: Path) -> tuple[list[tuple[str, int, int, str | None]], int]:
    """(fqid, count, size, location) per function of one recording, and the number of calls."""
    reuse_freed_buffers()  # a big recording is read a block at a time
    with gc_paused():  # (the keys and entries are acyclic)
        return _function_sizes(path)


def _function_sizes(path: Path) -> tuple[list[tuple[str, int, int, str | None]], int]:
    return run_pass(path, _sizes, header_keys=("classMap",), heads=True)  # type: ignore[no-any-return]


def _sizes(stream: TraceStream) -> tuple[list[tuple[str, int, int, str | None]], int]:
    sums: dict[tuple[Any, ...], list[Any]] = {}  # key -> [calls, size, sample call]
    calls = 0
    unset = UNSET
    get = sums.get
    function_key = _function_key
    for heads, texts in stream.raw_head_blocks():
        entries: list[list[Any]] = []  # the sums entry of each text in `chosen`
        chosen: list[Any] = []
        for event, text in zip(heads, texts):
            if (
                event.event != "call"
                or event.sql_query is not unset
                or event.http_server_request is not unset
                or event.http_client_request is not unset
            ):
                continue
            key = function_key(event)
            entry = get(key)
            if entry is None:
                entry = sums[key] = [0, 0, event]
            entry[0] += 1
            entries.append(entry)
            chosen.append(text)
        calls += len(chosen)
        for entry, size in zip(entries, compact_lengths(chosen)):
            entry[1] += size
    recording = Names().recording(stream.class_map)
    by_fqid: dict[str, list[Any]] = {}
    for count, size, sample in sums.values():
        fqid, location = recording.function(sample.to_dict())
        entry = by_fqid.get(fqid)
        if entry is None:
            by_fqid[fqid] = [count, size, location]
        else:
            entry[0] += count
            entry[1] += size
    recording.close()
    rows = [(fqid, int(c), int(s), loc) for fqid, (c, s, loc) in by_fqid.items()]
    return rows, calls
