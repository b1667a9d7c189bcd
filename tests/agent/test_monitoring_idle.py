"""Idle cost on 3.12+: sys.monitoring callbacks disable their code location while no session is
open, and starting a session restarts the events (issue 12 item 9). Runs on 3.12/3.13 through
scripts/test-agent-pythons; skipped on older interpreters (the rewrite backend has no callbacks).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tracetool.agent import instrument
from tracetool.agent.recorder import get_recorder

from .conftest import calls

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")


def test_idle_callbacks_disable_and_a_session_restarts_them(project: Any) -> None:
    project.write("work", "def f(x):\n    return x + 1\n")
    project.configure()
    mod = project.load("work")
    assert instrument.mechanism() == "sys.monitoring"
    idle = instrument._manager.backend.idle  # type: ignore[union-attr]
    rec = get_recorder()

    mod.f(0)  # idle: the callbacks answer DISABLE ...
    assert idle.disabled
    idle.disabled = False
    for i in range(5):
        mod.f(i)
    # ... so the interpreter no longer calls them for f (a callback would have set the flag)
    assert not idle.disabled
    idle.disabled = True  # (what the callbacks had recorded)

    before = idle.restarts
    assert rec.start()
    mod.f(41)
    mod.f(42)
    doc = rec.stop()
    assert idle.restarts == before + 1  # events restarted once, when the session started
    assert [c.get("method_id") for c in calls(doc)] == ["f", "f"]
    assert [c["parameters"][0]["value"] for c in calls(doc)] == ["41", "42"]
    assert [e["return_value"]["value"] for e in doc["events"] if "return_value" in e] == [
        "42",
        "43",
    ]

    mod.f(1)  # idle again: disabled again
    assert idle.disabled
    assert rec.start()
    mod.f(1)
    doc = rec.stop()
    assert idle.restarts == before + 2
    assert [c.get("method_id") for c in calls(doc)] == ["f"]


def test_a_session_without_idle_disables_does_not_restart(project: Any) -> None:
    project.write("work", "def g():\n    return 1\n")
    project.configure()
    mod = project.load("work")
    idle = instrument._manager.backend.idle  # type: ignore[union-attr]
    idle.disabled = False
    before = idle.restarts
    rec = get_recorder()
    assert rec.start()
    mod.g()
    doc = rec.stop()
    assert idle.restarts == before  # nothing was disabled: no process-wide restart
    assert [c.get("method_id") for c in calls(doc)] == ["g"]
