"""Text the language server shows: code-lens titles, hover Markdown, diagnostic messages.

Pure functions over rows of `tracetool.query.source` (no pygls, no database), so wording is
tested without a server. Durations are milliseconds in the rows and rendered with
`format_ms` ("0.067 ms", "12.3 ms", "1.25 s").
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

MAX_SQL = 160
MAX_MESSAGE = 200


def format_ms(ms: float | None) -> str:
    if ms is None:
        return "–"
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    if ms >= 100:
        return f"{ms:.0f} ms"
    if ms >= 10:
        return f"{ms:.1f} ms"
    if ms >= 1:
        return f"{ms:.2f} ms"
    if ms >= 0.001:
        return f"{ms:.3f} ms"
    return "<0.001 ms"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def clip(text: str | None, limit: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def code(text: str) -> str:
    """`text` as a Markdown code span, whatever backticks it contains."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|])")


def escape(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", text)


def lens_title(row: dict[str, Any]) -> str:
    """`▶ called 3× in 2 recordings · p50 1.25 ms`"""
    return (
        f"▶ called {row['count']}× in {plural(int(row['recordings']), 'recording')}"
        f" · p50 {format_ms(row.get('p50_ms'))}"
    )


def open_link(text: str, recording: str, directory: str | None) -> str:
    """`text` as a link running the editor's `tracetool.openRecording` (the recording viewer);
    plain text without a project directory."""
    if directory is None or not recording:
        return escape(text)
    arg = json.dumps([{"directory": directory, "recording": recording, "name": text}])
    return f"[{escape(text)}](command:tracetool.openRecording?{quote(arg)})"


def hover_markdown(detail: dict[str, Any], directory: str | None = None) -> str:
    """Hover text of a recorded function (a `function_detail` row); with the project
    `directory`, recordings and tests link into the recording viewer."""
    lines = [
        f"**tracetool** · {code(detail['name'])}",
        "",
        f"called **{detail['count']}×** in **{plural(int(detail['recordings']), 'recording')}**"
        f" · total {format_ms(detail.get('total_ms'))}"
        f" · self {format_ms(detail.get('self_ms'))}"
        f" · p50 {format_ms(detail.get('p50_ms'))}"
        f" · max {format_ms(detail.get('max_ms'))}",
    ]
    recordings = detail.get("top_recordings") or []
    if recordings:
        lines += ["", "**Top recordings**", ""]
        for rec in recordings:
            status = f" ({rec['test_status']})" if rec.get("test_status") else ""
            name = open_link(str(rec["name"]), str(rec.get("recording") or ""), directory)
            lines.append(
                f"- {name}{escape(status)} — {rec['count']}× · {format_ms(rec.get('total_ms'))}"
            )
    queries = detail.get("queries") or []
    if queries:
        lines += ["", "**SQL issued**", ""]
        for q in queries:
            lines.append(
                f"- {code(clip(q['sql'], MAX_SQL))} — {q['count']}×"
                f" · {format_ms(q.get('total_ms'))}"
            )
    tests = detail.get("tests") or []
    if tests:
        lines += ["", "**Tests reaching it**", ""]
        for t in tests:
            status = f" ({t['test_status']})" if t.get("test_status") else ""
            where = f" — {code(str(t['source_location']))}" if t.get("source_location") else ""
            name = open_link(str(t["name"]), str(t["recording"]), directory)
            lines.append(f"- {name}{escape(status)}{where}")
    exceptions = detail.get("exceptions") or []
    if exceptions:
        lines += ["", "**Exceptions**", ""]
        for exc in exceptions:
            where = f" at {code(exc['location'])}" if exc.get("location") else ""
            message = (
                f": {escape(clip(exc.get('message'), MAX_MESSAGE))}" if exc.get("message") else ""
            )
            lines.append(
                f"- {code(str(exc['class']))}{where} — {exc['count']}× in"
                f" {plural(int(exc['recordings']), 'recording')}{message}"
            )
    return "\n".join(lines)


def exception_message(row: dict[str, Any], function: str, raised_here: bool) -> str:
    """Diagnostic text for a `function_exceptions` row."""
    seen = f"{row['count']}× in {plural(int(row['recordings']), 'recording')}"
    message = clip(row.get("message"), MAX_MESSAGE)
    tail = f": {message}" if message else ""
    if raised_here:
        return f"{row['class']} raised here ({seen}){tail}"
    where = f" (raised at {row['location']})" if row.get("location") else ""
    return f"{row['class']}{where} left {function}() ({seen}){tail}"


def n_plus_one_message(row: dict[str, Any]) -> str:
    """Diagnostic text for a `repeated_queries` row."""
    scope = "one request" if row.get("in_request") else "one recording"
    where = row.get("route") or row.get("recording") or "?"
    again = row["requests"] - 1
    more = f"; {plural(again, 'more ' + scope.split()[1])} like it" if again > 0 else ""
    return (
        f"N+1 query: {clip(row['sql'], MAX_SQL)} ran {row['max_count']}× within {scope}"
        f" ({where}){more}"
    )


def slow_query_message(row: dict[str, Any]) -> str:
    """Diagnostic text for a `slow_queries` row."""
    runs = f"{row['count']} slow run{'s' if row['count'] != 1 else ''}"
    where = f" in {row['recording']}" if row.get("recording") else ""
    return (
        f"Slow query: {clip(row['sql'], MAX_SQL)} took up to {format_ms(row.get('max_ms'))}"
        f" ({runs}; slowest{where})"
    )


def recordings_result(function: dict[str, Any], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The `tracetool.showRecordings` result: the function and its recordings."""
    return {
        "function": function.get("fqid"),
        "name": function.get("name"),
        "location": function.get("location"),
        "count": len(rows),
        "recordings": list(rows),
    }
