"""Per-trace_dir data locations under ``~/.trace/data`` and the daemon's discovery file.

Every recordings directory gets its own data directory, ``~/.trace/data/<sha>``, where ``<sha>`` is
the first 16 hex digits of the SHA-256 of the directory's resolved absolute path (UTF-8, undecodable
bytes as surrogate escapes). It holds ``query.db`` (built by
``tracetool index``; spec "Other stored artifacts") and, while a daemon serves that trace_dir, the
discovery file ``daemon.json`` = ``{"pid": int, "port": int, "version": str}``. The daemon binds
127.0.0.1 only, so the port is all a client needs.

This is the one implementation of that layout: the index, the daemon, ``rpc-client`` and the pytest
plugin all call it. Importable by the agent and the pytest plugin: stdlib only, Python 3.9+.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional, Union

from tracetool.records import FrozenRecord

DEFAULT_TRACE_DIR = "tmp/trace"
ENV_TRACE_DIR = "TRACETOOL_TRACE_DIR"
DATA_ROOT = Path(".trace") / "data"
QUERY_DB = "query.db"
DISCOVERY_FILE = "daemon.json"

PathLike = Union[str, "os.PathLike[str]"]


class DaemonInfo(FrozenRecord):
    """What a running daemon announced in its discovery file."""

    _fields = ("pid", "port", "version", "path")
    pid: int
    port: int
    version: str
    path: Path

    def __init__(self, pid: int, port: int, version: str, path: Path) -> None:
        fields = self.__dict__
        fields["pid"] = pid
        fields["port"] = port
        fields["version"] = version
        fields["path"] = path


KEY_LENGTH = 16


def resolve_trace_dir(option: str | Path | None = None, default: str = DEFAULT_TRACE_DIR) -> Path:
    """Where recordings are: the flag, else $TRACETOOL_TRACE_DIR, else trace.yml, else `default`.

    Relative defaults are taken from the current directory (which `-d/--directory` sets).
    tracetool.config (trace.yml's machinery) is imported only when the file is looked for.
    """
    if option:
        return Path(option)
    env = os.environ.get(ENV_TRACE_DIR)
    if env:
        return Path(env)
    from tracetool.config import find_config_file, load_config

    file = find_config_file()
    if file is not None:
        return load_config(file).trace_dir
    return Path(default)


def trace_dir_key(trace_dir: PathLike) -> str:
    """The ``<sha>`` naming a trace_dir's data directory (see module doc)."""
    import hashlib  # (loads OpenSSL, ~1.5 ms that `--query-db PATH` need not pay)

    resolved = str(Path(trace_dir).expanduser().resolve())
    return hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:KEY_LENGTH]


def data_dir_for(trace_dir: PathLike) -> Path:
    """``~/.trace/data/<sha>`` for this trace_dir (not created here)."""
    return Path.home() / DATA_ROOT / trace_dir_key(trace_dir)


def query_db_path(trace_dir: PathLike) -> Path:
    """Default location of ``query.db`` for this trace_dir (overridden by ``--query-db``):
    ``$TRACETOOL_QUERY_DB`` or trace.yml's ``query_db`` when set (a path or a PostgreSQL URL,
    ``tracetool.store``), else ``~/.trace/data/<sha>/query.db``."""
    try:
        from tracetool import store
    except ImportError:  # the agent's distribution alone (tracetool.store is the tool's)
        return data_dir_for(trace_dir) / QUERY_DB
    configured = store.location(None, trace_dir)
    return configured if configured is not None else data_dir_for(trace_dir) / QUERY_DB


def discovery_file(trace_dir: PathLike) -> Path:
    """Where the daemon serving this trace_dir announces itself (``daemon.json``)."""
    return data_dir_for(trace_dir) / DISCOVERY_FILE


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (without signalling or touching it)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":
        # os.kill(pid, 0) would terminate the process on Windows: ask the kernel instead.
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        kernel32.CloseHandle(handle)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


def read_discovery(trace_dir: PathLike) -> Optional[DaemonInfo]:
    """The live daemon for this trace_dir, or None (no file, unreadable, malformed, pid gone)."""
    import json  # (only here: the agent imports this module through tracetool.config)

    path = discovery_file(trace_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid, port, version = data.get("pid"), data.get("port"), data.get("version", "")
    if not isinstance(pid, int) or not isinstance(port, int) or not 0 < port < 65536:
        return None
    if not pid_alive(pid):
        return None
    return DaemonInfo(pid=pid, port=port, version=str(version), path=path)
