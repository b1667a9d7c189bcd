"""What the assistant knows about a question: search terms and the retrieved runtime context.

Contract:

- `search_terms(question)` lowercases the question, splits it into words (identifiers are kept
  whole and also split at `_` and camelCase humps), drops stop words and words shorter than three
  characters, keeps the first `limit` in order. Deterministic; used for full-text search.
- `Context` is what retrieval found, as plain JSON-able tuples of dicts: `recordings`
  (`{path, name, score, ...}`), `routes` (`{method, route, count, statuses, avgMs}`), `queries`
  (`{sql, count, totalMs}`), `callPaths` (`{recording, path: [names], elapsedMs}`) and
  `exceptions` (`{class, message, recording}`). `to_text()` renders it for a prompt.
- A `Retriever` (implemented by the daemon over query.db) has two steps, so progress can be
  reported between them: `search(question, terms, appmaps, limit)` ranks recordings, and
  `context(question, terms, recordings)` collects the details of the ranked ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

STOP_WORDS = frozenset(
    """
    a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each few for from
    further get gets got had has have having he her here hers him his how i if in into is it its
    itself just let me more most my no nor not now of off on once only or other our out over own
    same she should so some such than that the their them then there these they this those
    through to too under until up very was way we were what when where which while who whom why
    will with would you your yours show tell explain does work works happen happens please
    code app application recording recordings trace traces
    """.split()
)

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_HUMPS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def search_terms(question: str, limit: int = 12) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for word in _WORD.findall(question):
        pieces = [word]
        if "_" in word or not word.islower():
            pieces += [h for part in word.split("_") for h in _HUMPS.findall(part)]
        for piece in pieces:
            term = piece.lower()
            if len(term) >= 3 and term not in STOP_WORDS:
                seen.setdefault(term, None)
    return tuple(seen)[:limit]


@dataclass(frozen=True)
class Context:
    recordings: tuple[dict[str, Any], ...] = ()
    routes: tuple[dict[str, Any], ...] = ()
    queries: tuple[dict[str, Any], ...] = ()
    call_paths: tuple[dict[str, Any], ...] = ()
    exceptions: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not (self.recordings or self.routes or self.queries or self.call_paths)

    def to_json(self) -> dict[str, Any]:
        return {
            "recordings": list(self.recordings),
            "routes": list(self.routes),
            "queries": list(self.queries),
            "callPaths": list(self.call_paths),
            "exceptions": list(self.exceptions),
            "notes": list(self.notes),
        }

    def to_text(self) -> str:
        """The context as prompt text (markdown lists, most relevant first)."""
        out: list[str] = []
        if self.recordings:
            out.append("Relevant recordings:")
            for rec in self.recordings:
                status = f", test {rec['testStatus']}" if rec.get("testStatus") else ""
                out.append(f"- {rec.get('name') or rec['path']} ({rec['path']}{status})")
        if self.routes:
            out.append("HTTP routes served:")
            for r in self.routes:
                statuses = ", ".join(str(s) for s in r.get("statuses", []))
                out.append(
                    f"- {r['method']} {r['route']}: {r['count']} request(s), status {statuses}, "
                    f"average {r.get('avgMs', 0):.1f} ms"
                )
        if self.queries:
            out.append("SQL queries:")
            for q in self.queries:
                out.append(f"- {q['sql']} ({q['count']}x, {q.get('totalMs', 0):.1f} ms in total)")
        if self.call_paths:
            out.append("Call paths:")
            for p in self.call_paths:
                out.append(f"- in {p['recording']}: " + " -> ".join(p["path"]))
        if self.exceptions:
            out.append("Exceptions raised:")
            for e in self.exceptions:
                out.append(f"- {e['class']}: {e.get('message') or ''} (in {e['recording']})")
        out.extend(self.notes)
        return "\n".join(out)


class Retriever(Protocol):
    def search(
        self, question: str, terms: Sequence[str], appmaps: Sequence[str], limit: int
    ) -> list[dict[str, Any]]: ...

    def context(
        self, question: str, terms: Sequence[str], recordings: Sequence[dict[str, Any]]
    ) -> Context: ...


class NoRetriever:
    """Retrieval when no index is available: nothing found, said plainly."""

    def search(
        self, question: str, terms: Sequence[str], appmaps: Sequence[str], limit: int
    ) -> list[dict[str, Any]]:
        return []

    def context(
        self, question: str, terms: Sequence[str], recordings: Sequence[dict[str, Any]]
    ) -> Context:
        return Context(notes=("No recordings index is available.",))
