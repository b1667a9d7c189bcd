"""Function outline of Python source and matching recorded functions to it (no server)."""

from __future__ import annotations

import textwrap

from tracetool_daemon.lsp.source import function_at, match, outline

SOURCE = textwrap.dedent(
    """\
    import functools


    def plain(a,
              b):
        return a + b


    class Shop:
        @property
        def name(self):
            return "shop"

        @name.setter
        def name(self, value):
            pass

        @functools.lru_cache(maxsize=None)
        @staticmethod
        async def fetch(key):
            def inner():
                return key
            return inner()


    def über(x): return x
    """
)


def rec(method: str, line: int, fqid: str | None = None) -> dict[str, object]:
    return {"method": method, "lineno": line, "fqid": fqid or f"function:{method}@{line}"}


def test_outline_lines_and_columns() -> None:
    functions = outline(SOURCE)
    assert functions is not None
    got = [
        (f.qualname, f.first_line, f.def_line, f.header_end, f.end_line, f.first_col, f.name_col)
        for f in functions
    ]
    assert got == [
        ("plain", 4, 4, 5, 6, 0, 4),
        ("Shop.name", 10, 11, 11, 12, 4, 8),
        ("Shop.name", 14, 15, 15, 16, 4, 8),
        ("Shop.fetch", 18, 20, 20, 23, 4, 14),
        ("Shop.fetch.<locals>.inner", 21, 21, 21, 22, 8, 12),
        ("über", 26, 26, 26, 26, 0, 4),
    ]


def test_outline_of_broken_text() -> None:
    assert outline("def broken(:\n") is None
    assert outline("") == []


def test_match_exact_lines() -> None:
    functions = outline(SOURCE)
    assert functions is not None
    # the agent records co_firstlineno: the first decorator line; a def line matches too
    found = match([rec("fetch", 18), rec("name", 14), rec("plain", 4), rec("inner", 21)], functions)
    assert [(m.function.qualname, m.function.first_line, m.exact) for m in found] == [
        ("plain", 4, True),
        ("Shop.name", 14, True),
        ("Shop.fetch", 18, True),
        ("Shop.fetch.<locals>.inner", 21, True),
    ]
    assert match([rec("name", 11)], functions)[0].function.first_line == 10


def test_match_after_edits_takes_the_nearest_same_name() -> None:
    functions = outline("\n\n\n" + SOURCE)  # three lines inserted above
    assert functions is not None
    found = match([rec("name", 10, "getter"), rec("name", 14, "setter")], functions)
    assert [(m.recorded["fqid"], m.function.first_line, m.exact) for m in found] == [
        ("getter", 13, False),
        ("setter", 17, False),
    ]
    # unknown names and far-away lines do not match
    assert match([rec("missing", 4), rec("plain", 4000)], functions) == []


def test_exact_match_wins_over_drift() -> None:
    functions = outline(SOURCE)
    assert functions is not None
    # two records for one source function: the exact one keeps it
    found = match([rec("plain", 6, "moved"), rec("plain", 4, "here")], functions)
    assert [(m.recorded["fqid"], m.exact) for m in found] == [("here", True)]


def test_function_at_header_lines() -> None:
    functions = outline(SOURCE)
    assert functions is not None
    found = match([rec("plain", 4), rec("fetch", 18)], functions)
    assert function_at(found, 4) is not None and function_at(found, 5) is not None
    assert function_at(found, 6) is None  # body
    assert [function_at(found, n) is not None for n in (18, 19, 20, 21)] == [True] * 3 + [False]
