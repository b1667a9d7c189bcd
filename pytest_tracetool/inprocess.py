"""In-process recording through the agent (`tracetool.agent`): the only module of the plugin
that imports it, and only when recording is on.

- `activate_agent()`: what ``TRACETOOL=true`` does at interpreter start-up (instrument the
  packages trace.yml names, install the framework/SQL/HTTP integrations), for a pytest process
  that was started without it; it also sets ``TRACETOOL=true`` so that processes the tests start
  (pytest-xdist workers, servers) record too.
- `InProcessBackend`: one scoped recording per test on the agent's Recorder.
- `save_document`: the agent's writer (one implementation of file naming).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from pytest_tracetool.remote import Problem
from pytest_tracetool.testmeta import RECORDER, TestInfo


def activate_agent() -> None:
    os.environ["TRACETOOL"] = "true"
    from tracetool.agent import startup

    startup.activate()


class InProcessBackend:
    def __init__(self) -> None:
        from tracetool.agent.recorder import get_recorder

        self.recorder = get_recorder()

    def start(self, info: TestInfo) -> tuple[Any, Optional[Problem]]:
        token = self.recorder.start_scoped(
            recorder_name=RECORDER["name"], recorder_type=RECORDER["type"], name=info.name
        )
        return token, None

    def retry_start(self, info: TestInfo) -> tuple[Any, Optional[Problem]]:
        return None, None

    def stop(self, token: Any) -> tuple[Optional[dict[str, Any]], Optional[Problem]]:
        return self.recorder.stop_scoped(token), None


def save_document(doc: dict[str, Any], name: str, subdir: str, trace_dir: Path) -> Path:
    # TEMP until the agent's writer is merged: same naming rule as tracetool.agent.writer.
    import re

    from tracetool.trace import save

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-") or "recording"
    return save(doc, trace_dir / subdir / f"{safe}.trace.json")
