"""The Recorder: sessions, event ids, and call nesting per thread and asyncio task.

One process-wide `Recorder` (`get_recorder()`) feeds any number of open sessions:
- the **remote** session (`start()` / `stop()`; POST/DELETE `/_trace/record`, `start_recording()`),
  at most one at a time — `start()` is atomic: of two concurrent starts exactly one returns True;
- the **process** session (`start_process()`; TRACETOOL_RECORD_PROCESS), independent of the remote
  one so remote recording keeps working while the whole process is recorded;
- **scoped** sessions (`start_scoped()` → `ScopedRecording`, or the `scoped_recording()` context
  manager), bound to the current thread / asyncio task through a context variable: they receive
  the events of that thread or task, of the asyncio tasks (and context-copying thread hand-offs
  such as `asyncio.to_thread`) it spawns, and of the `threading.Thread`s started inside it (once
  the agent is active: `follow_threads`), while the remote and process sessions get every event.
  Per-request recording and the pytest plugin use them; they nest and may overlap freely.
  ```python
  scope = get_recorder().start_scoped("test_checkout", recorder_name="pytest", recorder_type="tests")
  ...                                  # code under test
  recording = scope.stop()             # a Recording: .metadata (mutable), .to_dict(), .save(...)
  ```

Events are stored compactly — tuples of ints, floats and captured values already encoded as JSON
bytes, frozen in chunks (`tracetool.agent.sessions`) — and become a document only when a
recording is finished (`tracetool.agent.recording`). Ids are process-wide and
renumbered 1..N per document; `thread_id` is a *lane*: a number per OS thread, and a separate one
per asyncio task (tasks interleave on one thread, so AppMap's per-thread nesting would otherwise be
wrong). A thread that runs with a context copied from a task (`asyncio.to_thread`, Starlette's
threadpool) continues that task's lane, so a sync view nests under its HTTP request.

Nesting: a context variable holds an immutable linked stack of `_Node`s (one per open recorded
call; the bottom one is a lane anchor). Child tasks inherit a snapshot, so concurrent tasks never
see each other's calls. A return pops its own node (and anything left open above it).

`call_event(fields)` / `return_event(call_id, fields, elapsed)` are the integrations' entry points
(HTTP, SQL, messages); `enter()` / `leave()` / `leave_exception()` are the code-recording hooks.
Each session keeps at most `max_events` events; calls beyond it are dropped (their returns too)
and the document says so in `metadata.truncated`.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from tracetool.agent.clock import real_perf_counter
from tracetool.agent.sessions import ScopedRecording, Session, scoped_recording
from tracetool.agent.values import encode


def _no_loop() -> Any:
    """`_get_running_loop` until the app imports asyncio (no asyncio: no loop, no tasks)."""
    module = sys.modules.get("asyncio")
    if module is None:
        return None
    events = getattr(module, "events", None)
    finder = getattr(module, "current_task", None)
    getter = getattr(events, "_get_running_loop", None)
    if finder is None or getter is None:
        return None  # asyncio is being imported right now
    # Bind the real functions (the C versions where the interpreter has them). Importing
    # _asyncio ourselves before asyncio breaks current_task() on 3.9, so we never do.
    global _get_running_loop, _current_task
    _current_task = finder
    _get_running_loop = getter
    return getter()


_get_running_loop: Callable[[], Any] = _no_loop
_current_task: Callable[[Any], Any] = lambda loop: None  # noqa: E731


if TYPE_CHECKING:
    from tracetool.agent.functions import FunctionInfo
    from tracetool.agent.recording import Recording

__all__ = ["Recorder", "ScopedRecording", "Session", "get_recorder", "scoped_recording"]

_RETURN_VALUE = b',"return_value":{'

# event tuple kinds
CALL, RETURN, FCALL, FRETURN = 0, 1, 2, 3


# A node is a list (10x cheaper to create than an object): an open call on a lane's stack, or
# the lane's anchor at the bottom (call id None). Fields by index:
PARENT, LANE, TASK, CALL_ID, INFO, CODE, FRAME, TARGETS, START, INSTR, DONE, EVENT = range(12)
_Node = list  # [parent, lane, task, call_id, info, code, frame, targets, start, instr, done, event]


def _anchor(parent: Any, lane: int, task: Any) -> list:
    return [parent, lane, task, None, None, None, None, (), 0.0, 0.0, True, None]


_STACK: ContextVar[Any] = ContextVar("tracetool_stack", default=None)
_SCOPE: ContextVar[tuple[Session, ...]] = ContextVar("tracetool_scope", default=())
# Set while a generator-based context manager enters (`hold_generator`): [caller's top, held node]
_HOLD: ContextVar[Any] = ContextVar("tracetool_hold", default=None)
MAX_LINK = 16  # ancestor calls remembered for a new lane (see `Recorder._top`)


def _ancestors(node: Any) -> tuple[int, ...]:
    """The call ids open in `node`'s chain, innermost first (a new lane's candidate parents)."""
    out: list[int] = []
    depth = 0
    while node is not None and depth < 4 * MAX_LINK and len(out) < MAX_LINK:
        if node[CALL_ID] is not None:
            out.append(node[CALL_ID])
        node = node[PARENT]
        depth += 1
    return tuple(out)


_thread_start_patched = False


def follow_threads() -> None:
    """Make `threading.Thread`s started inside a scoped recording record into it as well.

    Threads do not inherit context variables (before 3.14), so `start()` hands the starting
    thread's scopes to the new one. Only the scopes travel, not the call stack: the new thread
    gets its own lane. Thread-pool workers are left alone — they outlive the task that happened
    to create them and serve everyone.
    """
    global _thread_start_patched
    if _thread_start_patched:
        return
    _thread_start_patched = True
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        scope = _SCOPE.get()
        target = getattr(self, "_target", None)
        if scope and getattr(target, "__module__", "") != "concurrent.futures.thread":
            run = self.run

            def run_in_scope() -> None:
                _SCOPE.set(scope)
                run()

            self.run = run_in_scope  # type: ignore[method-assign]
        original(self)

    threading.Thread.start = start  # type: ignore[method-assign]


def current_node() -> Any:
    return _STACK.get()


def _pop(node: list) -> None:
    """Remove `node` (and whatever was left open above it) from this context's stack."""
    top = _STACK.get()
    if top is node:
        _STACK.set(node[PARENT])
        return
    probe, depth = top, 0
    while probe is not None and depth < 256:
        if probe is node:
            _STACK.set(node[PARENT])
            return
        probe, depth = probe[PARENT], depth + 1
    # not on this context's stack (closed from elsewhere): leave the stack as it is


class Recorder:
    """Process-wide event sink (see module doc)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._remote: Session | None = None
        self._process: Session | None = None
        self._globals: tuple[Session, ...] = ()
        self._ambient: tuple[Session, ...] = ()  # test-runner sessions (`start_ambient`)
        self._scoped = 0
        self._ids = itertools.count(1)
        self._lanes = itertools.count(1)
        self._open: dict[int, list] = {}
        self._held: dict[int, list] = {}  # frame id -> held generator node (sys.monitoring)
        # True while any session is open: the instrumentation's idle check
        self.active = False
        self._listeners: list[Any] = []  # objects whose `.on` mirrors `active`

    def add_listener(self, obj: Any) -> None:
        """Keep `obj.on` equal to `active` (the rewritten code's idle check)."""
        self._listeners.append(obj)
        obj.on = self.active

    # -- sessions ---------------------------------------------------------------------------
    def _refresh(self) -> None:
        self._globals = (
            tuple(s for s in (self._process, self._remote) if s is not None) + self._ambient
        )
        self.active = bool(self._globals) or self._scoped > 0
        for listener in self._listeners:
            listener.on = self.active

    def start(
        self,
        *,
        recorder_name: str = "remote",
        recorder_type: str = "remote",
        name: str | None = None,
    ) -> bool:
        """Start the remote session; False if one already runs (atomic). Unnamed, it is named
        `remote recording <start time>` (every document has a `metadata.name`)."""
        if name is None:
            import time

            from tracetool.agent.clock import wall_time

            name = time.strftime("remote recording %Y-%m-%d %H:%M:%S", time.localtime(wall_time()))
        with self._lock:
            if self._remote is not None:
                return False
            self._remote = Session(name, recorder_name, recorder_type)
            self._refresh()
            return True

    def is_recording(self) -> bool:
        """Whether the remote session runs (GET /_trace/record)."""
        return self._remote is not None

    def finish(self) -> Recording | None:
        """Stop the remote session; its Recording, or None if none runs."""
        with self._lock:
            session = self._remote
            if session is None:
                return None
            self._remote = None
            self._refresh()
        return session.finish()

    def stop(self) -> dict | None:
        """Stop the remote session; the trace document dict, or None if none runs."""
        recording = self.finish()
        return None if recording is None else recording.to_dict()

    def start_process(self, name: str | None = None) -> bool:
        """Start the whole-process session; False if it already runs."""
        with self._lock:
            if self._process is not None:
                return False
            self._process = Session(name, "process", "process")
            self._refresh()
            return True

    def drop_process(self) -> None:
        """Forget the process session without building its recording (in a forked child)."""
        self._lock = threading.Lock()  # another thread of the parent may have held it at fork
        with self._lock:
            session = self._process
            self._process = None
            self._refresh()
        if session is not None:
            session.take()

    def finish_process(self) -> Recording | None:
        with self._lock:
            session = self._process
            self._process = None
            self._refresh()
        return None if session is None else session.finish()

    def start_scoped(
        self,
        name: str | None = None,
        *,
        recorder_name: str = "scoped",
        recorder_type: str = "requests",
    ) -> ScopedRecording:
        """Record the current thread/task (and tasks it spawns) until `.stop()`."""
        session = Session(name, recorder_name, recorder_type)
        with self._lock:
            self._scoped += 1
            self._refresh()
        _SCOPE.set((*_SCOPE.get(), session))
        return ScopedRecording(self, session)

    def start_ambient(
        self,
        name: str | None = None,
        *,
        recorder_name: str = "pytest",
        recorder_type: str = "tests",
    ) -> AmbientRecording:
        """Record everything the process runs until `.stop()`: every thread and task, like the
        process session. For a test runner: whatever runs while a test runs belongs to it —
        a live server's thread started by a session fixture, a ThreadPoolExecutor's workers —
        and `pause()`/`resume()` let a fixture's set-up go to its own recording instead."""
        session = Session(name, recorder_name, recorder_type)
        handle = AmbientRecording(self, session)
        handle.resume()
        return handle

    def _set_ambient(self, session: Session, on: bool) -> None:
        with self._lock:
            rest = tuple(s for s in self._ambient if s is not session)
            self._ambient = (*rest, session) if on else rest
            self._refresh()

    def _end_scoped(self, session: Session) -> None:
        current = _SCOPE.get()
        if session in current:
            _SCOPE.set(tuple(s for s in current if s is not session))
        with self._lock:
            self._scoped -= 1
            self._refresh()

    def add_metadata(self, key: str, value: Any) -> None:
        """Set `metadata[key]` in every session that receives events here (e.g. frameworks)."""
        for session in (*self._globals, *_SCOPE.get()):
            session.metadata[key] = value

    # -- nesting ----------------------------------------------------------------------------
    def _targets(self) -> tuple[Session, ...]:
        scope = _SCOPE.get()
        return self._globals + scope if scope else self._globals

    def _top(self, targets: tuple[Session, ...]) -> list:
        """The current lane's innermost node, creating the lane anchor when needed.

        A lane is an asyncio task, or a thread. A task inherits a snapshot of its creator's
        stack and a worker thread may run with a context copied from a task (`to_thread`,
        `run_in_threadpool`, anyio worker threads): such a context gets its own lane, linked
        to the calls open where it was created (`Session.links`), and the finished document
        nests the lane's calls under the innermost of those calls that spans them
        (`tracetool.agent.recording.fold_lanes`). Links follow context variables, never OS
        threads: a pool worker or server thread serving many requests links each one apart.
        """
        top = _STACK.get()
        loop = _get_running_loop()
        if loop is None:
            if top is None or top[TASK] is not None:
                top = self._new_lane(top, None, targets)
            return top
        task = _current_task(loop)
        if top is None or (task is not None and top[TASK] is not task):
            top = self._new_lane(top, task, targets)
        return top

    def _new_lane(self, parent: Any, task: Any, targets: tuple[Session, ...]) -> list:
        lane = next(self._lanes)
        top = _anchor(parent, lane, task)
        _STACK.set(top)
        if parent is not None:
            ancestors = _ancestors(parent)
            if ancestors:
                for session in targets:
                    session.links[lane] = ancestors
        return top

    @staticmethod
    def _append_call(targets: tuple[Session, ...], event: tuple) -> bool:
        recorded = False
        for session in targets:
            events = session.events
            if len(events) < session.room:
                events.append(event)
                recorded = True
            elif session.overflow(event):
                recorded = True
        return recorded

    # -- integration events -------------------------------------------------------------------
    def call_event(self, fields: dict) -> int | None:
        """Append a call event with `fields`; its id, or None when nothing records here."""
        scope = _SCOPE.get()
        targets = self._globals + scope if scope else self._globals
        if not targets:
            return None
        top = self._top(targets)
        call_id = next(self._ids)
        lane = top[LANE]
        if not self._append_call(targets, (CALL, call_id, lane, fields)):
            return None
        node = [top, lane, top[TASK], call_id, None, None, None, targets, 0.0, 0.0, False, None]
        self._open[call_id] = node
        _STACK.set(node)
        return call_id

    def return_event(self, call_id: int | None, fields: dict, elapsed: float) -> None:
        """Append the return of `call_id` (no-op for None) and pop it from the stack."""
        if call_id is None:
            return
        node = self._open.pop(call_id, None)
        if node is None:
            return
        _pop(node)
        event = (RETURN, next(self._ids), node[LANE], call_id, elapsed, fields)
        for session in node[TARGETS]:
            session.events.append(event)

    def cancel_call(self, call_id: int | None) -> None:
        """Take back the call event `call_id` (and pop it): an integration call that cannot get
        a valid return. Looked for at the end of each session's current chunk; one already
        frozen gets an empty return instead."""
        if call_id is None:
            return
        node = self._open.pop(call_id, None)
        if node is None:
            return
        _pop(node)
        for session in node[TARGETS]:
            events = session.events
            for i in range(len(events) - 1, max(-1, len(events) - 1025), -1):
                event = events[i]
                if event[0] == CALL and event[1] == call_id:
                    del events[i]
                    break
            else:
                events.append((RETURN, next(self._ids), node[LANE], call_id, 0.0, {}))

    # -- code recording ---------------------------------------------------------------------
    def enter(
        self,
        info: FunctionInfo,
        frame: Any = None,
        args: tuple | None = None,
        code: Any = None,
        perf_counter: Callable[[], float] = real_perf_counter(),  # bound once: see agent.clock
    ) -> list | None:
        """Record a call of `info` (arguments from `args`, else from `frame`); its node or None."""
        t0 = perf_counter()
        scope = _SCOPE.get()
        targets = self._globals + scope if scope else self._globals
        if not targets:
            return None
        if len(targets) == 1 and not targets[0].room:
            targets[0].dropped += 1  # at its cap: skip the work (the common case of one session)
            return None
        top = _STACK.get()
        if top is None or top[TASK] is not None or _get_running_loop() is not None:
            top = self._top(targets)
        if info.shallow:
            caller = top[INFO]
            if caller is not None and caller.package == info.package:
                return None
        if args is None:
            local = frame.f_locals
            args = tuple([local.get(n) for n in info.arg_names])
            receiver = encode(local.get(info.receiver_name)) if info.receiver else None
        elif info.receiver:
            receiver = encode(args[0])
            args = args[1:]
        else:
            receiver = None
        heads = info.param_heads
        n = len(args)
        if n == 1:
            params = encode(args[0], heads[0])
        elif n == 0:
            params = b""
        else:
            params = b",".join([encode(a, heads[i]) for i, a in enumerate(args)])
        call_id = next(self._ids)
        lane = top[LANE]
        event = (FCALL, call_id, lane, info.fid, receiver, params)
        if len(targets) == 1:
            session = targets[0]
            events = session.events
            if len(events) < session.room:
                events.append(event)
            elif not session.overflow(event):
                return None
        elif not self._append_call(targets, event):
            return None
        t1 = perf_counter()
        node = [
            top,
            lane,
            top[TASK],
            call_id,
            info,
            code,
            frame,
            targets,
            t1,
            t1 - t0,
            False,
            event,
        ]
        _STACK.set(node)
        return node

    def resume(self, node: list, perf_counter: Callable[[], float] = real_perf_counter()) -> None:
        """Open a new activation of a suspended generator `node` (same function and arguments);
        a held one (`hold`) continues its single call instead."""
        first = node[EVENT]
        if node[DONE] is None:
            self.unhold(node)
            return
        if not node[DONE] or first is None:
            return
        t0 = perf_counter()
        top = self._top(node[TARGETS])
        call_id = next(self._ids)
        event = (FCALL, call_id, top[LANE], first[3], first[4], first[5])
        if not self._append_call(node[TARGETS], event):
            return
        node[PARENT], node[LANE], node[TASK] = top, top[LANE], top[TASK]
        node[CALL_ID] = call_id
        node[DONE] = False
        _STACK.set(node)
        node[START] = t1 = perf_counter()
        node[INSTR] = t1 - t0

    # -- generator context managers: one call from `__enter__` to `__exit__` ------------------
    @staticmethod
    def hold_generator() -> Any:
        """Called by a generator context manager's `__enter__` before it starts its generator:
        the generator's first yield then keeps its call open (`hold`) instead of returning, so
        set-up, the `with` body's wait and tear-down are ONE call (a FastAPI `yield`
        dependency, a `@contextmanager` helper). Returns the token for `release_hold`."""
        return _HOLD.set([_STACK.get(), None])

    def release_hold(self, token: Any) -> Any:
        """End `hold_generator`'s window; the held node (or None)."""
        held = _HOLD.get()
        _HOLD.reset(token)
        node = held[1] if held is not None else None
        if node is not None and node[FRAME] is not None:
            self._held[id(node[FRAME])] = node
        return node

    def hold(self, node: list) -> bool:
        """At a generator's yield: keep `node` open if it is the generator that the current
        `hold_generator` window started (its suspension is not a return)."""
        held = _HOLD.get()
        if held is None or held[1] is not None or node[DONE]:
            return False
        parent, caller = node[PARENT], held[0]
        if parent is not caller and not (
            parent is not None and parent[CALL_ID] is None and parent[PARENT] is caller
        ):
            return False  # a generator that the context manager's generator itself drives
        held[1] = node
        _pop(node)
        node[DONE] = None  # held: `resume` continues it, `leave` ends it
        # The `with` body (a FastAPI handler) runs next in this lane but is not called by the
        # generator: the held call and its set-up move to a lane of their own, linked like a
        # task, so the document nests the body under its real caller, not under the generator.
        lane, mark = next(self._lanes), next(self._ids)
        ancestors = _ancestors(node[PARENT])
        for session in node[TARGETS]:
            session.moves[node[CALL_ID]] = (node[LANE], mark, lane)
            if ancestors:
                session.links[lane] = ancestors
        node[LANE] = lane
        return True

    def unhold(self, node: list) -> None:
        """The held generator `node` resumes (its `__exit__`): back on this context's stack."""
        node[PARENT] = _STACK.get()
        node[DONE] = False
        _STACK.set(node)

    def held_frame(self, frame: Any) -> list | None:
        """The held node of the generator running `frame` (sys.monitoring), removed."""
        return self._held.pop(id(frame), None) if self._held else None

    def forget_held(self, node: Any) -> None:
        if node is not None and node[FRAME] is not None:
            self._held.pop(id(node[FRAME]), None)

    def leave(
        self, node: list, value: Any, perf_counter: Callable[[], float] = real_perf_counter()
    ) -> None:
        """Record the return of `node` with `value`."""
        t0 = perf_counter()
        _pop(node)
        if node[DONE]:
            return
        node[DONE] = True
        packed = encode(value, _RETURN_VALUE)
        call_id = next(self._ids)
        t1 = perf_counter()
        event = (
            FRETURN,
            call_id,
            node[LANE],
            node[CALL_ID],
            t0 - node[START],
            node[INSTR] + (t1 - t0),
            packed,
            None,
        )
        for session in node[TARGETS]:
            session.events.append(event)

    def leave_exception(
        self,
        node: list,
        exc: BaseException,
        perf_counter: Callable[[], float] = real_perf_counter(),
    ) -> None:
        """Record that `node` ended by raising `exc`."""
        t0 = perf_counter()
        _pop(node)
        if node[DONE]:
            return
        node[DONE] = True
        from tracetool.agent.recording import exception_chain

        chain = exception_chain(exc)
        t1 = perf_counter()
        event = (
            FRETURN,
            next(self._ids),
            node[LANE],
            node[CALL_ID],
            t0 - node[START],
            node[INSTR] + (t1 - t0),
            None,
            chain,
        )
        for session in node[TARGETS]:
            session.events.append(event)


class AmbientRecording(ScopedRecording):
    """A running ambient session (`Recorder.start_ambient`)."""

    def pause(self) -> None:
        """Stop receiving events for now (the session stays open)."""
        self._recorder._set_ambient(self._session, False)

    def resume(self) -> None:
        if self.recording is None:
            self._recorder._set_ambient(self._session, True)

    def stop(self) -> Recording:
        if self.recording is None:
            self.pause()
            self.recording = self._session.finish()
        return self.recording


_recorder = Recorder()


def get_recorder() -> Recorder:
    """The process-wide recorder (remote recording, integrations, code recording)."""
    return _recorder
