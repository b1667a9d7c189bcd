"""Code recording on Python 3.12+ with `sys.monitoring` (PEP 669).

Local events are set only on the code objects of configured modules (found by
`tracetool.agent.instrument` when a module is loaded, or by scanning modules imported earlier),
so the rest of the process runs at full speed. Functions keep their identity, signature, repr,
pickling and tracebacks: nothing is wrapped, the interpreter reports events for the original
code objects — including functions that a decorator registered (Flask/FastAPI/Django views) and
closures, which share their code object.

Events per function kind:
- functions, methods, coroutines: PY_START → call, PY_RETURN → return, PY_UNWIND → return with
  `exceptions`. A coroutine is one call from its first step to its end; its node stays on its
  task's context stack while it awaits, so concurrent tasks do not interleave.
- generators and async generators: each activation is one call/return pair — PY_START /
  PY_RESUME / PY_THROW open one, PY_YIELD (with the yielded value) / PY_RETURN / PY_UNWIND close
  it — so the consumer's calls between two items never nest inside the generator. For async
  generators only value yields close an activation; awaits inside them do not.

Idle cost (agent enabled, nothing recording): a callback that runs while no session is open
returns `sys.monitoring.DISABLE`, so the interpreter stops reporting that code location; when a
session starts again (the recorder's listener: idle → active) the agent calls
`sys.monitoring.restart_events()` once — only if it disabled something since the last restart.
(PY_UNWIND and PY_THROW cannot be disabled; their callbacks drop foreign code with one lookup.)
`restart_events()` also re-enables what other tools disabled (coverage's `sysmon` core), which
only costs them the re-disabling. Code that is not configured never gets an event. Callbacks never raise into the app, and the
interpreter does not call them re-entrantly, so the agent's own `repr` calls are not recorded.
"""

from __future__ import annotations

import gc
import sys
from types import CodeType
from typing import Any

from tracetool.agent.functions import ASYNC_GENERATOR, GENERATOR, FunctionInfo
from tracetool.agent.recorder import _STACK, CALL_ID, CODE, FRAME, PARENT, Recorder

# (typeshed for the mypy target 3.11 has no sys.monitoring)
MON: Any = getattr(sys, "monitoring", None)
TOOL_NAME = "tracetool"
_PREFERRED_IDS = (4, 3, 5, 2, 1, 0)
MAX_PAIRING_DEPTH = 8
_SEGMENTED = (
    GENERATOR,
    ASYNC_GENERATOR,
)  # how far below the top a returning frame's node is looked for


class MonitoringBackend:
    """Registers code objects with sys.monitoring and turns events into Recorder calls."""

    name = "sys.monitoring"

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.infos: dict[int, FunctionInfo] = {}
        self._codes: list[CodeType] = []  # keeps registered code objects (and their ids) alive
        self.tool_id = self._claim_tool_id()
        self.idle = _IdleSwitch()
        self._register_callbacks()
        recorder.add_listener(self.idle)

    # -- set-up -----------------------------------------------------------------------------
    @staticmethod
    def _claim_tool_id() -> int:
        mon = MON
        for tool in _PREFERRED_IDS:
            if mon.get_tool(tool) == TOOL_NAME:
                return tool
        for tool in _PREFERRED_IDS:
            if mon.get_tool(tool) is None:
                mon.use_tool_id(tool, TOOL_NAME)
                return tool
        raise RuntimeError("no free sys.monitoring tool id")

    def _register_callbacks(self) -> None:
        mon = MON
        ev = mon.events
        rec = self.recorder
        infos = self.infos
        getframe = sys._getframe
        disable = mon.DISABLE
        wrapped_type = _async_gen_wrapped_type()
        referents = gc.get_referents
        current_node = _STACK.get  # the innermost open call of this thread/task
        idle = self.idle

        def find(code: CodeType, frame: Any) -> list | None:
            node = current_node()
            depth = 0
            while node is not None and depth < MAX_PAIRING_DEPTH:
                if node[CODE] is code and node[FRAME] is frame:
                    return node
                node = node[PARENT]
                depth += 1
            return None

        def on_start(code: CodeType, offset: int) -> Any:
            if not rec.active:
                idle.disabled = True
                return disable
            info = infos.get(id(code))
            if info is None:
                return disable
            try:
                rec.enter(info, getframe(1), None, code)
            except Exception:  # never break the app
                pass
            return None

        def on_return(code: CodeType, offset: int, value: Any) -> Any:
            top = current_node()
            if top is None or top[CALL_ID] is None:
                if not rec.active:
                    idle.disabled = True
                    return disable
                return None  # nothing of ours is open in this context
            frame = getframe(1)
            node = top if (top[CODE] is code and top[FRAME] is frame) else find(code, frame)
            if node is not None:
                try:
                    rec.leave(node, value)
                except Exception:
                    pass
            return None

        def on_unwind(code: CodeType, offset: int, exc: BaseException) -> None:
            # a global event: every frame an exception leaves, so reject foreign code first
            top = current_node()
            if top is None or top[CALL_ID] is None or id(code) not in infos:
                return
            frame = getframe(1)
            node = top if (top[CODE] is code and top[FRAME] is frame) else find(code, frame)
            if node is not None:
                try:
                    rec.leave_exception(node, exc)
                except Exception:
                    pass

        def on_resume(code: CodeType, offset: int) -> Any:
            if not rec.active:
                idle.disabled = True
                return disable
            info = infos.get(id(code))
            if info is None or info.kind not in _SEGMENTED:
                return None  # PY_THROW is global: coroutines (cancellation) and foreign code
            frame = getframe(1)
            if find(code, frame) is not None:
                return None  # an async generator resuming after an await: its activation is open
            try:
                held = rec.held_frame(frame)
                if held is not None:
                    rec.unhold(held)  # a generator context manager's tear-down: same call
                    return
                rec.enter(info, frame, None, code)
            except Exception:
                pass
            return None

        def on_throw(code: CodeType, offset: int, exc: BaseException) -> None:
            if rec.active:  # (PY_THROW cannot be disabled)
                on_resume(code, offset)

        def on_yield(code: CodeType, offset: int, value: Any) -> Any:
            top = current_node()
            if top is None or top[CALL_ID] is None:
                if not rec.active:
                    idle.disabled = True
                    return disable
                return None
            info = infos.get(id(code))
            if info is not None and info.kind == ASYNC_GENERATOR:
                if type(value) is not wrapped_type:
                    return  # an await inside the async generator, not a value yield
                inner = referents(value)
                value = inner[0] if inner else None
            frame = getframe(1)
            node = top if (top[CODE] is code and top[FRAME] is frame) else find(code, frame)
            if node is not None:
                try:
                    if not rec.hold(node):
                        rec.leave(node, value)
                except Exception:
                    pass
            return None

        tool = self.tool_id
        mon.register_callback(tool, ev.PY_START, on_start)
        mon.register_callback(tool, ev.PY_RETURN, on_return)
        mon.register_callback(tool, ev.PY_UNWIND, on_unwind)
        mon.register_callback(tool, ev.PY_RESUME, on_resume)
        mon.register_callback(tool, ev.PY_THROW, on_throw)
        mon.register_callback(tool, ev.PY_YIELD, on_yield)
        # PY_UNWIND and PY_THROW cannot be local events: they are set for the whole process and
        # the callbacks drop foreign code with one dict lookup
        mon.set_events(tool, ev.PY_UNWIND | ev.PY_THROW)

    # -- registration ---------------------------------------------------------------------------
    def register(self, code: CodeType, info: FunctionInfo) -> None:
        """Start reporting events of `code` (idempotent)."""
        key = id(code)
        if key in self.infos:
            return
        self.infos[key] = info
        self._codes.append(code)
        ev = MON.events
        events = ev.PY_START | ev.PY_RETURN
        if info.kind in (GENERATOR, ASYNC_GENERATOR):
            events |= ev.PY_RESUME | ev.PY_YIELD
        MON.set_local_events(self.tool_id, code, events)

    def info_for(self, code: CodeType) -> FunctionInfo | None:
        return self.infos.get(id(code))

    def close(self) -> None:
        """Stop all events (tests)."""
        self.idle.closed = True
        for code in self._codes:
            MON.set_local_events(self.tool_id, code, 0)
        self._codes.clear()
        self.infos.clear()
        mon = MON
        mon.set_events(self.tool_id, 0)
        for event in (
            mon.events.PY_START,
            mon.events.PY_RETURN,
            mon.events.PY_UNWIND,
            mon.events.PY_RESUME,
            mon.events.PY_THROW,
            mon.events.PY_YIELD,
        ):
            mon.register_callback(self.tool_id, event, None)
        mon.free_tool_id(self.tool_id)


class _IdleSwitch:
    """The recorder listener that restarts the events disabled while idle (see module doc).

    `disabled` is set by a callback that returned DISABLE; `on` follows `Recorder.active`.
    """

    __slots__ = ("_on", "closed", "disabled", "restarts")

    def __init__(self) -> None:
        self._on = False
        self.disabled = False
        self.closed = False
        self.restarts = 0  # (tests)

    @property
    def on(self) -> bool:
        return self._on

    @on.setter
    def on(self, value: bool) -> None:
        if value and not self._on and self.disabled and not self.closed:
            self.disabled = False
            self.restarts += 1
            MON.restart_events()
        self._on = value


def _async_gen_wrapped_type() -> type:
    """The type the interpreter wraps async generator values in at PY_YIELD."""
    seen: list[type] = []
    mon = MON
    probe_tool = None
    for tool in range(6):
        if mon.get_tool(tool) is None:
            probe_tool = tool
            break
    if probe_tool is None:
        return type(None)

    async def agen() -> Any:
        yield 1

    mon.use_tool_id(probe_tool, "tracetool-probe")
    try:
        mon.register_callback(
            probe_tool, mon.events.PY_YIELD, lambda code, off, val: seen.append(type(val))
        )
        mon.set_local_events(probe_tool, agen.__code__, mon.events.PY_YIELD)
        gen = agen()
        try:
            for step in (gen.asend(None), gen.aclose()):
                try:
                    step.send(None)
                except (StopIteration, StopAsyncIteration):
                    pass
        finally:
            mon.set_local_events(probe_tool, agen.__code__, 0)
            mon.register_callback(probe_tool, mon.events.PY_YIELD, None)
    finally:
        mon.free_tool_id(probe_tool)
    return seen[0] if seen and seen[0] is not int else type(None)
