"""Recording sessions: where events go, in chunks the garbage collector does not walk.

`Session` is one recording in progress (see its docstring for the chunking and the event cap);
`ScopedRecording` is the handle of a scoped session (`Recorder.start_scoped`), and
`scoped_recording()` the context-manager form:

    with scoped_recording("GET /orders/{id}", recorder_name="requests",
                          recorder_type="requests") as scope:
        handle(request)
    scope.recording.save(subdir="requests")
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from tracetool.agent.config import max_events

if TYPE_CHECKING:
    from tracetool.agent.recorder import Recorder
    from tracetool.agent.recording import Recording


class _Discard(list):
    """The event list of a stopped session: late events from other threads are dropped."""

    def append(self, item: Any) -> None:
        pass


_DISCARD = _Discard()


CHUNK = 4096  # events per chunk (see Session)


class Session:
    """One recording in progress.

    Events go into `events`, a chunk of at most `room` entries; a full chunk is frozen into a
    tuple in `chunks`. The cyclic GC untracks tuples of plain values, so a frozen chunk costs a
    full collection nothing — a single list of a million events would be traversed by every
    one. `room` is also how the `limit` (max events) is enforced: one comparison per call.
    """

    __slots__ = (
        "chunks",
        "dropped",
        "events",
        "limit",
        "links",
        "metadata",
        "moves",
        "name",
        "recorder_name",
        "recorder_type",
        "room",
        "total",
    )

    def __init__(self, name: str | None, recorder_name: str, recorder_type: str) -> None:
        self.name = name
        self.recorder_name = recorder_name
        self.recorder_type = recorder_type
        self.events: list[tuple] = []
        self.chunks: list[tuple] = []
        self.total = 0
        self.limit = max_events()
        self.room = min(CHUNK, self.limit)
        self.dropped = 0
        self.metadata: dict[str, Any] = {}
        # lane -> call ids open where that lane (a task, a context-copying thread) was created,
        # innermost first: the finished document nests the lane under one of them
        self.links: dict[int, tuple[int, ...]] = {}
        # held generator call id -> (its lane, first id after its set-up, the lane it moves to)
        self.moves: dict[int, tuple[int, int, int]] = {}

    def overflow(self, event: tuple) -> bool:
        """The chunk is full: freeze it and append `event` to a new one, or drop it at the cap."""
        events = self.events
        if events:
            self.chunks.append(tuple(events))
            self.total += len(events)
            self.events = events = []
        remaining = self.limit - self.total
        if remaining <= 0:
            self.room = 0
            self.dropped += 1
            return False
        self.room = min(CHUNK, remaining)
        events.append(event)
        return True

    def finish(self) -> Recording:
        """Stop accepting events and build the Recording."""
        from tracetool.agent.recording import Recording

        chunks, limit = self.take()
        return Recording.from_session(self, chunks, limit)

    def take(self) -> tuple[list[tuple], int]:
        """Stop accepting events; (chunks with every event so far, the limit that applied)."""
        events, limit = self.events, self.limit
        self.events = _DISCARD
        self.limit = self.room = 0
        chunks = self.chunks
        if events:
            chunks.append(tuple(events))
        return chunks, limit


class ScopedRecording:
    """A running scoped session; `stop()` ends it and returns its Recording (idempotent)."""

    def __init__(self, recorder: Recorder, session: Session) -> None:
        self._recorder = recorder
        self._session = session
        self.recording: Recording | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        """Extra metadata merged into the finished recording (e.g. test_status)."""
        return self._session.metadata

    def stop(self) -> Recording:
        if self.recording is None:
            self._recorder._end_scoped(self._session)
            self.recording = self._session.finish()
        return self.recording


def _finish(session: Session) -> Recording:
    from tracetool.agent.recording import Recording

    chunks, limit = session.take()
    return Recording.from_session(session, chunks, limit)


@contextmanager
def scoped_recording(
    name: str | None = None,
    *,
    recorder_name: str = "scoped",
    recorder_type: str = "requests",
) -> Iterator[ScopedRecording]:
    """Record the block's thread/task; the Recording is `.recording` of the yielded handle."""
    from tracetool.agent.recorder import get_recorder

    scope = get_recorder().start_scoped(
        name, recorder_name=recorder_name, recorder_type=recorder_type
    )
    try:
        yield scope
    finally:
        scope.stop()
