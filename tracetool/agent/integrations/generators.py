"""Generator-based context managers (`contextlib.contextmanager` / `asynccontextmanager`) are ONE
call: from the generator's start in `__enter__` to its end in `__exit__`.

Code recording records each activation of a generator as its own call (an iterator's consumer
must not nest inside it). A generator driven by a context manager is different: its set-up and
tear-down are one operation around the `with` body — a FastAPI `yield` dependency (session
opened, handler runs, session committed and closed), a `@contextmanager` transaction helper. While
`__enter__` runs, `Recorder.hold_generator` marks the window; the generator's first yield keeps
its call open instead of returning (`Recorder.hold`), and the tear-down that `__exit__` resumes
continues that call (`Recorder.unhold`), in whichever thread or task it runs. Idle cost: one
attribute check per `with`.
"""

from __future__ import annotations

from typing import Any

from tracetool.agent.integrations._common import recorder
from tracetool.agent.integrations._patch import patch_method

_ATTR = "_tracetool_held"


def install() -> None:
    import contextlib

    rec = recorder()

    def enter(original: Any, self: Any) -> Any:
        if not rec.active:
            return original(self)
        token = rec.hold_generator()
        try:
            return original(self)
        finally:
            node = rec.release_hold(token)
            if node is not None:
                setattr(self, _ATTR, node)

    def exit_(original: Any, self: Any, *exc_info: Any) -> Any:
        try:
            return original(self, *exc_info)
        finally:
            node = self.__dict__.pop(_ATTR, None)
            if node is not None:
                rec.forget_held(node)

    async def aenter(original: Any, self: Any) -> Any:
        if not rec.active:
            return await original(self)
        token = rec.hold_generator()
        try:
            return await original(self)
        finally:
            node = rec.release_hold(token)
            if node is not None:
                setattr(self, _ATTR, node)

    async def aexit(original: Any, self: Any, *exc_info: Any) -> Any:
        try:
            return await original(self, *exc_info)
        finally:
            node = self.__dict__.pop(_ATTR, None)
            if node is not None:
                rec.forget_held(node)

    sync_cm = contextlib._GeneratorContextManager  # type: ignore[attr-defined]
    async_cm = contextlib._AsyncGeneratorContextManager  # type: ignore[attr-defined]
    patch_method(sync_cm, "__enter__", enter)
    patch_method(sync_cm, "__exit__", exit_)
    patch_method(async_cm, "__aenter__", aenter)
    patch_method(async_cm, "__aexit__", aexit)
