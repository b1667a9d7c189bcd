"""Retrieval for the assistant over the live index (a `tracetool.assistant.Retriever`).

Contract:

- `search` ranks recordings: those the question names (`appmaps`) first, then full-text hits
  of the search terms (`tracetool.query.search`, FTS5 bm25 over names, labels, routes, code,
  SQL and messages) across every served project, best first, at most `limit`.
- `context` collects, for the ranked recordings: routes (method, route, count, statuses,
  average ms), SQL queries (normalized text, count, total ms; those naming a search term
  first), exceptions, and call paths — chains from the request (or root call) down to calls
  whose function, route or SQL mentions a search term, read from the top two recordings.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracetool_daemon.service import Project, Service

from tracetool.assistant.context import Context
from tracetool.errors import TraceToolError

log = logging.getLogger("tracetool.assistant")

MAX_ROUTES = 10
MAX_QUERIES = 10
MAX_EXCEPTIONS = 5
MAX_PATHS = 6
PATH_RECORDINGS = 2


class IndexRetriever:
    def __init__(self, service: Service) -> None:
        self.service = service

    def _db(self, project: Project) -> sqlite3.Connection | None:
        try:
            return self.service.reader(project)
        except TraceToolError:
            return None

    def search(
        self, question: str, terms: Sequence[str], appmaps: Sequence[str], limit: int
    ) -> list[dict[str, Any]]:
        from tracetool.query import search as fts_search

        found: dict[tuple[str, str], dict[str, Any]] = {}
        for project in self.service.projects:
            db = self._db(project)
            if db is None:
                continue
            for ref in appmaps:
                try:
                    rel = self.service.relpath(project, self.service.recording_file(project, ref))
                except TraceToolError:
                    continue
                found.setdefault((str(project.directory), rel), _hit(project, db, rel, 1e9))
            if terms:
                for row in fts_search(db, " ".join(terms), limit):
                    key = (str(project.directory), row["recording"])
                    found.setdefault(key, _hit(project, db, row["recording"], row["score"] or 0.0))
        ranked = sorted(found.values(), key=lambda h: (-h["score"], h["path"]))
        return ranked[:limit] if not appmaps else ranked[: max(limit, len(appmaps))]

    def context(
        self, question: str, terms: Sequence[str], recordings: Sequence[dict[str, Any]]
    ) -> Context:
        routes: list[dict[str, Any]] = []
        queries: list[dict[str, Any]] = []
        exceptions: list[dict[str, Any]] = []
        for project in self.service.projects:
            mine = [r for r in recordings if r["directory"] == str(project.directory)]
            db = self._db(project)
            if not mine or db is None:
                continue
            ids = [r["id"] for r in mine]
            marks = ",".join("?" * len(ids))
            for method, route, count, statuses, avg in db.execute(
                "SELECT method, route, count(*), group_concat(DISTINCT status), avg(duration_ms) "
                f"FROM http_requests WHERE recording_id IN ({marks}) "
                "GROUP BY method, route ORDER BY count(*) DESC, route LIMIT ?",
                (*ids, MAX_ROUTES),
            ):
                routes.append(
                    {
                        "method": method,
                        "route": route,
                        "count": count,
                        "statuses": sorted({int(s) for s in (statuses or "").split(",") if s}),
                        "avgMs": round(avg or 0.0, 3),
                    }
                )
            rows = db.execute(
                "SELECT co.name, count(*), sum(q.duration_ms) FROM sql_queries q "
                "JOIN code_objects co ON co.id = q.code_object_id "
                f"WHERE q.recording_id IN ({marks}) GROUP BY co.id",
                ids,
            ).fetchall()
            rows.sort(key=lambda r: (not _mentions(r[0], terms), -(r[2] or 0.0), r[0]))
            for sql, count, total in rows[:MAX_QUERIES]:
                queries.append({"sql": sql, "count": count, "totalMs": round(total or 0.0, 3)})
            for cls, message, path in db.execute(
                "SELECT e.class, e.message, r.path FROM exceptions e "
                f"JOIN recordings r ON r.id = e.recording_id WHERE e.recording_id IN ({marks}) "
                "ORDER BY e.id LIMIT ?",
                (*ids, MAX_EXCEPTIONS),
            ):
                exceptions.append({"class": cls, "message": message, "recording": path})
        paths: list[dict[str, Any]] = []
        for rec in recordings[:PATH_RECORDINGS]:
            paths.extend(_call_paths(Path(rec["appmap"]), rec["path"], terms))
        return Context(
            recordings=tuple({k: v for k, v in r.items() if k not in ("id",)} for r in recordings),
            routes=tuple(routes),
            queries=tuple(queries),
            call_paths=tuple(paths[:MAX_PATHS]),
            exceptions=tuple(exceptions),
        )


def _hit(project: Project, db: sqlite3.Connection, rel: str, score: float) -> dict[str, Any]:
    row = db.execute(
        "SELECT id, name, test_status FROM recordings WHERE path = ?", (rel,)
    ).fetchone()
    hit: dict[str, Any] = {
        "id": row[0] if row else -1,
        "path": rel,
        "appmap": str(project.trace_dir / rel),
        "name": row[1] if row else None,
        "directory": str(project.directory),
        "score": round(float(score), 4),
    }
    if row and row[2]:
        hit["testStatus"] = row[2]
    return hit


def _mentions(text: str | None, terms: Sequence[str]) -> bool:
    lowered = (text or "").lower()
    return any(t in lowered for t in terms)


def _label(node: Any) -> str:
    from tracetool.trace import events as ev

    call = node.call
    kind = ev.kind(call)
    if kind == "http_server":
        return ev.route(call)
    if kind == "sql":
        sql = " ".join(ev.sql_text(call).split())
        return "SQL " + (sql[:77] + "..." if len(sql) > 80 else sql)
    if kind == "http_client":
        return f"HTTP client {ev.request_method(call)} {call.get('http_client_request', {}).get('url', '')}"
    return ev.function_name(call)


def _call_paths(path: Path, rel: str, terms: Sequence[str]) -> list[dict[str, Any]]:
    """Root-to-match chains of calls that mention a search term (module doc)."""
    from tracetool.trace import build_call_tree, gc_paused, iter_preorder, load
    from tracetool.trace.normalize import apply_event_updates

    try:
        with gc_paused():
            doc = load(path)
            apply_event_updates(doc)
            tree = build_call_tree(doc.events)
    except (TraceToolError, OSError) as exc:
        log.debug("no call paths from %s: %s", path, exc)
        return []
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, ...]] = set()
    for node, _depth in iter_preorder(tree.roots):
        label = _label(node)
        if not terms or not _mentions(label, terms):
            continue
        chain = [_label(a) for a in reversed(list(node.ancestors()))] + [label]
        key = tuple(chain)
        if key in seen:
            continue
        seen.add(key)
        elapsed = node.elapsed
        out.append(
            {
                "recording": rel,
                "path": chain,
                "elapsedMs": round(elapsed * 1000, 3) if elapsed is not None else None,
            }
        )
        if len(out) >= MAX_PATHS:
            break
    return out
