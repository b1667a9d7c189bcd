"""In-process recording through the agent (`tracetool.agent`): the only module of the plugin
that imports it, and only when recording is on.

- `activate_agent()`: what ``TRACETOOL=true`` does at interpreter start-up (instrument the
  packages trace.yml names, install the framework/SQL/HTTP integrations), for a pytest process
  that was started without it; it also sets ``TRACETOOL=true`` so that processes the tests start
  (pytest-xdist workers, servers) record too.
- `InProcessBackend`: one ambient recording per test on the agent's Recorder (everything the
  process runs while the test runs: live-server threads started by wider fixtures, thread
  pools), and one per set-up and tear-down of a session/package/module/class-scoped fixture,
  during which the test's recording is paused.
"""

from __future__ import annotations

import os
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
        scope = self.recorder.start_ambient(
            info.name, recorder_name=RECORDER["name"], recorder_type=RECORDER["type"]
        )
        return scope, None

    def start_fixture(self, name: str) -> Any:
        return self.recorder.start_ambient(
            name, recorder_name=RECORDER["name"], recorder_type=RECORDER["type"]
        )

    def retry_start(self, info: TestInfo) -> tuple[Any, Optional[Problem]]:
        return None, None

    def stop(self, token: Any) -> tuple[Any, Optional[Problem]]:
        return token.stop(), None  # a Recording: metadata mutable, events streamed when saved
