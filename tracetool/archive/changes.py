"""The parts of a change report computed from two snapshots' index entries.

- `sql_diff`: new / removed normalized queries and tables over all recordings of each side
  (AppMap's canonical `sqlNormalized` / `sqlTables`); new queries name the head recordings that
  run them and the source locations of their callers.
- `count_diff`: per recording present on both sides, queries and routes whose number of calls
  changed (and the SQL issued per route); queries the compare filter hides are left out. A loop that runs a query 50 times instead of 5 has the
  same diagram digest (loops are folded), so this is where N+1 growth shows.
- `failed_tests`: failed tests of head with message, locations and a source snippet.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracetool.archive.manifest import as_dict
from tracetool.archive.snapshot import Snapshot

SNIPPET_CONTEXT = 10


def _canonical(snapshot: Snapshot, name: str, key: str) -> list[str]:
    values = (snapshot.index(name).get("canonical") or {}).get(key) or []
    return [str(v) for v in values]


def sql_diff(base: Snapshot, head: Snapshot, report_removed: bool) -> dict[str, Any]:
    b_queries: set[str] = set()
    b_tables: set[str] = set()
    for name in base.recordings:
        b_queries.update(_canonical(base, name, "sqlNormalized"))
        b_tables.update(_canonical(base, name, "sqlTables"))
    h_queries: dict[str, list[str]] = {}
    h_tables: set[str] = set()
    for name in sorted(head.recordings):
        for query in _canonical(head, name, "sqlNormalized"):
            h_queries.setdefault(query, []).append(name)
        h_tables.update(_canonical(head, name, "sqlTables"))
    new_queries = []
    for query in sorted(set(h_queries) - b_queries):
        locations: list[str] = []
        for name in h_queries[query]:
            entry = (head.index(name).get("queries") or {}).get(query) or {}
            for where in entry.get("callers") or ():
                if where not in locations:
                    locations.append(where)
        new_queries.append(
            {"query": query, "appmaps": h_queries[query], "sourceLocations": sorted(locations)}
        )
    return {
        "newQueries": new_queries,
        "newTables": sorted(h_tables - b_tables),
        "removedQueries": sorted(b_queries - set(h_queries)) if report_removed else [],
        "removedTables": sorted(b_tables - h_tables) if report_removed else [],
    }


def count_diff(
    base: Snapshot, head: Snapshot, names: list[str], report_removed: bool
) -> dict[str, list[dict[str, Any]]]:
    queries: list[dict[str, Any]] = []
    requests: list[dict[str, Any]] = []
    hiders: dict[Any, Callable[[str], bool]] = {}
    for name in names:
        b_idx, h_idx = base.index(name), head.index(name)
        b_q, h_q = b_idx.get("queries") or {}, h_idx.get("queries") or {}
        language = as_dict(as_dict(h_idx.get("metadata")).get("language")).get("name")
        if language not in hiders:
            hiders[language] = head.filter.query_hider(language)
        for query in sorted(set(b_q) & set(h_q)):
            if hiders[language](query):
                continue  # PRAGMA, SAVEPOINT, schema lookups: noise the diagrams hide too
            b_n, h_n = int(b_q[query].get("count", 0)), int(h_q[query].get("count", 0))
            if h_n > b_n or (report_removed and h_n < b_n):
                queries.append(
                    {
                        "appmap": name,
                        "query": query,
                        "baseCount": b_n,
                        "headCount": h_n,
                        "sourceLocations": list(h_q[query].get("callers") or []),
                    }
                )
        b_r, h_r = b_idx.get("routes") or {}, h_idx.get("routes") or {}
        for route in sorted(set(b_r) & set(h_r)):
            b, h = b_r[route], h_r[route]
            pairs = (
                (b.get("count", 0), h.get("count", 0)),
                (b.get("sqlCount", 0), h.get("sqlCount", 0)),
            )
            grew = any(hv > bv for bv, hv in pairs)
            shrank = any(hv < bv for bv, hv in pairs)
            if grew or (report_removed and shrank):
                requests.append(
                    {
                        "appmap": name,
                        "route": route,
                        "baseCount": b.get("count", 0),
                        "headCount": h.get("count", 0),
                        "baseSqlCount": b.get("sqlCount", 0),
                        "headSqlCount": h.get("sqlCount", 0),
                    }
                )
    queries.sort(key=lambda e: (e["baseCount"] - e["headCount"], e["appmap"], e["query"]))
    requests.sort(key=lambda e: (e["baseSqlCount"] - e["headSqlCount"], e["appmap"], e["route"]))
    return {"queries": queries, "requests": requests}


def _snippet(source_dir: Path, location: str | None, language: str | None) -> dict[str, Any] | None:
    if not location:
        return None
    path, _, line = location.rpartition(":")
    if not path or not line.isdigit():
        path, line = location, "1"
    file = (source_dir / path).resolve()
    try:
        file.relative_to(source_dir.resolve())
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
    except (ValueError, OSError):
        return None
    center = int(line)
    start = max(1, center - SNIPPET_CONTEXT)
    end = min(len(lines), center + SNIPPET_CONTEXT)
    if start > end:
        return None
    return {
        "codeFragment": "\n".join(lines[start - 1 : end]),
        "startLine": start,
        "language": language,
    }


def failed_tests(head: Snapshot, names: list[str], source_dir: Path) -> list[dict[str, Any]]:
    out = []
    for name in names:
        md = head.metadata(name)
        failure = as_dict(md.get("test_failure"))
        lang = as_dict(md.get("language"))
        entry: dict[str, Any] = {
            "appmap": name,
            "name": md.get("name") or name,
            "testLocation": md.get("source_location"),
            "failureMessage": failure.get("message"),
            "failureLocation": failure.get("location"),
        }
        where = failure.get("location") or md.get("source_location")
        snippet = _snippet(source_dir, where, lang.get("name"))
        if snippet is not None:
            entry["testSnippet"] = snippet
        out.append(entry)
    return out


def source_files(index: dict[str, Any]) -> list[str]:
    """Relative source paths of the functions in a recording's classMap."""
    found: set[str] = set()
    stack = list(index.get("classMap") or [])
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        location = node.get("location")
        if isinstance(location, str) and location:
            path = location.rsplit(":", 1)[0] if ":" in location else location
            if path and not path.startswith(("/", "<")) and ".." not in path.split("/"):
                found.add(path)
        stack.extend(node.get("children") or [])
    return sorted(found)
