"""Issue 19.4: a poisoned recording never stops the live index (a real daemon process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import (
    DaemonProcess,
    daemon_env,
    make_project,
    poll,
    recording,
    write_recording,
)

pytestmark = pytest.mark.e2e


def _skipped(d: DaemonProcess) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in d.call("index.status")["skipped"]}


def test_the_daemon_skips_poisoned_files_reports_them_and_keeps_indexing(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    root = make_project(tmp_path / "proj")
    trace = root / "tmp" / "trace"
    d = DaemonProcess(["rpc"], root, daemon_env(home))
    try:
        d.read_ready()
        poll(lambda: d.call("index.status")["state"] == "ready")
        count = d.call("index.status")["recordings"]

        status_list: dict[str, Any] = recording("status list")
        status_list["metadata"]["test_status"] = []
        null_id = recording("null id")
        null_id["events"][0]["id"] = None  # the HTTP server request
        write_recording(trace / "poison" / "status_list.trace.json", status_list)
        write_recording(trace / "poison" / "null_id.trace.json", null_id)
        skipped = poll(
            lambda: (s := _skipped(d)) and len(s) == 2 and s,
        )
        assert "metadata.test_status is an array" in skipped["poison/status_list.trace.json"]
        assert "id is null" in skipped["poison/null_id.trace.json"]

        # later batches still index
        write_recording(trace / "later" / "after.trace.json", recording("after", path="/after"))
        poll(lambda: d.call("index.status")["recordings"] == count + 1)
    finally:
        d.stop()
