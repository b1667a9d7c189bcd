"""Timings survive frozen clocks: the agent takes its clock functions at import (agent.clock),
so freezegun — which rewrites `time.perf_counter` and every module attribute holding it — cannot
zero them (issue 12 item 6)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tracetool.agent.recorder import get_recorder

from .conftest import calls

freezegun = pytest.importorskip("freezegun")


def test_recorded_calls_keep_real_timings_under_freezegun(project: Any) -> None:
    project.write("slow", "import time\n\ndef nap():\n    time.sleep(0.003)\n    return 1\n")
    project.configure()
    mod = project.load("slow")
    rec = get_recorder()
    with freezegun.freeze_time("2024-01-01"):
        assert time.perf_counter() == time.perf_counter()  # frozen indeed
        assert rec.start()
        mod.nap()
        doc = rec.stop()
    assert [c["method_id"] for c in calls(doc)] == ["nap"]
    (ret,) = [e for e in doc["events"] if e["event"] == "return"]
    assert ret["elapsed"] >= 0.002
