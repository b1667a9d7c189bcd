"""Helpers shared by the integrations: the recorder handle, call/return spans, parameter lists,
exception entries, header maps and the re-entrancy guards that prevent double recording.

Re-entrancy (why two guards): a higher-level integration that owns an operation sets a guard
while it runs, and the lower-level one below it checks the guard and stays silent —
SQLAlchemy / Django ORM over sqlite3 or psycopg (`sql_guard`), requests or httpx over urllib
(`http_client_guard`). The guards are context variables, so threads and asyncio tasks are
independent.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Optional, Union

from tracetool.agent.recorder import Recorder, get_recorder

_log = logging.getLogger("tracetool")

sql_guard: contextvars.ContextVar[bool] = contextvars.ContextVar("tracetool_sql", default=False)
http_client_guard: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "tracetool_http_client", default=False
)

clock = time.perf_counter


def warn(message: str) -> None:
    """One line on the `tracetool` logger (never recorded: the logging hook skips it)."""
    _log.warning("tracetool: %s", message)


def recorder() -> Recorder:
    return get_recorder()


def active(rec: Recorder) -> bool:
    """Whether anything records right now (a global session or a scoped one)."""
    return rec.is_recording()


class Span:
    """One call/return pair: `Span.open(fields)` appends the call, `.close(fields)` the return.

    `Span.open` returns None when nothing records, so callers do `span = Span.open(...)` then
    `if span: span.close(...)` and pay one attribute lookup when idle.
    """

    __slots__ = ("call_id", "rec", "start")

    def __init__(self, rec: Recorder, call_id: int, start: float) -> None:
        self.rec = rec
        self.call_id = call_id
        self.start = start

    @classmethod
    def open(cls, fields: Union[dict[str, Any], Callable[[], dict[str, Any]]]) -> Optional[Span]:
        """Append the call event; `fields` may be a function, called only when recording."""
        rec = get_recorder()
        if not rec.is_recording():
            return None
        call_id = rec.call_event(fields() if callable(fields) else fields)
        if call_id is None:
            return None
        return cls(rec, call_id, clock())

    def close(self, fields: Optional[dict[str, Any]] = None) -> None:
        self.rec.return_event(self.call_id, fields or {}, clock() - self.start)

    def fail(self, exc: BaseException, fields: Optional[dict[str, Any]] = None) -> None:
        out = dict(fields or {})
        out["exceptions"] = exception_entries(exc)
        self.close(out)


def exception_entries(exc: BaseException) -> list[dict[str, Any]]:
    """AppMap `exceptions`: the exception then its cause/context chain, innermost frame location."""
    entries: list[dict[str, Any]] = []
    seen: set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen and len(entries) < 10:
        seen.add(id(current))
        entry: dict[str, Any] = {
            "class": qualified_name(type(current)),
            "message": _safe_str(current),
            "object_id": id(current),
        }
        tb = current.__traceback__
        if tb is not None:
            while tb.tb_next is not None:
                tb = tb.tb_next
            entry["path"] = tb.tb_frame.f_code.co_filename
            entry["lineno"] = tb.tb_lineno
        entries.append(entry)
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return entries


def qualified_name(cls: type) -> str:
    module = getattr(cls, "__module__", "") or ""
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module in ("builtins", "") else f"{module}.{name}"


def _safe_str(value: object) -> str:
    try:
        text = str(value)
    except Exception:
        return f"<{type(value).__name__}: str() failed>"
    return text if len(text) <= 1000 else text[:1000] + "…"


def describe(value: Any, name: Optional[str] = None) -> dict[str, Any]:
    from tracetool.agent.values import describe as _describe

    return _describe(value, name)


def parameters(items: Iterable[tuple[str, Any]]) -> list[dict[str, Any]]:
    """`message` parameter objects from (name, value) pairs; a repeated name keeps all values."""
    grouped: dict[str, list[Any]] = {}
    for key, value in items:
        grouped.setdefault(str(key), []).append(value)
    return [describe(vals[0] if len(vals) == 1 else vals, key) for key, vals in grouped.items()]


def header_dict(pairs: Iterable[tuple[Any, Any]]) -> dict[str, str]:
    """Header pairs (str or latin-1 bytes) -> {Name: value}; repeated headers joined by ", "."""
    out: dict[str, str] = {}
    for key, value in pairs:
        k = key.decode("latin-1") if isinstance(key, (bytes, bytearray)) else str(key)
        v = value.decode("latin-1") if isinstance(value, (bytes, bytearray)) else str(value)
        k = "-".join(part.capitalize() for part in k.split("-"))
        out[k] = f"{out[k]}, {v}" if k in out else v
    return out


def mime_type(headers: Mapping[str, str]) -> Optional[str]:
    for key, value in headers.items():
        if key.lower() == "content-type":
            return value
    return None


def split_url(url: str) -> tuple[str, list[tuple[str, str]]]:
    """(url without query and fragment, query pairs) — AppMap keeps query params in `message`."""
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    parts = urlsplit(url)
    base = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return base, parse_qsl(parts.query, keep_blank_values=True)


_frameworks: dict[str, dict[str, str]] = {}


def add_framework(name: str, distribution: str) -> None:
    """Name a framework the app uses in every recording's `metadata.frameworks`."""
    if name in _frameworks:
        return
    entry = {"name": name}
    try:
        from importlib.metadata import version

        entry["version"] = version(distribution)
    except Exception:
        pass
    _frameworks[name] = entry
    try:
        get_recorder().add_metadata("frameworks", list(_frameworks.values()))
    except Exception as exc:
        warn(f"could not add framework {name}: {exc!r}")


def sql_event(sql: Any, database_type: str, server_version: Optional[str] = None) -> dict[str, Any]:
    """The `sql_query` call fields for one statement."""
    if isinstance(sql, (bytes, bytearray)):
        sql = bytes(sql).decode("utf-8", "replace")
    query: dict[str, Any] = {"database_type": database_type, "sql": str(sql)}
    if server_version:
        query["server_version"] = server_version
    return {"sql_query": query}


def register_function(
    package: str,
    cls: str,
    method: str,
    path: str,
    lineno: int,
    static: bool,
    labels: list[str],
) -> None:
    """Declare a library function the integrations record (logging), so the classMap lists it
    with its labels. Best effort: a recorder without the hook still gets per-event `labels`."""
    hook = getattr(get_recorder(), "register_function", None)
    if hook is None:
        return
    try:
        hook(package, cls, method, path, lineno, static, labels)
    except Exception as exc:
        warn(f"could not register {package}.{cls}.{method}: {exc!r}")
