"""Switching the agent on: from the `.pth` start-up hook, or from the explicit API.

`tracetool-agent.pth` (installed into site-packages with the package) runs at every interpreter
start. It reads only `TRACETOOL`; unless that is truthy (1/true/yes/on) it imports nothing at
all. When truthy it calls `activate_from_env()`, which:
1. loads trace.yml (cwd or `$TRACETOOL_CONFIG`); without one the agent stays inert — there is
   nothing configured to record;
2. instruments the configured packages (`tracetool.agent.instrument`: sys.monitoring on 3.12+,
   source rewriting before), including modules already imported;
3. installs the integrations (`tracetool.agent.integrations.install_all()`, when present);
4. with `TRACETOOL_RECORD_PROCESS=true`, records the whole process and writes it at exit to
   `<trace_dir>/process/<app>_<time>_<pid>.trace.json` (a forked child writes its own).
Nothing here may break the app: failures are reported on stderr and the agent stays off.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import os
import sys
import threading
import time

from tracetool.agent.config import active_config, env_flag

_lock = threading.RLock()
_active = False
_integrations = False


def is_active() -> bool:
    return _active


def _warn(message: str) -> None:
    try:
        print(f"tracetool: {message}", file=sys.stderr)
    except Exception:
        pass


def activate(*, integrations: bool = True) -> bool:
    """Instrument trace.yml's packages (once) and, if asked, install the integrations."""
    global _active, _integrations
    with _lock:
        if not _active:
            config = active_config()
            try:
                instrument = importlib.import_module("tracetool.agent.instrument")
            except ImportError:
                instrument = None
            if instrument is not None:
                instrument.install(config)
            from tracetool.agent.recorder import follow_threads

            follow_threads()
            _active = True
        if integrations and not _integrations:
            _integrations = True
            # not there until the integrations land; a failure inside them is reported, never
            # swallowed as "missing", and never breaks the app
            if importlib.util.find_spec("tracetool.agent.integrations") is not None:
                try:
                    module = importlib.import_module("tracetool.agent.integrations")
                    module.install_all()
                except Exception as exc:
                    _warn(f"integrations not installed ({type(exc).__name__}: {exc})")
        return True


def activate_from_env() -> bool:
    """The `.pth` entry point (see module doc). Returns whether the agent was activated."""
    try:
        if not env_flag("TRACETOOL"):
            return False
        config = active_config()
        if config.path is None:
            return False  # no trace.yml: nothing is configured to record
        activate(integrations=True)
        if env_flag("TRACETOOL_RECORD_PROCESS"):
            start_process_recording()
        return True
    except Exception as exc:
        _warn(f"agent not started ({type(exc).__name__}: {exc})")
        return False


def _process_name() -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    return f"{active_config().name or 'process'}_{stamp}_{os.getpid()}"


def start_process_recording() -> None:
    """Record the whole process; the recording is written when the interpreter exits.

    A forked child (gunicorn, multiprocessing) drops what its parent recorded and records itself
    into its own file (named with its pid).
    """
    from tracetool.agent.recorder import get_recorder

    if get_recorder().start_process(_process_name()):
        atexit.register(_write_process_recording)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_restart_in_child)


def _restart_in_child() -> None:
    from tracetool.agent.recorder import get_recorder

    recorder = get_recorder()
    try:
        recorder.drop_process()
        recorder.start_process(_process_name())
    except Exception as exc:
        _warn(f"process recording not restarted after fork ({type(exc).__name__}: {exc})")


def _write_process_recording() -> None:
    from tracetool.agent.recorder import get_recorder

    try:
        recording = get_recorder().finish_process()
        if recording is not None:
            recording.save(subdir="process")
    except Exception as exc:
        _warn(f"process recording not written ({type(exc).__name__}: {exc})")
