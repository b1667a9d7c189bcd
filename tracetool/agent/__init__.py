"""tracetool's recording agent — and its small explicit API for scripts.

The agent is normally switched on from outside: `TRACETOOL=true` in the environment plus a
`trace.yml` (see `tracetool.agent.startup`). Scripts can also record explicitly:

    from tracetool import agent

    with agent.record("checkout flow") as rec:   # saved under trace_dir/code/ on exit
        checkout(cart)
    print(rec.path)

    agent.start_recording("warm-up")             # or start/stop by hand
    warm_up()
    doc = agent.stop_recording()                 # the trace document (dict)

    @agent.labels("security.authentication")     # labels shown in the classMap
    def login(user, password): ...

Recording explicitly instruments the packages of trace.yml on first use (code imported before
that is instrumented in place). Importing this module is cheap and changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, TypeVar

from tracetool.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["RecordBlock", "enabled", "labels", "record", "start_recording", "stop_recording"]


def enabled() -> bool:
    """Whether the agent is active in this process (TRACETOOL set, or a recording was started)."""
    from tracetool.agent import startup

    return startup.is_active()


def start_recording(name: str | None = None) -> None:
    """Start recording everything the process does; UsageError if a recording already runs."""
    from tracetool.agent import startup
    from tracetool.agent.recorder import get_recorder

    startup.activate(integrations=True)
    if not get_recorder().start(recorder_name="explicit", recorder_type="code", name=name):
        raise UsageError("a recording is already in progress (stop it first)")


def stop_recording() -> dict:
    """Stop the recording started by `start_recording`; returns the trace document."""
    from tracetool.agent.recorder import get_recorder

    doc = get_recorder().stop()
    if doc is None:
        raise UsageError("no recording in progress (start_recording was not called)")
    return doc


class RecordBlock:
    """What `record()` yields: `path` of the saved file (set on exit) and the `recording`."""

    def __init__(self, name: str, path: Path | None) -> None:
        self.name = name
        self.requested_path = path
        self.path: Path | None = None
        self.recording: Any = None

    @property
    def document(self) -> dict:
        if self.recording is None:
            raise UsageError("the recording is still in progress")
        return self.recording.to_dict()


@contextmanager
def record(name: str | None = None, path: str | Path | None = None) -> Iterator[RecordBlock]:
    """Record the block and save it: to `path`, else `<trace_dir>/code/<name>.trace.json`.

    The file is written even when the block raises (with `metadata.exception`).
    """
    from tracetool.agent import startup
    from tracetool.agent.recorder import get_recorder

    label = name or time.strftime("recording %Y-%m-%d %H-%M-%S")
    block = RecordBlock(label, Path(path) if path is not None else None)
    startup.activate(integrations=True)
    recorder = get_recorder()
    if not recorder.start(recorder_name="explicit", recorder_type="code", name=label):
        raise UsageError("a recording is already in progress (stop it first)")
    failure: BaseException | None = None
    try:
        yield block
    except BaseException as exc:
        failure = exc
        raise
    finally:
        recording = recorder.finish()
        if recording is not None:
            if failure is not None:
                recording.metadata["exception"] = {
                    "class": type(failure).__qualname__,
                    "message": str(failure)[:1000],
                }
            block.recording = recording
            if block.requested_path is not None:
                block.path = recording.write(block.requested_path)
            else:
                block.path = recording.save(label, subdir="code")


def labels(*names: str) -> Callable[[F], F]:
    """Decorator: attach labels to a function (identity, signature and pickling unchanged)."""

    def decorate(func: F) -> F:
        from tracetool.agent.functions import label_function

        label_function(func, names)
        return func

    return decorate
