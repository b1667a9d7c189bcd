"""Wording of lenses, hovers and diagnostics (no server)."""

from __future__ import annotations

import pytest
from tracetool_daemon.lsp import render


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, "–"),
        (0.0004, "<0.001 ms"),
        (0.0674, "0.067 ms"),
        (1.234, "1.23 ms"),
        (12.34, "12.3 ms"),
        (123.4, "123 ms"),
        (1234.0, "1.23 s"),
    ],
)
def test_format_ms(ms: float | None, text: str) -> None:
    assert render.format_ms(ms) == text


def test_lens_title() -> None:
    assert render.lens_title({"count": 1, "recordings": 1, "p50_ms": 2.5}) == (
        "▶ called 1× in 1 recording · p50 2.50 ms"
    )
    assert render.lens_title({"count": 40, "recordings": 3, "p50_ms": None}) == (
        "▶ called 40× in 3 recordings · p50 –"
    )


def test_code_span_and_escape() -> None:
    assert render.code("a = ?") == "`a = ?`"
    assert render.code("x `y` z") == "``x `y` z``"
    assert render.code("`edge") == "`` `edge ``"
    assert render.escape("a_b *c* <d>") == "a\\_b \\*c\\* \\<d\\>"


def test_hover_markdown_sections() -> None:
    text = render.hover_markdown(
        {
            "name": "app/views.show",
            "count": 2,
            "recordings": 2,
            "total_ms": 30.0,
            "self_ms": 25.0,
            "p50_ms": 10.0,
            "max_ms": 20.0,
            "top_recordings": [
                {"name": "test_show[1]", "test_status": "failed", "count": 1, "total_ms": 20.0}
            ],
            "queries": [{"sql": "SELECT  *\n FROM users", "count": 13, "total_ms": 1.3}],
            "exceptions": [
                {
                    "class": "KeyError",
                    "location": "app/views.py:32",
                    "message": "'id'",
                    "count": 1,
                    "recordings": 1,
                }
            ],
        }
    )
    assert text.splitlines() == [
        "**tracetool** · `app/views.show`",
        "",
        "called **2×** in **2 recordings** · total 30.0 ms · self 25.0 ms · p50 10.0 ms"
        " · max 20.0 ms",
        "",
        "**Top recordings**",
        "",
        "- test\\_show\\[1\\] \\(failed\\) — 1× · 20.0 ms",
        "",
        "**SQL issued**",
        "",
        "- `SELECT * FROM users` — 13× · 1.30 ms",
        "",
        "**Exceptions**",
        "",
        "- `KeyError` at `app/views.py:32` — 1× in 1 recording: 'id'",
    ]
    bare = render.hover_markdown({"name": "f", "count": 1, "recordings": 1})
    assert "**" in bare and "Top recordings" not in bare and "SQL" not in bare


def test_exception_messages() -> None:
    row = {
        "class": "KeyError",
        "location": "app/x.py:3",
        "message": "'id'",
        "count": 2,
        "recordings": 1,
    }
    assert (
        render.exception_message(row, "show", True)
        == "KeyError raised here (2× in 1 recording): 'id'"
    )
    assert render.exception_message(row, "show", False) == (
        "KeyError (raised at app/x.py:3) left show() (2× in 1 recording): 'id'"
    )
    long = {**row, "message": "x" * 500, "location": None}
    message = render.exception_message(long, "show", False)
    assert message.startswith("KeyError left show() (2× in 1 recording): xxx")
    assert message.endswith("…") and len(message) < 260


def test_n_plus_one_message() -> None:
    row = {
        "sql": "SELECT 1",
        "max_count": 12,
        "requests": 3,
        "in_request": True,
        "route": "GET /users/{id}",
        "recording": "a.trace.json",
    }
    assert render.n_plus_one_message(row) == (
        "N+1 query: SELECT 1 ran 12× within one request (GET /users/{id}); 2 more requests like it"
    )
    alone = {**row, "requests": 1, "in_request": False, "route": None}
    assert render.n_plus_one_message(alone) == (
        "N+1 query: SELECT 1 ran 12× within one recording (a.trace.json)"
    )


def test_slow_query_message_and_viewer_links() -> None:
    row = {"sql": "SELECT *\n  FROM t", "count": 2, "max_ms": 250.0, "recording": "a.trace.json"}
    assert render.slow_query_message(row) == (
        "Slow query: SELECT * FROM t took up to 250 ms (2 slow runs; slowest in a.trace.json)"
    )
    link = render.open_link("list [items]", "code/list.trace.json", "/p")
    assert link.startswith("[list \\[items\\]](command:tracetool.openRecording?")
    assert "%22recording%22%3A%20%22code/list.trace.json%22" in link
    assert render.open_link("x", "code/x.trace.json", None) == "x"
    detail = {
        "name": "f",
        "count": 1,
        "recordings": 1,
        "tests": [
            {
                "name": "t1",
                "recording": "pytest/t1.trace.json",
                "test_status": "failed",
                "source_location": "tests/test_a.py:3",
            },
        ],
    }
    text = render.hover_markdown(detail, "/p")
    assert "**Tests reaching it**\n\n- [t1](command:tracetool.openRecording?" in text
    assert "\\(failed\\) — `tests/test_a.py:3`" in text
