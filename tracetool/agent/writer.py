"""Saving recordings under `trace_dir`.

`save_recording(doc, name, subdir=None, trace_dir=None)` writes `doc` (a trace document dict, or a
`Recording` from the recorder, which streams its events) to
`<trace_dir>/<subdir>/<safe_file_name(name)>.trace.json` atomically and returns the path. The same
name always maps to the same file, so re-running a test replaces its recording.

`safe_file_name(name)`: characters other than letters, digits, `.`, `_`, `-` become `_` (runs
collapsed, ends trimmed); names longer than `MAX_NAME` are cut and get `-<8 hex of sha256>` so
distinct long names stay distinct; an empty result becomes `recording`.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from tracetool.trace.document import atomic_write_bytes, dumps

MAX_NAME = 120
SUFFIX = ".trace.json"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_name(name: str) -> str:
    """A file-system-safe stem for a recording named `name` (see module doc)."""
    safe = _UNSAFE.sub("_", name).strip("._-")
    if not safe:
        safe = "recording"
    if len(safe) > MAX_NAME:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        safe = f"{safe[:MAX_NAME].rstrip('._-')}-{digest}"
    return safe


def recording_path(
    name: str, subdir: str | None = None, trace_dir: Path | str | None = None
) -> Path:
    """Where `save_recording` puts a recording named `name`."""
    if trace_dir is None:
        from tracetool.agent.config import trace_dir as configured

        base = configured()
    else:
        base = Path(trace_dir)
    if subdir:
        base = base / subdir
    return base / f"{safe_file_name(name)}{SUFFIX}"


def save_recording(
    doc: Any, name: str, subdir: str | None = None, trace_dir: Path | str | None = None
) -> Path:
    """Write `doc` atomically to its `recording_path`; returns the path."""
    target = recording_path(name, subdir, trace_dir)
    write = getattr(doc, "write", None)
    if callable(write):  # a Recording: streamed, no second copy of the events in memory
        write(target)
    else:
        atomic_write_bytes(target, dumps(doc))
    return target
