"""A finished recording: compact events turned into an AppMap 1.x trace document.

`Recording` holds the metadata (a plain, mutable dict: callers add `name`, `labels`,
`test_status`, ...) and the session's compact event tuples. It renders them on demand:
- `to_dict()` — the whole document (version, metadata, classMap, events) as dicts;
- `write(path)` / `save(name, subdir, trace_dir)` — an atomic, streamed write: events are
  converted and serialized (orjson) in batches, so a million-call recording never exists twice
  in memory.
Event ids are renumbered 1..N and lanes (thread_id) 1..K in order of first appearance; the
classMap holds exactly the functions that have call events in this recording.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from tracetool.agent import values
from tracetool.agent.config import active_config
from tracetool.agent.functions import REGISTRY, FunctionInfo, build_class_map, relative_path
from tracetool.agent.metadata import base_metadata
from tracetool.agent.recorder import CALL, FCALL, FRETURN, RETURN
from tracetool.trace.document import FORMAT_VERSION, atomic_write_stream, dumps

if TYPE_CHECKING:
    from tracetool.agent.recorder import Session

BATCH = 20_000  # events converted and serialized at a time when writing
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
            "message": _message(current),
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


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception as err:
        return f"<str() failed ({type(err).__name__})>"
    return values.cap(text, 1000)


class Recording:
    """A finished recording (see module doc)."""

    def __init__(self, metadata: dict[str, Any], events: list[tuple]) -> None:
        self.metadata = metadata
        self._events = events
        self._class_map: list[dict[str, Any]] | None = None

    @classmethod
    def from_session(cls, session: Session, events: list[tuple], limit: int) -> Recording:
        md = base_metadata(session.recorder_name, session.recorder_type, session.name)
        md.update(session.metadata)
        if session.dropped:
            md["truncated"] = {
                "reason": "max_events",
                "max_events": limit,
                "dropped_calls": session.dropped,
            }
        return cls(md, events[: len(events)])

    @property
    def event_count(self) -> int:
        return len(self._events)

    @property
    def class_map(self) -> list[dict[str, Any]]:
        if self._class_map is None:
            infos = [REGISTRY[fid] for fid in {ev[3] for ev in self._events if ev[0] == FCALL}]
            try:
                labels = dict(active_config().labels)
            except Exception:
                labels = {}
            self._class_map = build_class_map(infos, labels)
        return self._class_map

    def iter_events(self) -> Iterator[dict[str, Any]]:
        """The events as AppMap dicts, in recording order."""
        ids: dict[int, int] = {}
        lanes: dict[int, int] = {}
        n = 0
        expand = values.expand
        registry = REGISTRY
        for ev in self._events:
            kind = ev[0]
            lane = lanes.get(ev[2])
            if lane is None:
                lane = lanes[ev[2]] = len(lanes) + 1
            if kind == FCALL or kind == CALL:
                n += 1
                ids[ev[1]] = n
                if kind == FCALL:
                    info: FunctionInfo = registry[ev[3]]
                    out: dict[str, Any] = {
                        "id": n,
                        "event": "call",
                        "thread_id": lane,
                        "defined_class": info.defined_class,
                        "method_id": info.method_id,
                        "path": info.path,
                        "lineno": info.lineno,
                        "static": info.static,
                    }
                    if ev[4] is not None:
                        out["receiver"] = expand(ev[4])
                    params = []
                    for i, packed in enumerate(ev[5]):
                        param = expand(packed, info.arg_names[i])
                        param["kind"] = info.kinds[i]
                        params.append(param)
                    out["parameters"] = params
                else:
                    out = {"id": n, "event": "call", "thread_id": lane, **ev[3]}
                yield out
                continue
            parent = ids.get(ev[3])
            if parent is None:  # its call was not recorded here (cannot happen; be safe)
                continue
            n += 1
            out = {"id": n, "event": "return", "thread_id": lane, "parent_id": parent}
            out["elapsed"] = ev[4]
            if kind == FRETURN:
                out["elapsed_instrumentation"] = ev[5]
                if ev[7] is not None:
                    out["exceptions"] = ev[7]
                elif ev[6] is not None:
                    out["return_value"] = expand(ev[6])
            elif kind == RETURN:
                out.update(ev[5])
            yield out

    def to_dict(self) -> dict[str, Any]:
        """The whole trace document."""
        return {
            "version": FORMAT_VERSION,
            "metadata": self.metadata,
            "classMap": self.class_map,
            "events": list(self.iter_events()),
        }

    def iter_bytes(self) -> Iterator[bytes]:
        """The serialized document in pieces (events in batches of `BATCH`)."""
        head = dumps(
            {"version": FORMAT_VERSION, "metadata": self.metadata, "classMap": self.class_map}
        )
        yield head[:-1] + b',"events":['
        batch: list[dict[str, Any]] = []
        first = True
        option = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
        for event in self.iter_events():
            batch.append(event)
            if len(batch) >= BATCH:
                yield (b"" if first else b",") + orjson.dumps(batch, option=option)[1:-1]
                first = False
                batch = []
        if batch:
            yield (b"" if first else b",") + orjson.dumps(batch, option=option)[1:-1]
        yield b"]}"

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
