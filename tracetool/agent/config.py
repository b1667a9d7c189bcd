"""The agent's active configuration: trace.yml as seen from inside the app.

`active_config()` loads trace.yml once (from `$TRACETOOL_CONFIG`, else the current directory or
its nearest parent, as `tracetool.config.find_config_file` does) and caches it; `set_config()`
replaces it (the explicit API and tests). A broken trace.yml never breaks the app: the agent
reports it once on stderr and runs with defaults rooted at the current directory.

Environment switches read by the agent (`env_flag`): `TRACETOOL` (enable), `TRACETOOL_RECORD_PROCESS`,
`TRACETOOL_RECORD_REQUESTS`, `TRACETOOL_TRACE_DIR` (overrides `trace_dir`), `TRACETOOL_MAX_EVENTS`.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from tracetool.config import DEFAULT_TRACE_DIR, ENV_TRACE_DIR, Config, load_config
from tracetool.errors import TraceToolError

TRUTHY = frozenset({"1", "true", "yes", "on", "y", "t"})
DEFAULT_MAX_EVENTS = 2_000_000

_lock = threading.Lock()
_config: Config | None = None


def env_flag(name: str, default: bool = False) -> bool:
    """Whether environment variable `name` holds a truthy value (1/true/yes/on, any case)."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in TRUTHY


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    try:
        return int(value) if value else default
    except ValueError:
        return default


def active_config() -> Config:
    """The trace.yml the agent works with (loaded once; see module doc)."""
    global _config
    config = _config
    if config is not None:
        return config
    with _lock:
        if _config is None:
            try:
                _config = load_config()
            except TraceToolError as exc:
                print(f"tracetool: {exc}; recording with default settings", file=sys.stderr)
                cwd = Path(os.getcwd())
                _config = Config(root=cwd, name=cwd.name, trace_dir=cwd / DEFAULT_TRACE_DIR)
        return _config


def set_config(config: Config | None) -> None:
    """Replace the active configuration (None: load trace.yml again on next use)."""
    global _config
    with _lock:
        _config = config
    from tracetool.agent import values

    values.configure(None if config is None else config.safe_repr)


def trace_dir() -> Path:
    """Where recordings go: `$TRACETOOL_TRACE_DIR`, else trace.yml's `trace_dir`."""
    env = os.environ.get(ENV_TRACE_DIR)
    if env:
        return Path(env)
    return active_config().trace_dir


def max_events() -> int:
    """Events kept per recording before it is truncated (`$TRACETOOL_MAX_EVENTS`)."""
    return max(1, env_int("TRACETOOL_MAX_EVENTS", DEFAULT_MAX_EVENTS))
