"""pytest entry point (``pytest11``) for tracetool: one named, labeled trace document per test.

Importing this module must stay free: it is loaded into every pytest run of every project that has
tracetool installed, recording or not. It only declares options and decides whether to record;
the recording machinery (`pytest_tracetool.session`) and the agent are imported only when on.

Modes (first that applies):

1. ``--no-trace-record``: off.
2. ``--trace-url URL`` or ``$TRACETOOL_URL``: **remote** -- drive ``URL/_trace/record`` of a
   running app around each test (POST before, DELETE after) and save what it returns.
3. ``--trace-record``, else ``$TRACETOOL`` (true/false), else ini ``trace_record = true``:
   **in-process** -- record each test (its function fixtures' setup and teardown included)
   with the agent's ambient recording: whatever the process runs while the test runs,
   live-server threads and thread pools included. Set-up and tear-down of session, package,
   module and class fixtures go to recordings of their own (``fixture.setup.*``).

Either way each test's document is saved to ``<trace_dir>/pytest/<file-safe node id>.trace.json``
(trace_dir: ``--trace-dir`` > ``$TRACETOOL_TRACE_DIR`` > trace.yml > ``tmp/trace``); skipped
tests only with ``--trace-record-skipped``.
"""

from __future__ import annotations

import os
from typing import Any

ENV_RECORD = "TRACETOOL"
ENV_URL = "TRACETOOL_URL"
# the agent's truthy values (tracetool.agent.config.TRUTHY; not imported: this module stays free)
TRUTHY = frozenset({"1", "true", "yes", "on", "y", "t"})


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("tracetool", "tracetool recording (one trace document per test)")
    group.addoption(
        "--trace-record",
        action="store_true",
        default=None,
        dest="trace_record",
        help="record each test in-process and save it to <trace_dir>/pytest/ "
        "(also: TRACETOOL=true, ini trace_record = true)",
    )
    group.addoption(
        "--no-trace-record",
        action="store_false",
        dest="trace_record",
        help="do not record, whatever TRACETOOL, TRACETOOL_URL or the ini file say",
    )
    group.addoption(
        "--trace-url",
        default=None,
        dest="trace_url",
        metavar="URL",
        help="record a running app instead: POST/DELETE URL/_trace/record around each test "
        "(also: TRACETOOL_URL)",
    )
    group.addoption(
        "--trace-dir",
        default=None,
        dest="trace_dir",
        metavar="DIR",
        help="where recordings go (default: TRACETOOL_TRACE_DIR, trace.yml's trace_dir, tmp/trace)",
    )
    group.addoption(
        "--trace-record-skipped",
        action="store_true",
        default=False,
        dest="trace_record_skipped",
        help="also save recordings of skipped tests",
    )
    parser.addini("trace_record", "record each test (like --trace-record)", type="bool")


def recording_mode(config: Any, options: Any = None) -> str:
    """``off``, ``remote`` or ``record`` (see module doc). `options`: an argparse namespace, for
    hooks that run before ``config.option`` is filled in."""
    options = options if options is not None else config.option
    flag = getattr(options, "trace_record", None)
    if flag is False:
        return "off"
    if getattr(options, "trace_url", None) or os.environ.get(ENV_URL):
        return "remote"
    if flag:
        return "record"
    env = os.environ.get(ENV_RECORD, "").strip().lower()
    if env:
        return "record" if env in TRUTHY else "off"
    try:
        return "record" if config.getini("trace_record") else "off"
    except ValueError:
        return "off"


def pytest_load_initial_conftests(early_config: Any, parser: Any, args: Any) -> None:
    # Before conftest.py files (which often import the app) are loaded: switch the agent on now,
    # so the packages trace.yml names are instrumented when they are first imported.
    if recording_mode(early_config, early_config.known_args_namespace) == "record":
        from pytest_tracetool.inprocess import activate_agent

        activate_agent()


def pytest_configure(config: Any) -> None:
    mode = recording_mode(config)
    if mode == "off":
        return
    from pytest_tracetool.session import TracePlugin

    config.pluginmanager.register(TracePlugin(config, mode), TracePlugin.NAME)
