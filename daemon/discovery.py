"""One daemon per trace_dir: claiming a recordings directory and announcing where we listen.

Contract (DESIGN.md §4, `tracetool.paths`):

- `claim(trace_dir)` takes an exclusive OS lock on `daemon.lock` in the trace_dir's data
  directory (`~/.trace/data/<sha>/`) and holds it for the daemon's lifetime. The lock, not the
  discovery file, decides who owns the directory: the OS drops it when the holder exits or is
  killed, so a crashed daemon never blocks the next one.
- If the lock is held, `claim` raises `DaemonRunningError` naming the other daemon's pid and
  port (read from its discovery file, waiting briefly for a daemon that is still starting).
- `Claim.announce(port)` writes the discovery file `daemon.json` = `{"pid", "port",
  "version"}` atomically; port 0 means "watching only, no JSON-RPC listener". A discovery file
  left by a dead daemon is simply replaced: whoever holds the lock owns the file.
- `Claim.release()` removes the discovery file (only if it is still ours) and drops the lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from tracetool import __version__
from tracetool.errors import TraceToolError
from tracetool.filelock import try_lock as _try_lock
from tracetool.filelock import unlock as _unlock
from tracetool.paths import data_dir_for, discovery_file, pid_alive
from tracetool.trace import atomic_write_bytes

LOCK_FILE = "daemon.lock"


class DaemonRunningError(TraceToolError):
    """Another daemon already serves this recordings directory."""

    exit_code = 3


def _read_raw(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class Claim:
    """Ownership of one trace_dir by this process (see module doc)."""

    def __init__(self, trace_dir: Path, fd: int) -> None:
        self.trace_dir = trace_dir
        self.path = discovery_file(trace_dir)
        self._fd: int | None = fd
        self.port: int | None = None

    def announce(self, port: int) -> None:
        body = {"pid": os.getpid(), "port": port, "version": __version__}
        atomic_write_bytes(self.path, json.dumps(body).encode("utf-8"))
        self.port = port

    def release(self) -> None:
        if self._fd is None:
            return
        data = _read_raw(self.path)
        if data is not None and data.get("pid") == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        fd, self._fd = self._fd, None
        try:
            _unlock(fd)
        finally:
            os.close(fd)


def claim(trace_dir: Path, *, wait_for_announce: float = 2.0) -> Claim:
    """Own `trace_dir` or raise `DaemonRunningError` (see module doc)."""
    directory = data_dir_for(trace_dir)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    if _try_lock(fd):
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        return Claim(trace_dir, fd)
    os.close(fd)
    raise DaemonRunningError(_describe_owner(trace_dir, wait_for_announce))


def _describe_owner(trace_dir: Path, wait: float) -> str:
    path = discovery_file(trace_dir)
    deadline = time.monotonic() + wait
    data = _read_raw(path)

    def live(d: dict[str, object] | None) -> bool:
        pid = d.get("pid") if d else None
        return isinstance(pid, int) and pid_alive(pid)

    # The owner writes its discovery file once it listens; it may be a moment away.
    while not live(data) and time.monotonic() < deadline:
        time.sleep(0.05)
        data = _read_raw(path)
    if data is None or not live(data):
        return f"another tracetool daemon is starting for {trace_dir}; use that one"
    pid, port = data.get("pid"), data.get("port")
    where = f"JSON-RPC on 127.0.0.1:{port}" if port else "watching only"
    return (
        f"a tracetool daemon already serves {trace_dir} (pid {pid}, {where}); "
        "use that one or stop it first"
    )
