"""sqlite3: `sqlite3.connect` hands out a recording `Connection` subclass whose cursors record
`execute`, `executemany` and `executescript` as `sql_query` events (database_type `sqlite`,
server_version = the SQLite library version).

`Connection` and `Cursor` are C types whose methods cannot be patched, hence the `factory`
arguments: `connect(factory=X)` gets a recording subclass of X, `connection.cursor(factory=Y)` a
recording subclass of Y (Django's own cursor wrapper included). Statements issued while a
higher-level integration (SQLAlchemy, Django) records the same statement are skipped.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from tracetool.agent.integrations._common import Span, sql_event, sql_guard
from tracetool.agent.integrations._patch import patch_method

_subclasses: dict[type, type] = {}


def _record(sql: Any, run: Any) -> Any:
    if sql_guard.get():
        return run()
    span = Span.open(lambda: sql_event(sql, "sqlite", sqlite3.sqlite_version))
    if span is None:
        return run()
    try:
        result = run()
    except BaseException as exc:
        span.fail(exc)
        raise
    span.close()
    return result


class RecordingCursor(sqlite3.Cursor):
    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return _record(sql, lambda: super(RecordingCursor, self).execute(sql, parameters))

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> Any:
        return _record(
            sql, lambda: super(RecordingCursor, self).executemany(sql, seq_of_parameters)
        )

    def executescript(self, sql_script: str, /) -> Any:
        return _record(sql_script, lambda: super(RecordingCursor, self).executescript(sql_script))


class RecordingConnection(sqlite3.Connection):
    def cursor(self, factory: Any = None) -> Any:  # type: ignore[override]
        return super().cursor(recording_subclass(factory or sqlite3.Cursor))

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> Any:
        return self.cursor().executemany(sql, seq_of_parameters)

    def executescript(self, sql_script: str, /) -> Any:
        return self.cursor().executescript(sql_script)


# The app sees these as the classes it asked for: same name and module in reprs, tracebacks and
# recorded parameter classes (`sqlite3.Connection`), and isinstance() holds as before.
for _cls, _name in ((RecordingCursor, "Cursor"), (RecordingConnection, "Connection")):
    _cls.__module__ = "sqlite3"
    _cls.__name__ = _cls.__qualname__ = _name


def recording_subclass(cls: type) -> type:
    """A recording subclass of a Connection or Cursor class (cached)."""
    if issubclass(cls, (RecordingConnection, RecordingCursor)):
        return cls
    if cls is sqlite3.Cursor:
        return RecordingCursor
    if cls is sqlite3.Connection:
        return RecordingConnection
    found = _subclasses.get(cls)
    if found is None:
        base = RecordingConnection if issubclass(cls, sqlite3.Connection) else RecordingCursor
        # Our methods first, then the user's class, then sqlite3's.
        found = type(
            cls.__name__,
            (base, cls),
            {"__module__": cls.__module__, "__qualname__": cls.__qualname__},
        )
        _subclasses[cls] = found
    return found


def install() -> None:
    def connect(original: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) > 5:
            args = (*args[:5], recording_subclass(args[5]), *args[6:])
        else:
            kwargs["factory"] = recording_subclass(kwargs.get("factory") or sqlite3.Connection)
        return original(*args, **kwargs)

    patch_method(sqlite3, "connect", connect)
    import sqlite3.dbapi2 as dbapi2

    if dbapi2.connect is not sqlite3.connect:
        patch_method(dbapi2, "connect", connect)
