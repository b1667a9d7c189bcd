"""Searching one recording for the events of a code object (run on the worker pool).

- `find_batch(ref, trace_dir, paths)` → per path, its matches (in document order) or the one
  error line of a recording whose content is defective (`TraceToolError`).
- A recording bigger than `tracetool.trace.stream.STREAM_THRESHOLD` is read event by event
  (`open_stream`, only the fields `InspectEvent` names); once more than `HELD_CALLS` calls are
  held, the finished call trees at the front are searched and dropped, so memory follows the
  largest call tree, not the file (a return naming a call of a dropped tree is then ignored:
  only a malformed recording returns a call after its caller returned). Smaller ones are
  decoded whole with the same fields (`InspectEvent`); anything unusual goes to the tolerant
  full parser, which reports it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional, TypedDict

import msgspec

from tracetool.errors import TraceToolError
from tracetool.inspect.context import CodeObjects, Notable, context
from tracetool.inspect.matching import Matcher
from tracetool.inspect.refs import CodeObjectRef, Match
from tracetool.inspect.sql_names import ANALYZE, IndexedSql, IndexReader, SqlNames
from tracetool.trace.codeobjects import ClassMap
from tracetool.trace.document import TraceDocument, from_data, gc_paused, parse
from tracetool.trace.reader import guarded
from tracetool.trace.slim import _Request
from tracetool.trace.stream import open_stream, read_small
from tracetool.trace.tree import CallNode, CallTreeBuilder, preorder, release


def recording_name(path: Path, trace_dir: Path) -> str:
    """`path` relative to `trace_dir` in POSIX form (itself when outside it)."""
    text, base = str(path), str(trace_dir)
    if os.sep == "/" and text.startswith(base) and text[len(base) : len(base) + 1] == "/":
        return text[len(base) + 1 :]  # what `relative_to` gives, without its per-part work
    try:
        return path.relative_to(trace_dir).as_posix()
    except ValueError:
        return str(path)


def find_batch(
    ref: CodeObjectRef, trace_dir: Path, index: IndexedSql | None, paths: list[Path]
) -> dict[Path, tuple[list[Match], str | None]]:
    """(matches, or the error line) of each recording of a batch (run in a worker process).
    `index`: the query database whose SQL names the recordings it holds may use (`sql_names`)."""
    matcher = Matcher(ref)
    reader = index.open() if index is not None and index.indexed else None
    out: dict[Path, tuple[list[Match], str | None]] = {}
    try:
        for path in paths:
            recording = recording_name(path, trace_dir)
            held = index.indexed.get(recording) if reader is not None and index else None
            try:
                out[path] = (find_in(path, recording, matcher, reader, held), None)
            except TraceToolError as exc:
                out[path] = ([], str(exc))
    finally:
        if reader is not None:
            reader.close()
    return out


# Calls held before finished call trees are searched and dropped (a recording bigger than
# `STREAM_THRESHOLD` is read event by event, so memory follows this, not the file size).
HELD_CALLS = 10_000


def find_in(
    path: Path,
    recording: str,
    matcher: Matcher,
    reader: IndexReader | None = None,
    held: tuple[int, int, int] | None = None,
) -> list[Match]:
    """The matches of one recording; any defect of its content is one TraceToolError.
    `held`: the (recording id, size, mtime_ns) `reader`'s index holds for it, if any."""
    fresh = False
    if reader is not None and held is not None:
        try:
            st = os.stat(path)
            fresh = (st.st_size, st.st_mtime_ns) == held[1:]
        except OSError:
            pass  # the reader reports the problem
    raw = read_small(path)
    if raw is not None and not matcher.might_match(raw):
        return []
    # The document and its call trees are acyclic once released: the cyclic GC would only walk
    # them again and again (everything is freed before it runs again).
    with guarded(path), gc_paused():
        if raw is not None:
            names = ANALYZE
            if fresh and reader is not None and held is not None and b'"eventUpdates"' not in raw:
                names = reader.names(held[0])
            doc = _parse(raw, str(path))
            del raw
            found = _matches_in(doc.class_map, [doc.events], recording, matcher, names)
            # freed while the GC is paused: re-enabled, it would walk the whole document once
            del doc
            return found
        stream = open_stream(
            path, header_keys=("classMap",), event_updates=False, fields=InspectEvent
        )
        found = _matches_in(stream.class_map, stream.event_blocks(), recording, matcher, ANALYZE)
        del stream
        return found


def _matches_in(
    class_map: Any,
    blocks: Iterable[list[dict[str, Any]]],
    recording: str,
    matcher: Matcher,
    names: SqlNames,
) -> list[Match]:
    """Matches in the call trees of the events, searched tree by tree once more than
    `HELD_CALLS` calls are held (in document order: the same matches, in the same order)."""
    matches: list[Match] = []
    builder = CallTreeBuilder()
    cos = CodeObjects(ClassMap.from_json(class_map), names)
    try:
        for block in blocks:
            builder.add(block)
            if len(builder.nodes) > HELD_CALLS:
                _search(builder.take_finished(), cos, recording, matcher, matches)
        _search(builder.roots, cos, recording, matcher, matches, last=True)
    finally:
        release(builder.roots)
        for co in cos.cmap:
            co.parent = None
        cos.clear()
    return matches


def _search(
    roots: list[CallNode],
    cos: CodeObjects,
    recording: str,
    matcher: Matcher,
    matches: list[Match],
    *,
    last: bool = False,
) -> None:
    """Append the matches in these whole trees, then drop them (and, unless they are the
    `last` ones, whose names the caller drops all at once, their nodes' names)."""
    pop = cos.pop
    try:
        for root in roots:
            # a match's context lies within its own tree: index the trees that hold a match
            nodes = preorder((root,))
            notable: Notable | None = None
            for node in nodes:
                if matcher.matches(node, cos):
                    if notable is None:
                        notable = Notable(nodes, cos)
                    notable.next_match()
                    values = context(node, cos, recording, notable)
                    matches.append(Match(recording, node.id, values))
            if not last:
                for node in nodes:
                    pop(node, None)
    finally:
        release(roots)


class InspectEvent(TypedDict, total=False):
    """The event fields a match and its context read; msgspec skips the others unparsed
    (parameters, receivers, messages, request headers)."""

    id: Any
    event: Any
    thread_id: Any
    parent_id: Any
    defined_class: Any
    method_id: Any
    path: Any
    lineno: Any
    static: Any
    labels: Any
    sql_query: Any
    http_server_request: Optional[_Request]
    http_client_request: Optional[_Request]
    http_server_response: Any
    http_client_response: Any
    return_value: Any
    exceptions: Any


class _Doc(TypedDict, total=False):
    version: Any
    metadata: Any
    classMap: Any
    events: list[InspectEvent]


_DOC = msgspec.json.Decoder(_Doc)


def _parse(raw: bytes, source: str) -> TraceDocument:
    """The recording with only the fields inspect reads (`InspectEvent`); anything unusual (an event
    or request that is not an object, invalid JSON) is read by the full parser, which reports it."""
    try:
        data = _DOC.decode(raw)
    except msgspec.DecodeError:
        return parse(raw, source)
    return from_data(data, source)
