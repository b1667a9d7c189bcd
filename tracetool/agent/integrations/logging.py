"""logging: every log record a logger handles (`Logger.handle`, which every enabled
`debug`/`info`/`warning`/`error`/`exception`/`critical`/`log` call reaches) becomes one function
call/return pair shaped the way AppMap tools show log output (AppMap marks log functions with the
`log` label, e.g. Ruby's `Logger::LogDevice#write`):

    call:   defined_class "logging.Logger", method_id <level: debug|info|warning|error|critical,
            else "log">, path/lineno of that stdlib method, static false, labels ["log"],
            receiver = the logger (value: its name), parameters [{name: "msg", class: "str",
            value: the formatted message}]  (+ {name: "exc_info"} when the record carries one)
    return: elapsed (the handlers' time)

The classMap gets `logging` → `Logger` → <method> with `labels: ["log"]`, so `find logs`,
`inspect` and AppMap's viewers find them. Records of the `tracetool` logger are not recorded.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from tracetool.agent.integrations._common import Span, describe, register_function
from tracetool.agent.integrations._patch import patch_method

LABEL = "log"
_METHODS = ("debug", "info", "warning", "error", "critical")
_locations: dict[str, tuple[str, int]] = {}


def _location(method: str) -> tuple[str, int]:
    found = _locations.get(method)
    if found is None:
        func = getattr(logging.Logger, method, None)
        code = getattr(func, "__code__", None)
        path = code.co_filename if code else logging.__file__
        found = (path, code.co_firstlineno if code else 1)
        _locations[method] = found
        register_function("logging", "Logger", method, path, found[1], static=False, labels=[LABEL])
    return found


def log_fields(logger: logging.Logger, record: logging.LogRecord) -> dict[str, Any]:
    level = record.levelname.lower()
    method = level if level in _METHODS else "log"
    path, lineno = _location(method)
    try:
        message = record.getMessage()
    except Exception as exc:  # bad format args: record what the app passed
        message = f"{record.msg!r} % {record.args!r} ({type(exc).__name__})"
    params = [describe(message, "msg")]
    if record.exc_info and record.exc_info[1] is not None:
        params.append(describe(record.exc_info[1], "exc_info"))
    receiver = {"class": "logging.Logger", "value": logger.name, "object_id": id(logger)}
    return {
        "defined_class": "logging.Logger",
        "method_id": method,
        "path": path,
        "lineno": lineno,
        "static": False,
        "labels": [LABEL],
        "receiver": receiver,
        "parameters": params,
    }


def install() -> None:
    def handle(original: Any, self: logging.Logger, record: logging.LogRecord) -> Any:
        if self.name == "tracetool" or self.name.startswith("tracetool."):
            return original(self, record)
        span: Optional[Span] = Span.open(lambda: log_fields(self, record))
        if span is None:
            return original(self, record)
        try:
            result = original(self, record)
        except BaseException as exc:
            span.fail(exc)
            raise
        span.close()
        return result

    patch_method(logging.Logger, "handle", handle)
