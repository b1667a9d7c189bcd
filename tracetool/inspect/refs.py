"""Code-object references and matches of `inspect` (spec): what is searched and what is found.

- `parse_code_object("type:identifier")` → `CodeObjectRef`. Types and identifiers (spec):
  `function:pkg/path/Class#method` (`.method` for static), `class:pkg/path/Class`,
  `package:pkg/path`, `database:` (any SQL), `table:<name>`, `query:<normalized SQL>`,
  `route:<METHOD> /path/:id`; also `http:` (any server request), `external-service:<url>` and
  `external-route:<METHOD url>` by code-object id.
- A `Match` is one event of a recording with the values of the spec's 11 fields (`FIELDS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracetool.errors import UsageError

TYPES = (
    "function",
    "class",
    "package",
    "database",
    "table",
    "query",
    "route",
    "http",
    "external-service",
    "external-route",
)

# (key, title) of the 11 home-screen fields, in the spec's order.
FIELDS: tuple[tuple[str, str], ...] = (
    ("events", "Events"),
    ("returnValues", "Return values"),
    ("httpServerRequests", "HTTP server requests"),
    ("sqlQueries", "SQL queries"),
    ("sqlTables", "SQL tables"),
    ("callers", "Callers"),
    ("ancestors", "Ancestors"),
    ("descendants", "Descendants"),
    ("packageTrigrams", "Package trigrams"),
    ("classTrigrams", "Class trigrams"),
    ("functionTrigrams", "Function trigrams"),
)


@dataclass(frozen=True)
class CodeObjectRef:
    type: str
    identifier: str

    @property
    def text(self) -> str:
        return f"{self.type}:{self.identifier}"


def parse_code_object(text: str) -> CodeObjectRef:
    kind, sep, ident = text.partition(":")
    if not sep:
        raise UsageError(
            f"code object {text!r}: expected <type>:<identifier>, e.g. function:app/models/User#save"
        )
    if kind not in TYPES:
        raise UsageError(f"code object {text!r}: unknown type {kind!r} (one of {', '.join(TYPES)})")
    ident = ident.strip()
    if kind in ("function", "class", "package", "table", "query", "route") and not ident:
        raise UsageError(f"code object {text!r}: the {kind} identifier is missing")
    if kind == "route":
        from tracetool import route_model

        try:
            route_model.parse_route(ident)
        except UsageError:
            raise UsageError(
                f"code object {text!r}: a route is '<METHOD> <path>', e.g. route:GET /users/:id"
            ) from None
    return CodeObjectRef(kind, ident)


@dataclass
class Match:
    recording: str
    event_id: Any
    values: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"recording": self.recording, "eventId": self.event_id, **self.values}
