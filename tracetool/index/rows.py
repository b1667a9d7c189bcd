"""The rows `tracetool.index.extract` makes of one call or recording, and their search words.

Pure helpers, no state: a code object's row (`function_row`, `plain_row`), the recording's
metadata row, exception and log rows, the words full-text search indexes a function by.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from typing import Any

from tracetool import accel, route_model
from tracetool.trace import events as ev
from tracetool.trace.codeobjects import CodeObject
from tracetool.trace.tree import CallNode

LOG_LABELS = frozenset(("log", "logging"))
LOG_LEVELS = frozenset(
    ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log")
)
# Caps that keep one pathological recording from bloating the database.
MAX_TEXT = 2000
MAX_FTS_FIELD = 200_000


def elapsed_ms(node: CallNode) -> float | None:
    ret = node.ret
    if ret is None:
        return None
    value = ret.get("elapsed")
    return value * 1000.0 if isinstance(value, (int, float)) else None


def capped(value: Any, cap: int = MAX_TEXT) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= cap else text[:cap] + "…"


def route_template(call: ev.Event) -> str:
    """The `{param}` route template of an HTTP server request call (`tracetool.route_model`)."""
    return route_model.server_template(call)


def log_message(call: ev.Event) -> str | None:
    for param in call.get("parameters") or ():
        if isinstance(param, dict) and param.get("name") not in ("self", "cls"):
            value = param.get("value")
            return None if value is None else capped(value)
    return None


def is_log_call(call: ev.Event, co: CodeObject) -> bool:
    if LOG_LABELS.intersection(co.labels):
        return True
    cls = str(call.get("defined_class") or "")
    return cls in ("logging.Logger", "Logger") and call.get("method_id") in LOG_LEVELS


def first_timestamp(events: list[ev.Event]) -> float | None:
    """The first numeric `timestamp` of the events (most recordings have none: the events are
    scanned without a Python-level step per event, in C where the accelerator is built)."""
    if _FIRST_TIMESTAMP is not None:
        found = _FIRST_TIMESTAMP(events)
        if found is not NotImplemented:  # (else an event is no dict: raised below, as ever)
            return found  # type: ignore[no-any-return]
    return python_first_timestamp(events)


def python_first_timestamp(events: list[ev.Event]) -> float | None:
    """`first_timestamp` without the accelerator."""
    for ts in filter(_NOT_NONE, map(dict.get, events, itertools.repeat("timestamp"))):
        if isinstance(ts, (int, float)):
            return float(ts)
    return None


_NOT_NONE = functools.partial(operator.is_not, None)
_FIRST_TIMESTAMP = accel.function("first_timestamp")


def _obj(md: dict[str, Any], key: str) -> dict[str, Any]:
    value = md.get(key)
    return value if isinstance(value, dict) else {}


def metadata_row(md: dict[str, Any]) -> dict[str, Any]:
    git, recorder = _obj(md, "git"), _obj(md, "recorder")
    language, failure = _obj(md, "language"), _obj(md, "test_failure")
    labels = md.get("labels")
    return {
        "labels": [str(x) for x in labels] if isinstance(labels, list) else [],
        "test_status": md.get("test_status"),
        "recorder_type": recorder.get("type"),
        "recorder_name": recorder.get("name"),
        "language": language.get("name"),
        "app": md.get("app"),
        "branch": git.get("branch"),
        "git_commit": git.get("commit"),
        "source_location": md.get("source_location"),
        "failure": capped(failure.get("message")) if failure.get("message") else None,
    }


def function_row(co: CodeObject, call: ev.Event) -> tuple[Any, ...]:
    cls = co.class_
    class_name = str(call.get("defined_class") or (cls.name if cls is not None else ""))
    return (
        "function",
        co.name,
        cls.id if cls is not None else "",
        class_name,
        co.name,
        1 if co.static else 0,
        co.location,
        ",".join(co.labels),
        None,
        None,
        None,
    )


def plain_row(type_: str, name: str, method: str | None = None) -> tuple[Any, ...]:
    return (type_, name, None, None, method, None, None, None, None, None, None)


def add_exceptions(
    rows: list[tuple[Any, ...]],
    messages: dict[str, None],
    raised: Any,
    event_id: Any,
    request_id: Any,
    fqid: str,
) -> None:
    for exc in raised if isinstance(raised, list) else ():
        if not isinstance(exc, dict):
            continue
        path, lineno = exc.get("path"), exc.get("lineno")
        location = f"{path}:{lineno}" if path and lineno else (str(path) if path else None)
        cls_name = capped(exc.get("class") or "?", 500)
        message = capped(exc.get("message")) if exc.get("message") is not None else None
        rows.append((event_id, request_id, cls_name, message, location, fqid))
        words = " ".join(_CAMEL.split(cls_name))
        messages.setdefault(f"{cls_name} {words} {message or ''}"[:300], None)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


# A worker meets the same functions in recording after recording.
@functools.lru_cache(maxsize=32768)
def code_words(fqid: str) -> tuple[str, ...]:
    """`function:app/models/UserStore#save` → search terms `app models UserStore User Store
    save` (the tokenizer splits on punctuation; camel-case parts are added for partial names)."""
    words = fqid.split(":", 1)[-1].replace("#", " ").replace(".", " ").replace("/", " ").split()
    out = []
    for word in words:
        out.append(word)
        parts = _CAMEL.split(word)
        if len(parts) > 1:
            out.extend(parts)
    return tuple(out)
