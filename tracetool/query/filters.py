"""Query filters: parsing the user's text into typed conditions, and rendering them as SQL.

Every front end (CLI options, JSON-RPC params, MCP tool arguments, the UI's query string) hands
strings to `parse_filters(...)`, which returns a frozen `Filters` or raises `UsageError` naming
the bad value. The verbs turn `Filters` into SQL with the helpers below.

Syntax:
- status: `500`, `>=500`, `>400`, `<=299`, `<400`, `!=200`, ranges `200-299`, classes `5xx`,
  and comma-separated unions `200,201,3xx`;
- duration: `>100ms`, `<=2s`, `100ms-1s`, `>0.5` (milliseconds when no unit; units `us`, `ms`,
  `s`, `m`);
- since/until: ISO dates (`2024-05-01`, local midnight), ISO date-times (`2024-05-01T12:00`,
  `…Z`, `…+02:00`), or relative ages `30s`, `15m`, `2h`, `2d`, `1w` before now;
- route: `GET /users/{id}`, `/users/:id`, `/users/<int:id>` (any template dialect), a concrete
  path `/users/42`, or a glob `/api/*`;
- class, method: exact names, the last component of a qualified name (`User` matches
  `app.models.User` and `app/models/User`), or globs (`*Controller`);
- branch, commit: exact branch; commit by prefix (`--commit 9745c30`);
- table: a table name as the SQL names it (lower-cased, `schema.table` kept).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tracetool.errors import UsageError

HTTP_METHODS = frozenset(
    ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT")
)
_CMP = re.compile(r"^(>=|<=|!=|==|=|>|<)?\s*(.+)$")
_RANGE = re.compile(r"^([0-9.]+\s*[a-zµ]*)\s*-\s*([0-9.]+\s*[a-zµ]*)$")
_AGE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*(s|sec|m|min|h|d|w)$")
_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*(us|µs|ms|s|m)?$")
_UNITS_MS = {"us": 0.001, "µs": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, None: 1.0}
_AGE_S = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}

Clause = tuple[str, tuple[Any, ...]]  # SQL text using `{col}` for the column, parameters


@dataclass(frozen=True)
class NumberFilter:
    """A union of conditions on one numeric column: each (op, a, b) with op in <,<=,>,>=,=,!=,
    between."""

    terms: tuple[tuple[str, float, float | None], ...]
    text: str

    def sql(self, column: str) -> Clause:
        parts: list[str] = []
        params: list[Any] = []
        for op, a, b in self.terms:
            if op == "between":
                parts.append(f"{column} BETWEEN ? AND ?")
                params.extend((a, b))
            else:
                parts.append(f"{column} {op} ?")
                params.append(a)
        return "(" + " OR ".join(parts) + ")", tuple(params)


@dataclass(frozen=True)
class RouteFilter:
    method: str | None
    pattern: str | None  # template ({id} form) or glob; None = any path
    glob: bool
    text: str
    # A concrete path (`/users/7`): only its own requests, not its whole route.
    concrete: bool = False


# `tracetool.identifiers.loose` in SQL: every separator read as `.`.
_LOOSE_SQL = "replace(replace(replace(replace({}, '::', '.'), '/', '.'), '#', '.'), '\\', '.')"


@dataclass(frozen=True)
class NameFilter:
    """An exact name, a qualified name's last component, or a glob."""

    value: str
    glob: bool

    def sql(self, *columns: str) -> Clause:
        if self.glob:
            return "(" + " OR ".join(f"{c} GLOB ?" for c in columns) + ")", (self.value,) * len(
                columns
            )
        from tracetool.identifiers import loose

        parts: list[str] = []
        params: list[Any] = []
        key = loose(self.value)
        for c in columns:
            parts.append(f"{c} = ?")
            params.append(self.value)
            for sep in ("/", ".", "::"):
                parts.append(f"{c} GLOB ?")
                params.append(f"*{sep}{_glob_escape(self.value)}")
            if key != self.value:  # `catalog.models.Book` is `catalog/models/Book`
                parts.append(f"{_LOOSE_SQL.format(c)} = ?")
                params.append(key)
        return "(" + " OR ".join(parts) + ")", tuple(params)


@dataclass(frozen=True)
class Filters:
    route: RouteFilter | None = None
    class_: NameFilter | None = None
    method: NameFilter | None = None
    status: NumberFilter | None = None
    duration: NumberFilter | None = None  # milliseconds
    branch: str | None = None
    commit: str | None = None
    since: float | None = None  # epoch seconds
    until: float | None = None
    table: str | None = None
    text: str | None = None
    limit: int | None = None

    def given(self) -> list[str]:
        """Names of the filters that are set (limit and text excluded)."""
        names: tuple[str, ...] = ("route", "class_", "method", "status", "duration", "branch")
        names += ("commit", "since", "until", "table")
        return [n.rstrip("_") for n in names if getattr(self, n) is not None]


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def _is_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"bad {what} {text!r}") from None


def parse_status(text: str) -> NumberFilter:
    terms: list[tuple[str, float, float | None]] = []
    for raw in text.split(","):
        part = raw.strip().lower()
        if not part:
            continue
        if re.fullmatch(r"[1-5]xx", part):
            base = int(part[0]) * 100
            terms.append(("between", base, base + 99))
            continue
        rng = re.fullmatch(r"([0-9]{3})\s*-\s*([0-9]{3})", part)
        if rng:
            terms.append(("between", int(rng.group(1)), int(rng.group(2))))
            continue
        m = _CMP.match(part)
        if not m or not re.fullmatch(r"[0-9]{1,3}", m.group(2).strip()):
            raise UsageError(
                f"bad --status {text!r}: use 500, >=500, <400, 200-299, 5xx or a comma list"
            )
        op = {"==": "=", None: "="}.get(m.group(1), m.group(1))
        terms.append((op, int(m.group(2)), None))
    if not terms:
        raise UsageError("empty --status")
    return NumberFilter(tuple(terms), text)


def parse_duration_ms(text: str) -> float:
    m = _DURATION.match(text.strip().lower())
    if not m:
        raise UsageError(f"bad duration {text!r}: use e.g. 100ms, 1.5s, 250us")
    return float(m.group(1)) * _UNITS_MS[m.group(2)]


def parse_duration(text: str) -> NumberFilter:
    part = text.strip().lower()
    rng = _RANGE.match(part)
    if rng and not part.startswith(("<", ">", "=", "!")):
        lo, hi = parse_duration_ms(rng.group(1)), parse_duration_ms(rng.group(2))
        return NumberFilter((("between", lo, hi),), text)
    m = _CMP.match(part)
    if not m:
        raise UsageError(f"bad --duration {text!r}: use e.g. >100ms, <2s, 100ms-1s")
    op = {"==": "=", None: ">="}.get(m.group(1), m.group(1))
    return NumberFilter(((op, parse_duration_ms(m.group(2)), None),), text)


def parse_time(text: str, *, now: float | None = None, what: str = "--since") -> float:
    """Epoch seconds of an ISO date/date-time or a relative age (`2d` = two days ago)."""
    value = text.strip()
    age = _AGE.match(value.lower())
    if age:
        current = time.time() if now is None else now
        return current - float(age.group(1)) * _AGE_S[age.group(2)]
    iso = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        raise UsageError(
            f"bad {what} {text!r}: use an ISO date (2024-05-01), date-time "
            "(2024-05-01T12:00:00Z) or an age (30m, 2h, 2d, 1w)"
        ) from None
    return moment.timestamp()


def parse_route(text: str) -> RouteFilter:
    """`--route`: `GET /users/:id`, `/book/<int:pk>`, `POST`, or a glob (`/api/*`).

    A template matches every request of that route whatever its parameter names
    (`tracetool.route_model.shape`); a concrete path also matches its own requests.
    """
    from tracetool import route_model, routes

    value = text.strip()
    method: str | None = None
    head, _, rest = value.partition(" ")
    if head.upper() in HTTP_METHODS:
        method, value = head.upper(), rest.strip()
    elif value.upper() in HTTP_METHODS:
        return RouteFilter(value.upper(), None, False, text)
    if not value:
        return RouteFilter(method, None, False, text)
    if _is_glob(value):
        return RouteFilter(method, value, True, text)
    template = route_model.guess_template(value, rename_kinds=False)
    if template != routes.to_openapi(value):  # the user typed values, not a template
        return RouteFilter(method, value, False, text, concrete=True)
    return RouteFilter(method, template, False, text)


def parse_filters(
    *,
    route: str | None = None,
    class_: str | None = None,
    method: str | None = None,
    status: str | None = None,
    duration: str | None = None,
    branch: str | None = None,
    commit: str | None = None,
    since: str | None = None,
    until: str | None = None,
    table: str | None = None,
    text: str | None = None,
    limit: int | None = None,
    now: float | None = None,
) -> Filters:
    """Build `Filters` from user text (empty strings count as not given)."""
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1 (got {limit})")
    return Filters(
        route=parse_route(route) if route else None,
        class_=NameFilter(class_, _is_glob(class_)) if class_ else None,
        method=NameFilter(method, _is_glob(method)) if method else None,
        status=parse_status(status) if status else None,
        duration=parse_duration(duration) if duration else None,
        branch=branch or None,
        commit=commit or None,
        since=parse_time(since, now=now, what="--since") if since else None,
        until=parse_time(until, now=now, what="--until") if until else None,
        table=table.strip().lower() if table else None,
        text=text or None,
        limit=limit,
    )


def recording_clauses(f: Filters, alias: str = "r") -> list[Clause]:
    """Conditions on the recordings table (branch, commit, since, until)."""
    out: list[Clause] = []
    if f.branch is not None:
        out.append((f"{alias}.branch = ?", (f.branch,)))
    if f.commit is not None:
        out.append((f"{alias}.git_commit GLOB ?", (_glob_escape(f.commit) + "*",)))
    if f.since is not None:
        out.append((f"{alias}.recorded_at >= ?", (f.since,)))
    if f.until is not None:
        out.append((f"{alias}.recorded_at <= ?", (f.until,)))
    return out


def route_clauses(route: RouteFilter, alias: str = "h") -> list[Clause]:
    """Conditions on an http_requests row."""
    out: list[Clause] = []
    if route.method is not None:
        out.append((f"{alias}.method = ?", (route.method,)))
    if route.pattern is not None:
        if route.glob:
            out.append(
                (f"({alias}.route GLOB ? OR {alias}.path GLOB ?)", (route.pattern, route.pattern))
            )
        elif route.concrete:
            out.append((f"{alias}.path = ?", (route.pattern,)))
        else:
            from tracetool.route_model import shape

            out.append((f"{alias}.route_shape = ?", (shape(route.pattern),)))
    return out


def where(clauses: list[Clause]) -> Clause:
    """`WHERE a AND b …` (or nothing) with the parameters in order."""
    if not clauses:
        return "", ()
    params: list[Any] = []
    for _, p in clauses:
        params.extend(p)
    return " WHERE " + " AND ".join(f"({c})" for c, _ in clauses), tuple(params)
