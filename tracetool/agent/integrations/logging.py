"""logging: every log record a logger handles (`Logger.handle`, which every enabled
`debug`/`info`/`warning`/`error`/`exception`/`critical`/`log` call reaches) is recorded as a call
of that stdlib method, the way AppMap tools show log output (AppMap marks log functions with the
`log` label, e.g. Ruby's `Logger::LogDevice#write`):

    call:   defined_class "logging.Logger", method_id <level: debug|info|warning|error|critical,
            else "log">, path/lineno of that method in the stdlib, static false,
            receiver = the logger, parameters [{name: "msg", class: "str",
            value: the formatted message (repr, capped)}]
    return: return_value None, elapsed = the handlers' time

The classMap gets `logging` → `Logger` → <method> with `labels: ["log"]` (these are ordinary
function events of the recorder, so the classMap, `find logs`, `inspect` and AppMap viewers all
see them). Records of the `tracetool` logger, and the access-log line a server writes for a
`/_trace/` request, are not recorded.
"""

from __future__ import annotations

import logging
from typing import Any

from tracetool.agent.functions import FunctionInfo, relative_path
from tracetool.agent.integrations._patch import patch_method
from tracetool.agent.integrations.http_server import serving_remote
from tracetool.agent.recorder import get_recorder

LABEL = "log"
_METHODS = ("debug", "info", "warning", "error", "critical", "log")
_infos: dict[str, FunctionInfo] = {}


def function_info(method: str) -> FunctionInfo:
    """The recorded function for log records of one level (`logging.Logger.<method>`)."""
    info = _infos.get(method)
    if info is None:
        code = getattr(getattr(logging.Logger, method, None), "__code__", None)
        filename = code.co_filename if code is not None else (logging.__file__ or "logging")
        try:
            from tracetool.agent.config import active_config

            root = str(active_config().root)
        except Exception:
            root = "/"
        info = FunctionInfo(
            module="logging",
            qualname=f"Logger.{method}",
            name=method,
            path=relative_path(filename, root),
            lineno=code.co_firstlineno if code is not None else 1,
            arg_names=("self", "msg"),
            kinds=("req", "req"),
        )
        info.labels = (LABEL,)
        _infos[method] = info
    return info


def _message(record: logging.LogRecord) -> str:
    """The log message; formatted only when that runs no app code (a `%s` of a lazy QuerySet
    would query), else the format string and the arguments rendered safely."""
    from tracetool.agent.values import is_plain, safe_repr

    msg, args = record.msg, record.args
    if type(msg) is str and (not args or is_plain(args)):
        try:
            return record.getMessage()
        except Exception as exc:  # bad format arguments: record what the app passed
            return f"{msg!r} % {safe_repr(args)} ({type(exc).__name__})"
    text = msg if type(msg) is str else safe_repr(msg)
    return f"{text} % {safe_repr(args)}" if args else text


def install() -> None:
    rec = get_recorder()

    def handle(original: Any, self: logging.Logger, record: logging.LogRecord) -> Any:
        if (
            not rec.active
            or self.name == "tracetool"
            or self.name.startswith("tracetool.")
            or serving_remote.get()
        ):
            return original(self, record)
        level = record.levelname.lower()
        info = function_info(level if level in _METHODS else "log")
        node = rec.enter(info, args=(self, _message(record)))
        if node is None:
            return original(self, record)
        try:
            result = original(self, record)
        except BaseException as exc:
            rec.leave_exception(node, exc)
            raise
        rec.leave(node, None)
        return result

    patch_method(logging.Logger, "handle", handle)
