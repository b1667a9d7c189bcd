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

import gc
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional, TypedDict

import msgspec

from tracetool import accel
from tracetool.errors import TraceToolError
from tracetool.inspect.context import CodeObjects, Notable, context, unlink, walk
from tracetool.inspect.matching import Matcher
from tracetool.inspect.refs import CodeObjectRef, Match
from tracetool.inspect.sql_names import ANALYZE, IndexedSql, IndexReader, SqlNames
from tracetool.trace.checks import orjson_ints
from tracetool.trace.document import TraceDocument, from_data, gc_paused, parse
from tracetool.trace.reader import guarded
from tracetool.trace.slim import _Request
from tracetool.trace.stream import open_stream, read_small
from tracetool.trace.tree import CallNode, CallTreeBuilder, tree_links


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
    # The cyclic GC is paused for the whole batch, not per recording: re-enabled between
    # recordings, its collections walked the matches held so far again and again (~250 per
    # 1000 recordings, ~4% of the CPU). What a recording builds is acyclic once released
    # (`_search`, `_drop`) and freed by reference counting; the only cycles are sqlglot's
    # (the parse trees of the SQL analyzed for a context), collected with the young
    # generation between recordings, which never walks what older collections kept.
    young = gc.get_threshold()[0]
    try:
        with gc_paused():
            for path in paths:
                recording = recording_name(path, trace_dir)
                held = index.indexed.get(recording) if reader is not None and index else None
                try:
                    out[path] = (find_in(path, recording, matcher, reader, held), None)
                except TraceToolError as exc:
                    out[path] = ([], str(exc))
                if gc.get_count()[0] > young:
                    gc.collect(0)
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
            indexed = fresh and b'"eventUpdates"' not in raw
            doc = _parse(raw, str(path))
            del raw
            events = doc.events
            calls = matcher.screen(events)
            names = ANALYZE  # the index's rows are read once a call may match
            if indexed and calls != [] and reader is not None and held is not None:
                names = reader.names(held[0])
            cos: CodeObjects | None = None
            if calls is not None:
                # the matches, decided on the events: only the trees holding one are built
                if calls:
                    cos = CodeObjects(accel.class_map(doc.class_map), names)
                    calls = [i for i in calls if matcher.matches_call(events[i], cos)]
                if not calls:
                    _drop(cos)
                    del doc, events, cos
                    return []
                if len(calls) * FEW_MATCHES < len(events):
                    events, calls = _trees_holding(events, calls)
            found = _matches_in(doc.class_map, [(events, calls)], recording, matcher, names, cos)
            del cos
            # freed while the GC is paused: re-enabled, it would walk the whole document once
            del doc, events, calls
            return found
        stream = open_stream(
            path, header_keys=("classMap",), event_updates=False, fields=InspectEvent
        )
        screened = ((block, matcher.screen(block)) for block in stream.event_blocks())
        found = _matches_in(stream.class_map, screened, recording, matcher, ANALYZE)
        del stream
        return found


def _matches_in(
    class_map: Any,
    blocks: Iterable[tuple[list[dict[str, Any]], list[int] | None]],
    recording: str,
    matcher: Matcher,
    names: SqlNames,
    cos: CodeObjects | None = None,
) -> list[Match]:
    """Matches in the call trees of the events, searched tree by tree once more than
    `HELD_CALLS` calls are held (in document order: the same matches, in the same order).
    `blocks`: (events, the positions of the calls among them `Matcher.screen` keeps); `cos`:
    the recording's names, when the caller has them already.

    Only the calls `Matcher.screen` keeps are named and matched, and only the trees holding a
    match are walked; the classMap is read once a call may match."""
    matches: list[Match] = []
    builder = CallTreeBuilder()
    nodes = builder.nodes
    pending: list[CallNode] = []  # the nodes of the calls `screen` kept, not searched yet
    try:
        for block, calls in blocks:
            _add(builder, block)
            pending.extend(_nodes_of(builder, block, calls))
            if len(nodes) > HELD_CALLS:
                roots = builder.take_finished()
                taken = {id(root) for root in roots}
                now = [n for n in pending if id(_root(n)) in taken]
                if now:
                    pending = [n for n in pending if id(_root(n)) not in taken]
                    if cos is None:
                        cos = CodeObjects(accel.class_map(class_map), names)
                _search(roots, now, cos, recording, matcher, matches)
        if pending:
            if cos is None:
                cos = CodeObjects(accel.class_map(class_map), names)
        _search(builder.roots, pending, cos, recording, matcher, matches, last=True)
    finally:
        unlink(builder.roots)
        _drop(cos)
    return matches


def _drop(cos: CodeObjects | None) -> None:
    """Unlink a recording's code objects and names: freed by reference counting at once."""
    if cos is not None:
        for co in cos.cmap:
            co.parent = None
        cos.clear()


# Below one match per this many events, only the call trees holding a match are built:
# `tree_links` costs ~2/3 of building every tree, so it pays only when they are few (the
# rare function's recordings: ~1 of ~60 trees; the common one's hold matches in ~1 of 3).
FEW_MATCHES = 128


# `_trees_holding` and `CallTreeBuilder.add` in C (`tracetool._speedups`), or None
_TREES_HOLDING = accel.function("trees_holding")
_CALL_TREE = accel.function("call_tree")


def _add(builder: CallTreeBuilder, block: list[dict[str, Any]]) -> None:
    """`builder.add(block)`, by the accelerator where it is built (dict events in a list; a
    builder without `created`)."""
    fast = _CALL_TREE
    if (
        fast is not None
        and block
        and block.__class__ is list
        and block[0].__class__ is dict
        and builder.created is None
    ):
        done = fast(block, builder.roots, builder.nodes, builder.stacks, CallNode, dict.get, 0)
        if done is not NotImplemented:
            return
    builder.add(block)


def _trees_holding(
    events: list[dict[str, Any]], calls: list[int]
) -> tuple[list[dict[str, Any]], list[int]]:
    """The events of the call trees holding these calls (positions in `events`), with the
    calls' positions among them: searched alone, those trees are built as in the whole tree
    (`tree_links`), and the others cannot match. By the accelerator where it is built."""
    fast = _TREES_HOLDING
    if fast is not None:
        found = fast(events, calls)
        if found is not None:
            return found  # type: ignore[no-any-return]
    links = tree_links(events)
    wanted = {links[i] for i in calls}
    if len(wanted) == 1:
        (root,) = wanted
        kept = [i for i, link in enumerate(links) if link >= 0 and links[link] == root]
    else:
        kept = [i for i, link in enumerate(links) if link >= 0 and links[link] in wanted]
    if len(kept) == len(events):
        return events, calls
    at = {pos: n for n, pos in enumerate(kept)}
    return [events[i] for i in kept], [at[i] for i in calls]


def _nodes_of(
    builder: CallTreeBuilder, block: list[dict[str, Any]], calls: list[int] | None
) -> list[CallNode]:
    """The nodes `builder` just made of the calls at these positions of `block` (just added;
    None: of every call)."""
    nodes = builder.nodes
    events = (
        [e for e in block if e.get("event") == "call"]
        if calls is None
        else [block[i] for i in calls]
    )
    out = []
    for call in events:
        node = nodes.get(call.get("id"))
        if node is None or node.call is not call:  # an id held twice: the plain way
            wanted = {id(c) for c in events}
            return [n for n in walk(builder.roots) if id(n.call) in wanted]
        out.append(node)
    return out


def _root(node: CallNode) -> CallNode:
    while node.parent is not None:
        node = node.parent
    return node


def _search(
    roots: list[CallNode],
    candidates: list[CallNode],
    cos: CodeObjects | None,
    recording: str,
    matcher: Matcher,
    matches: list[Match],
    *,
    last: bool = False,
) -> None:
    """Append the matches among `candidates` (nodes of these whole trees), with their context,
    in pre-order of the trees in order; then drop the trees (and, unless they are the `last`
    ones, whose names the caller drops all at once, their nodes' names)."""
    try:
        if not candidates or cos is None:
            return
        held: dict[int, list[CallNode]] = {}  # id of a root -> its tree's matches
        for node in candidates:
            if matcher.matches(node, cos):
                held.setdefault(id(_root(node)), []).append(node)
        searched: list[CallNode] = []
        for root in roots:
            found = held.get(id(root))
            if found is None:
                continue
            # a match's context lies within its own tree: index the trees that hold a match
            # (a tree's nodes only when it holds two, as most hold one, or its names go)
            nodes = walk((root,)) if len(found) > 1 or not last else None
            if nodes is not None:
                searched.extend(nodes)
                ids = {id(n) for n in found}
                found = [n for n in nodes if id(n) in ids]
            notable = Notable(root, cos, nodes)
            for node in found:
                notable.next_match()
                values = context(node, cos, recording, notable)
                matches.append(Match(recording, node.id, values))
        if not last:
            pop = cos.pop
            for node in candidates:
                pop(node, None)
            for node in searched:
                pop(node, None)
    finally:
        unlink(roots)


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
    # kept as its JSON text: only a match's own return reads it (`context._return_value`)
    return_value: msgspec.Raw
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
        data = orjson_ints(_DOC.decode(raw), raw)  # (numbers as orjson reads them)
    except msgspec.DecodeError:
        return parse(raw, source)
    # decoded as `_Doc`, the events are a list of objects: `from_data` checks the document with
    # an empty list in their place (the same kind), not each event again
    events = data.get("events")
    if events:
        data["events"] = []
    doc = from_data(data, source)
    if events:
        doc.data["events"] = events
    return doc
