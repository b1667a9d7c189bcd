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
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Optional, Union

from tracetool.agent.clock import perf_counter as clock  # not patched by time freezers
from tracetool.agent.recorder import Recorder, get_recorder

_log = logging.getLogger("tracetool")

sql_guard: contextvars.ContextVar[bool] = contextvars.ContextVar("tracetool_sql", default=False)
http_client_guard: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "tracetool_http_client", default=False
)


def warn(message: str) -> None:
    """One line on the `tracetool` logger (never recorded: the logging hook skips it)."""
    _log.warning("tracetool: %s", message)


def recorder() -> Recorder:
    return get_recorder()


def active() -> bool:
    """Whether any session is open (remote, process, or a scoped one somewhere)."""
    return get_recorder().active


class Span:
    """One call/return pair: `Span.open(fields)` appends the call, `.close(fields)` the return.

    `Span.open` returns None when nothing records here (no session, or only scoped sessions of
    other threads/tasks), so callers do `span = Span.open(...)` then `if span: span.close(...)`
    and pay one attribute lookup when idle.
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
        if not rec.active:  # no session at all: the idle path
            return None
        call_id = rec.call_event(fields() if callable(fields) else fields)
        if call_id is None:
            return None
        return cls(rec, call_id, clock())

    def close(self, fields: Optional[dict[str, Any]] = None) -> None:
        self.rec.return_event(self.call_id, fields or {}, clock() - self.start)

    def fail(self, exc: BaseException, fields: Optional[dict[str, Any]] = None) -> None:
        """The operation raised `exc`: close the span without it — AppMap's schema allows
        `exceptions` on function returns only (a SQL or HTTP return carrying them is rejected by
        its validator); the exception is recorded where it leaves a recorded function."""
        self.close(fields)

    def cancel(self) -> None:
        """Forget the call (an HTTP client request that got no response: AppMap's schema has no
        valid return for it)."""
        self.rec.cancel_call(self.call_id)


def exception_entries(exc: BaseException) -> list[dict[str, Any]]:
    """AppMap `exceptions`: the exception, then its causes (the agent's one implementation)."""
    from tracetool.agent.recording import exception_chain

    return exception_chain(exc)


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
    """(url without credentials, query and fragment; query pairs).

    AppMap keeps query params in `message`; `user:password@` is never recorded.
    """
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    base = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return base, parse_qsl(parts.query, keep_blank_values=True)


def add_framework(name: str, distribution: str) -> None:
    """Name a framework the app uses in every recording's `metadata.frameworks`."""
    version: Optional[str] = None
    try:
        from importlib.metadata import version as dist_version

        version = dist_version(distribution)
    except Exception:
        pass
    try:
        from tracetool.agent.metadata import add_framework as register

        register(name, version)
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
