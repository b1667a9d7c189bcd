"""The trajectory file: every model request and response, one JSON object per line.

Contract: `Trajectory(path).write(kind, **fields)` appends `{"time": <ISO 8601 UTC>, "type":
kind, **fields}` and a newline, flushed at once, from any thread (a lock keeps lines whole).
Kinds used: `request`, `response`, `error`. API keys are never written (providers pass the
request body, not the headers). The file and its folder are created on first write.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


class Trajectory:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, kind: str, **fields: Any) -> None:
        record = {"time": datetime.now(timezone.utc).isoformat(), "type": kind, **fields}
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line)
