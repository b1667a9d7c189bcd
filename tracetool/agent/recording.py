"""A finished recording: compact events turned into an AppMap 1.x trace document.

`Recording` holds the metadata (a plain, mutable dict: callers add `name`, `labels`,
`test_status`, ...) and the session's compact event tuples. It renders them on demand:
- `to_dict()` — the whole document (version, metadata, classMap, events) as dicts;
- `to_json()` — the document as JSON bytes (what DELETE /_trace/record sends);
- `write(path)` / `save(name, subdir, trace_dir)` — an atomic, streamed write: events are
  serialized one recorder chunk at a time, so a million-call recording never exists twice in
  memory.
Event ids are renumbered 1..N and lanes (thread_id) 1..K in order of first appearance; the
classMap holds exactly the functions that have call events in this recording.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import orjson

from tracetool.agent import values
from tracetool.agent.config import active_config
from tracetool.agent.functions import REGISTRY, build_class_map, relative_path
from tracetool.agent.metadata import base_metadata
from tracetool.agent.recorder import CALL, FCALL, FRETURN, RETURN
from tracetool.trace.document import FORMAT_VERSION, atomic_write_stream, dumps, gc_paused

if TYPE_CHECKING:
    from tracetool.agent.recorder import Session

MAX_CHAIN = 5  # exceptions listed per return (the exception and its causes)


def exception_chain(exc: BaseException) -> list[dict[str, Any]]:
    """`[{class, message, object_id, path?, lineno?}]`: the exception, then its causes."""
    out: list[dict[str, Any]] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(out) < MAX_CHAIN:
        seen.add(id(current))
        entry: dict[str, Any] = {
            "class": values.class_name(current),
            "message": values.exception_message(current),
            "object_id": id(current),
        }
        tb = current.__traceback__
        if tb is not None:
            while tb.tb_next is not None:
                tb = tb.tb_next
            try:
                root = str(active_config().root)
            except Exception:
                root = os.getcwd()
            entry["path"] = relative_path(tb.tb_frame.f_code.co_filename, root)
            entry["lineno"] = tb.tb_lineno
        out.append(entry)
        cause = current.__cause__
        if cause is None and not current.__suppress_context__:
            cause = current.__context__
        current = cause
    return out


def _encoder() -> Callable[[tuple], bytes | None]:
    """A function turning event tuples into JSON bytes, one event at a time.

    Writing is the agent's other hot path (a million calls → two million events). Captured values
    were encoded when they were recorded and each function's static members are serialized once,
    so an event is one `%`-format; ids and lanes are renumbered 1..N / 1..K on the way. (A closure
    over locals: measurably faster than a method reading attributes.)
    """
    functions: dict[int, bytes] = {}
    ids: dict[int, int] = {}
    lanes: dict[int, int] = {}
    n = 0

    def function(fid: int) -> bytes:
        info = REGISTRY[fid]
        static = _dumps(
            {
                "defined_class": info.defined_class,
                "method_id": info.method_id,
                "path": info.path,
                "lineno": info.lineno,
                "static": info.static,
            }
        )[1:-1]
        functions[fid] = static
        return static

    def encode(ev: tuple) -> bytes | None:
        nonlocal n
        kind = ev[0]
        lane = lanes.get(ev[2])
        if lane is None:
            lane = lanes[ev[2]] = len(lanes) + 1
        if kind == FCALL:
            n += 1
            ids[ev[1]] = n
            static = functions.get(ev[3]) or function(ev[3])
            if ev[4] is None:
                return b'{"id":%d,"event":"call","thread_id":%d,%b,"parameters":[%b]}' % (
                    n,
                    lane,
                    static,
                    ev[5],
                )
            return b'{"id":%d,"event":"call","thread_id":%d,%b,"receiver":%b,"parameters":[%b]}' % (
                n,
                lane,
                static,
                ev[4],
                ev[5],
            )
        if kind == CALL:
            n += 1
            ids[ev[1]] = n
            return _dumps({"id": n, "event": "call", "thread_id": lane, **ev[3]})
        parent = ids.get(ev[3])
        if parent is None:  # its call was not recorded here (cannot happen; be safe)
            return None
        n += 1
        if kind == RETURN:
            fields = {"id": n, "event": "return", "thread_id": lane, "parent_id": parent}
            fields["elapsed"] = ev[4]
            fields.update(ev[5])
            return _dumps(fields)
        # orjson formats floats several times faster than repr()
        times = _dumps({"elapsed": ev[4], "elapsed_instrumentation": ev[5]})[1:-1]
        if ev[7] is not None:
            outcome = b',"exceptions":' + _dumps(ev[7])
        elif ev[6] is not None:
            outcome = ev[6]  # `,"return_value":{…}`, encoded when recorded
        else:
            outcome = b""
        return b'{"id":%d,"event":"return","thread_id":%d,"parent_id":%d,%b%b}' % (
            n,
            lane,
            parent,
            times,
            outcome,
        )

    return encode


_NEVER = 1 << 62  # the return id of a call still open when the recording stopped


def fold_lanes(
    chunks: list[tuple],
    links: dict[int, tuple[int, ...]],
    moves: dict[int, tuple[int, int, int]] | None = None,
) -> list[tuple]:
    """Nest linked lanes under the calls that spawned them; the events as one chunk list.

    AppMap nests calls per `thread_id`, so an asyncio task (a BaseHTTPMiddleware's `call_next`,
    a task group's child) or a worker thread running with a task's context (`to_thread`,
    `run_in_threadpool`) would be a separate root. `links[lane]` names the calls that were open
    where the lane was created, innermost first. Each top-level call of such a lane moves, with
    everything below it, into the lane of the innermost linked call whose span contains it (a
    task that outlives its creator's call goes to an enclosing one, or stays where it is), as a
    child of that call, ordered among its other children by start. Overlapping siblings are
    thus serialized; spans and timings are unchanged.

    `moves[call]` = (lane, until, new lane): a held generator call (`Recorder.hold`) and the
    events of its set-up (ids below `until` in its lane) go to the new lane first.
    """
    events = [ev for chunk in chunks for ev in chunk]
    ends: dict[int, int] = {}
    calls: set[int] = set()
    lanes: dict[int, list[tuple]] = {}
    for ev in events:
        kind = ev[0]
        if kind == CALL or kind == FCALL:
            calls.add(ev[1])
        else:
            ends[ev[3]] = ev[1]
        seq = lanes.get(ev[2])
        if seq is None:
            seq = lanes[ev[2]] = []
        seq.append(ev)
    if moves:
        _apply_moves(lanes, moves)
    blocks: dict[int, list[list[tuple]]] = {}  # host call id -> moved blocks
    for lane, seq in lanes.items():
        ancestors = links.get(lane)
        if not ancestors:
            continue
        kept: list[tuple] = []
        block: list[tuple] | None = None
        root = 0
        stack: list[int] = []
        for ev in seq:
            kind = ev[0]
            if kind == CALL or kind == FCALL:
                if not stack:
                    end = ends.get(ev[1], _NEVER)
                    host = next(
                        (
                            a
                            for a in ancestors
                            if a in calls and a < ev[1] and ends.get(a, _NEVER) >= end
                        ),
                        None,
                    )
                    block = None
                    if host is not None:
                        block = []
                        blocks.setdefault(host, []).append(block)
                    root = ev[1]
                stack.append(ev[1])
            (kept if block is None else block).append(ev)
            if kind == RETURN or kind == FRETURN:
                if ev[3] in stack:
                    while stack and stack.pop() != ev[3]:
                        pass
                if not stack and ev[3] == root:
                    block = None
        lanes[lane] = kept
    if not blocks:
        return list(chunks)
    for pending in blocks.values():
        pending.sort(key=lambda b: b[0][1])
    if moves:
        _wrap_in_held(blocks, ends, moves)
    out: list[tuple] = []

    def flush(host: int, before: int, lane: int) -> None:
        pending = blocks.get(host)
        while pending and pending[0][0][1] < before:
            emit(pending.pop(0), lane)

    def emit(seq: list[tuple], lane: int) -> None:
        stack: list[int] = []
        for ev in seq:
            kind = ev[0]
            if kind == CALL or kind == FCALL:
                if stack:
                    flush(stack[-1], ev[1], lane)
                stack.append(ev[1])
            else:
                flush(ev[3], _NEVER, lane)
                if ev[3] in stack:
                    while stack and stack.pop() != ev[3]:
                        pass
            out.append(ev if ev[2] == lane else (ev[0], ev[1], lane, *ev[3:]))
        for host in reversed(stack):
            flush(host, _NEVER, lane)

    for lane, seq in lanes.items():
        if seq:
            emit(seq, lane)
    for pending in blocks.values():  # (a host that was never written: cannot happen; be safe)
        for block in pending:
            emit(block, block[0][2])
    return [tuple(out[i : i + 4096]) for i in range(0, len(out), 4096)]


def _wrap_in_held(
    blocks: dict[int, list[list[tuple]]], ends: dict[int, int], moves: dict[int, Any]
) -> None:
    """A held generator's call spans its `with` body: blocks beside it that it spans (the
    handler a FastAPI dependency wrapped, when both ended inside the middleware) go inside it."""
    for host, pending in list(blocks.items()):
        keep: list[list[tuple]] = []
        for block in pending:
            end = ends.get(block[0][1], _NEVER)
            wrapper = next(
                (
                    k
                    for k in reversed(keep)
                    if k[0][1] in moves and ends.get(k[0][1], _NEVER) >= end
                ),
                None,
            )
            if wrapper is None:
                keep.append(block)
            else:
                blocks.setdefault(wrapper[0][1], []).append(block)
        blocks[host] = keep
    for pending in blocks.values():
        pending.sort(key=lambda b: b[0][1])


def _apply_moves(lanes: dict[int, list[tuple]], moves: dict[int, tuple[int, int, int]]) -> None:
    for call_id, (lane, until, new) in sorted(moves.items()):
        seq = lanes.get(lane)
        if not seq:
            continue
        start = next((i for i, ev in enumerate(seq) if ev[1] == call_id), None)
        if start is None:
            continue
        end = start
        while end < len(seq) and seq[end][1] < until:
            end += 1
        moved = seq[start:end]
        del seq[start:end]
        lanes[new] = moved + lanes.get(new, [])


def _dumps(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)


class Recording:
    """A finished recording (see module doc)."""

    def __init__(
        self,
        metadata: dict[str, Any],
        chunks: list[tuple],
        links: dict[int, tuple[int, ...]] | None = None,
        moves: dict[int, tuple[int, int, int]] | None = None,
    ) -> None:
        self.metadata = metadata
        self._chunks = chunks
        # folded into the chunks when first written (`fold_lanes`)
        self._links = links
        self._moves = moves
        self._class_map: list[dict[str, Any]] | None = None

    @classmethod
    def from_session(cls, session: Session, chunks: list[tuple], limit: int) -> Recording:
        md = base_metadata(session.recorder_name, session.recorder_type, session.name)
        md.update(session.metadata)
        if session.dropped:
            md["truncated"] = {
                "reason": "max_events",
                "max_events": limit,
                "dropped_calls": session.dropped,
            }
        return cls(md, chunks, session.links or None, session.moves or None)

    @property
    def event_count(self) -> int:
        return sum(len(chunk) for chunk in self._chunks)

    def _events(self) -> Iterator[tuple]:
        for chunk in self._chunks:
            yield from chunk

    @property
    def class_map(self) -> list[dict[str, Any]]:
        if self._class_map is None:
            fids = {ev[3] for ev in self._events() if ev[0] == FCALL}
            try:
                labels = dict(active_config().labels)
            except Exception:
                labels = {}
            self._class_map = build_class_map([REGISTRY[f] for f in fids], labels)
        return self._class_map

    def iter_bytes(self) -> Iterator[bytes]:
        """The serialized document in pieces (one per recorder chunk of events)."""
        head = dumps(
            {"version": FORMAT_VERSION, "metadata": self.metadata, "classMap": self.class_map}
        )
        yield head[:-1] + b',"events":['
        if self._links or self._moves:
            with gc_paused():
                self._chunks = fold_lanes(self._chunks, self._links or {}, self._moves)
            self._links = self._moves = None
        encode = _encoder()
        first = True
        for chunk in self._chunks:
            with gc_paused():  # only acyclic bytes are made here (not held across the yield)
                encoded = [encode(ev) for ev in chunk]
            if None in encoded:  # (never in practice: a return whose call was not recorded)
                encoded = [p for p in encoded if p is not None]
            parts = cast("list[bytes]", encoded)
            if parts:
                yield (b"" if first else b",") + b",".join(parts)
                first = False
        yield b"]}"

    def to_json(self) -> bytes:
        """The whole document as JSON (e.g. the body of DELETE /_trace/record)."""
        return b"".join(self.iter_bytes())

    def to_dict(self) -> dict[str, Any]:
        """The whole trace document as dicts."""
        with gc_paused():
            return orjson.loads(self.to_json())  # type: ignore[no-any-return]

    def write(self, path: Path | str) -> Path:
        """Write the document atomically to `path`; returns it."""
        target = Path(path)
        atomic_write_stream(target, self.iter_bytes())
        return target

    def save(
        self,
        name: str | None = None,
        subdir: str | None = None,
        trace_dir: Path | str | None = None,
    ) -> Path:
        """Write under trace_dir, named after `name` (default: metadata.name)."""
        from tracetool.agent.writer import save_recording

        return save_recording(
            self, name or self.metadata.get("name") or "recording", subdir, trace_dir
        )
