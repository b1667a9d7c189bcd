"""`tracetool compare-report`: change-report.json → report.md (Markdown, for a pull request).

Layout, modelled on AppMap's `expectedReport.md.txt` (same title style, summary table, anchors
and section headings where the content exists in both):

    # Runtime code review
    | Summary | Status |            one row per section, linking to it
    <h2 id="failed-tests">          failures: message, locations, source snippet
    <h2 id="openapi-changes">       breaking / non-breaking API changes + unified diff of openapi.yml
    <h2 id="sql-changes">           new and removed queries and tables          (AppMap: experimental)
    <h2 id="count-changes">         queries and requests whose call counts grew (ours)
    <h2 id="new-appmaps">           new test recordings, with the test's source location
    <h2 id="removed-appmaps">       removed test recordings
    <h2 id="changed-appmaps">       changed recordings, diff diagram and what changed (AppMap: experimental)

Not rendered, because we have no scanner: AppMap's security-flaws, performance-problems and
code-antipatterns sections. At most `MAX_ITEMS` entries per section, then "… and N more".

Links: a recording is `<report-relative path>`, or with `--appmap-url` that URL with a `path`
query parameter carrying the path; a source location `path:line` is the location itself, or
with `--source-url` that URL with the path appended to its URL path and `#L<line>`.
Works on AppMap's change-report.json too (recording paths are then found on disk).
"""

from __future__ import annotations

import difflib
import urllib.parse
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tracetool.archive.manifest import OPENAPI_PATH, as_dict
from tracetool.errors import NotFoundError, TraceFormatError
from tracetool.trace.document import atomic_write_bytes

REPORT_MD = "report.md"
MAX_ITEMS = 10
MAX_DIFF_LINES = 30  # of the text diff shown per changed recording
_SQL_LABELS = {
    "newQueries": "new query",
    "removedQueries": "removed query",
    "newTables": "new table",
    "removedTables": "removed table",
}


@dataclass(frozen=True)
class ReportOptions:
    source_url: str | None = None
    appmap_url: str | None = None


class _Links:
    def __init__(self, root: Path, report: dict[str, Any], options: ReportOptions) -> None:
        self.root = root
        self.paths = report.get("recordingPaths") or {}
        self.options = options

    def _url(self, rel: str) -> str:
        base = self.options.appmap_url
        if not base:
            return urllib.parse.quote(rel, safe="/:._-")
        sep = "&" if "?" in base else "?"
        return f"{base}{sep}{urllib.parse.urlencode({'path': rel})}"

    def recording(self, side: str, name: str) -> str:
        rel = (self.paths.get(side) or {}).get(name)
        if rel is None:
            rel = f"{side}/{name}.appmap.json"
            for ext in (".trace.json", ".appmap.json"):
                if (self.root / side / f"{name}{ext}").is_file():
                    rel = f"{side}/{name}{ext}"
                    break
        return self._url(rel)

    def diagram(self, rel: str) -> str:
        return self._url(f"diff/{rel}")

    def source(self, location: str) -> str:
        base = self.options.source_url
        if not base:
            return location
        path, _, line = location.rpartition(":")
        if not path or not line.isdigit():
            path, line = location, ""
        parts = urllib.parse.urlsplit(base)
        joined = parts.path.rstrip("/") + "/" + urllib.parse.quote(path.lstrip("/"))
        return urllib.parse.urlunsplit(
            (parts.scheme, parts.netloc, joined, parts.query, f"L{line}" if line else "")
        )


def _title(md: dict[str, Any], name: str) -> str:
    recorder = as_dict(md.get("recorder"))
    label = str(md.get("name") or name).replace("_", " ").replace("]", "\\]")
    prefix = f"[{recorder.get('name')}] " if recorder.get("name") else ""
    return f"{prefix}{label}"


def _limited(items: list[str]) -> list[str]:
    if len(items) <= MAX_ITEMS:
        return items
    return [*items[:MAX_ITEMS], f"… and {len(items) - MAX_ITEMS} more"]


def _by_recorder(names: list[str], metadata: dict[str, Any], word: str) -> str:
    counts: Counter[str] = Counter()
    for name in names:
        md = metadata.get(name) or {}
        recorder = as_dict(md.get("recorder"))
        counts[str(recorder.get("name") or "")] += 1
    parts = []
    for recorder_name, n in sorted(counts.items()):
        kind = f"{recorder_name} test" if recorder_name else "recording"
        parts.append(f"{n} {word} {kind}{'s' if n != 1 else ''}")
    return ", ".join(parts)


def _describe_api(d: dict[str, Any]) -> str:
    if d.get("description"):
        return str(d["description"])
    details = d.get("destinationSpecEntityDetails") or d.get("sourceSpecEntityDetails") or [{}]
    location = str(details[0].get("location", ""))
    verb = "Add" if d.get("action") == "add" else "Remove"
    if d.get("entity") == "response.status-code" and ".responses." in location:
        head, _, status = location.rpartition(".responses.")
        path, _, method = head.removeprefix("paths.").rpartition(".")
        return f"{verb} response status code `{status} {method.upper()} {path}`"
    return f"{verb} {d.get('entity', 'entity')} `{location.removeprefix('paths.')}`"


def _openapi_file(side: Path) -> Path | None:
    for rel in (OPENAPI_PATH, "openapi.yml"):
        if (side / rel).is_file():
            return side / rel
    return None


def render(root: Path, report: dict[str, Any], options: ReportOptions) -> str:
    links = _Links(root, report, options)
    meta = report.get("appMapMetadata") or {}
    b_meta, h_meta = meta.get("base") or {}, meta.get("head") or {}
    failures = report.get("testFailures") or []
    new, removed = report.get("newAppMaps") or [], report.get("removedAppMaps") or []
    changed = report.get("changedAppMaps") or []
    api, sql, counts = report.get("apiDiff"), report.get("sqlDiff"), report.get("countDiff")
    rows: list[tuple[str, str]] = []
    body: list[str] = []

    if failures:
        rows.append(("[Failed tests](#failed-tests)", f":x: {len(failures)} failed"))
        body += ['<h2 id="failed-tests">⚠️ Failed tests</h2>', ""]
        for f in failures[:MAX_ITEMS]:
            body.append(
                f"### [{_title(h_meta.get(f['appmap']) or {}, f['appmap'])}]"
                f"({links.recording('head', f['appmap'])})"
            )
            body.append("")
            if f.get("failureMessage"):
                body += ["```", str(f["failureMessage"]).strip(), "```", ""]
            for label, key in (("Test", "testLocation"), ("Failure", "failureLocation")):
                if f.get(key):
                    body.append(f"- {label}: [`{f[key]}`]({links.source(str(f[key]))})")
            snippet = f.get("testSnippet")
            if isinstance(snippet, dict) and snippet.get("codeFragment"):
                body += ["", f"```{snippet.get('language') or ''}", snippet["codeFragment"], "```"]
            body.append("")
    else:
        rows.append(("Failed tests", ":white_check_mark: All tests passed"))

    if isinstance(api, dict):
        breaking = api.get("breakingDifferences") or []
        non_breaking = api.get("nonBreakingDifferences") or []
        status = []
        if breaking:
            status.append(f":warning: {len(breaking)} breaking")
        if non_breaking:
            status.append(f":wrench: {len(non_breaking)} non-breaking")
        if status:
            rows.append(("[API changes](#openapi-changes)", " ".join(status)))
            body += ['<h2 id="openapi-changes">🔄 API changes</h2>', ""]
            for title, note, items in (
                (":warning: Breaking changes", "are <b>not</b>", breaking),
                (":wrench: Non-breaking changes", "<b>are</b>", non_breaking),
            ):
                if items:
                    body += [
                        f"### {title}",
                        "",
                        f"<small>These changes {note} backwards-compatible, according to "
                        f"the OpenAPI specification.</small>",
                        "",
                    ]
                    body += [f"- {line}" for line in _limited([_describe_api(d) for d in items])]
                    body.append("")
            body += _openapi_details(root)
        else:
            rows.append(("API changes", ":white_check_mark: No changes"))

    if isinstance(sql, dict):
        parts = [(label, sql.get(key) or []) for key, label in _SQL_LABELS.items()]
        if any(v for _, v in parts):
            summary = ", ".join(
                _count(len(v), label, label[:-1] + "ies" if label.endswith("y") else None)
                for label, v in parts
                if v
            )
            rows.append(("[SQL changes](#sql-changes)", f":floppy_disk: {summary}"))
            body += ['<h2 id="sql-changes">🗄️ SQL changes</h2>', ""]
            body += _sql_section(sql, links)
        else:
            rows.append(("SQL changes", ":white_check_mark: No changes"))

    if isinstance(counts, dict) and (counts.get("queries") or counts.get("requests")):
        rows.append(("[Call counts](#count-changes)", _count_status(counts)))
        body += ['<h2 id="count-changes">📈 Call count changes</h2>', ""]
        body += _count_section(counts, links)

    if new:
        rows.append(
            ("[New recordings](#new-appmaps)", f":star: {_by_recorder(new, h_meta, 'new')}")
        )
        body += ['<h2 id="new-appmaps">⭐ New recordings</h2>', ""]
        lines = []
        for name in new:
            md = h_meta.get(name) or {}
            line = f"[{_title(md, name)}]({links.recording('head', name)})"
            if md.get("source_location"):
                loc = str(md["source_location"])
                line += f" from [`{loc}`]({links.source(loc)})"
            lines.append(line)
        body += ["\n\n".join(_limited(lines)), "", ""]
    if removed:
        rows.append(
            (
                "[Removed recordings](#removed-appmaps)",
                f":heavy_multiplication_x: {_by_recorder(removed, b_meta, 'removed')}",
            )
        )
        body += ['<h2 id="removed-appmaps">✖️ Removed recordings</h2>', ""]
        lines = [
            f"[{_title(b_meta.get(n) or {}, n)}]({links.recording('base', n)})" for n in removed
        ]
        body += ["\n\n".join(_limited(lines)), "", ""]
    if changed:
        rows.append(
            (
                "[Changed recordings](#changed-appmaps)",
                f":twisted_rightwards_arrows: {len(changed)} changed",
            )
        )
        body += ['<h2 id="changed-appmaps">🔀 Changed recordings</h2>', ""]
        body += _changed_section(changed, report.get("sequenceDiagramDiff") or {}, h_meta, links)

    head = ["# Runtime code review", "", "| Summary | Status |", "| --- | --- |"]
    head += [f"| {a} | {b} |" for a, b in rows]
    return "\n".join([*head, "", "", *body]).rstrip() + "\n"


def _count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def _count_status(counts: dict[str, Any]) -> str:
    queries = counts.get("queries") or []
    requests = counts.get("requests") or []
    more = sum(1 for e in queries if e["headCount"] > e["baseCount"])
    heavier = sum(1 for e in requests if e["headSqlCount"] > e["baseSqlCount"])
    parts = []
    if more:
        verb = "runs" if more == 1 else "run"
        parts.append(
            f":chart_with_upwards_trend: {_count(more, 'query', 'queries')} {verb} more often"
        )
    if heavier:
        verb = "issues" if heavier == 1 else "issue"
        parts.append(f"{_count(heavier, 'request')} {verb} more SQL")
    if len(queries) - more or len(requests) - heavier:
        parts.append(
            f":chart_with_downwards_trend: {len(queries) + len(requests) - more - heavier} fewer"
        )
    return ", ".join(parts)


def _openapi_details(root: Path) -> list[str]:
    b, h = _openapi_file(root / "base"), _openapi_file(root / "head")
    if b is None or h is None:
        return []
    lines = list(
        difflib.unified_diff(
            b.read_text(encoding="utf-8").splitlines(),
            h.read_text(encoding="utf-8").splitlines(),
            "base/openapi.yml",
            "head/openapi.yml",
            lineterm="",
        )
    )
    if not lines:
        return []
    return [
        "",
        "<details>",
        "<summary>",
        "Detailed OpenAPI diff",
        "</summary>",
        "",
        "```diff",
        *lines,
        "```",
        "</details>",
        "",
    ]


def _sql_section(sql: dict[str, Any], links: _Links) -> list[str]:
    out: list[str] = []
    new_queries = sql.get("newQueries") or []
    if new_queries:
        out += [f"### New queries ({len(new_queries)})", ""]
        items = []
        for q in new_queries:
            query = q["query"] if isinstance(q, dict) else str(q)
            text = f"`{query}`"
            if isinstance(q, dict):
                recs = [
                    f"[{n}]({links.recording('head', n)})" for n in (q.get("appmaps") or [])[:3]
                ]
                locs = [f"[`{s}`]({links.source(s)})" for s in (q.get("sourceLocations") or [])[:3]]
                if recs:
                    text += " in " + ", ".join(recs)
                if locs:
                    text += " from " + ", ".join(locs)
            items.append(text)
        out += [f"- {line}" for line in _limited(items)] + [""]
    for key, title in (
        ("removedQueries", "Removed queries"),
        ("newTables", "New tables"),
        ("removedTables", "Removed tables"),
    ):
        values = [str(v.get("query") if isinstance(v, dict) else v) for v in sql.get(key) or []]
        if values:
            out += [f"### {title} ({len(values)})", ""]
            out += [f"- `{v}`" for v in _limited(values)] + [""]
    return out


def _count_section(counts: dict[str, Any], links: _Links) -> list[str]:
    out: list[str] = []
    queries = counts.get("queries") or []
    if queries:
        out += ["| Recording | Query | Base | Head |", "| --- | --- | --- | --- |"]
        for e in queries[:MAX_ITEMS]:
            out.append(
                f"| [{e['appmap']}]({links.recording('head', e['appmap'])}) | "
                f"`{str(e['query']).replace('|', '&#124;')}` | {e['baseCount']} | {e['headCount']} |"
            )
        if len(queries) > MAX_ITEMS:
            out.append(f"\n… and {len(queries) - MAX_ITEMS} more")
        out.append("")
    requests = counts.get("requests") or []
    if requests:
        out += [
            "| Recording | Request | Calls (base → head) | SQL (base → head) |",
            "| --- | --- | --- | --- |",
        ]
        for e in requests[:MAX_ITEMS]:
            out.append(
                f"| [{e['appmap']}]({links.recording('head', e['appmap'])}) | `{e['route']}` | "
                f"{e['baseCount']} → {e['headCount']} | {e['baseSqlCount']} → {e['headSqlCount']} |"
            )
        out.append("")
    return out


def _changed_section(
    changed: list[dict[str, Any]],
    texts: dict[str, list[str]],
    h_meta: dict[str, Any],
    links: _Links,
) -> list[str]:
    out: list[str] = []
    for entry in changed[:MAX_ITEMS]:
        name = entry["appmap"]
        line = f"- [{_title(h_meta.get(name) or {}, name)}]({links.recording('head', name)})"
        if entry.get("sequenceDiagramDiff"):
            line += f" ([sequence diagram diff]({links.diagram(entry['sequenceDiagramDiff'])}))"
        out.append(line)
        lines = [s for t, names in texts.items() if t and name in names for s in t.splitlines()]
        if len(lines) > MAX_DIFF_LINES:
            lines = [*lines[:MAX_DIFF_LINES], f"… {len(lines) - MAX_DIFF_LINES} more lines"]
        if lines:
            out += ["", "  ```", *(f"  {line}" for line in lines), "  ```"]
    if len(changed) > MAX_ITEMS:
        out.append(f"- … and {len(changed) - MAX_ITEMS} more")
    return [*out, ""]


def write_report(report_dir: Path, options: ReportOptions) -> Path:
    """Read `<report_dir>/change-report.json`, write `<report_dir>/report.md`; returns its path."""
    source = report_dir / "change-report.json"
    if not source.is_file():
        raise NotFoundError(f"{source}: no change report; run tracetool compare first")
    try:
        report = orjson.loads(source.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise TraceFormatError(f"{source}: not valid JSON ({exc})") from None
    if not isinstance(report, dict):
        raise TraceFormatError(f"{source}: not a change report (expected a JSON object)")
    target = report_dir / REPORT_MD
    atomic_write_bytes(target, render(report_dir, report, options).encode("utf-8"))
    return target
