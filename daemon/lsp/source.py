"""Where functions are in a Python source text, and which of them the index recorded.

`outline(text)` lists every `def` / `async def` (nested ones and methods included) with its
lines, 1-based as the agent records them: `first_line` is the first decorator line (the code
object's `co_firstlineno`, which the agent writes as `lineno`), `def_line` the `def` keyword's
line, `header_end` the last line of the signature and `end_line` the last line of the body. A
text that does not parse (the user is typing) gives None, and callers keep the previous outline.

`match(recorded, functions)` pairs recorded functions (rows of
`tracetool.query.functions_in_file`) with source functions of the same name: exactly when the
recorded line is the function's first or `def` line, else the nearest (the file was edited since
it was recorded), keeping same-named functions in their recorded order. Each source function
gets at most one recorded function; a record farther than `MAX_DRIFT` lines matches nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Farther than this from the recorded line, a same-named function is a different function.
MAX_DRIFT = 200


@dataclass(frozen=True)
class SourceFunction:
    name: str
    qualname: str
    first_line: int
    def_line: int
    header_end: int
    end_line: int
    first_col: int  # column of the first decorator or the `def` keyword
    name_col: int  # column of the name on the `def` line

    def covers_header(self, line: int) -> bool:
        """Whether 1-based `line` is one of the decorator or signature lines."""
        return self.first_line <= line <= self.header_end

    def contains(self, line: int) -> bool:
        return self.first_line <= line <= self.end_line


@dataclass(frozen=True)
class Match:
    function: SourceFunction
    recorded: dict[str, Any]  # a functions_in_file row
    exact: bool


def _name_col(lines: Sequence[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
    # ast columns are UTF-8 byte offsets; LSP columns default to UTF-16 units. Find the name
    # after the `def` keyword in the decoded line instead of converting offsets.
    keyword = line.find("def", 0)
    at = line.find(node.name, keyword + 3 if keyword >= 0 else 0)
    return max(at, 0)


def _first_col(lines: Sequence[str], line_no: int) -> int:
    line = lines[line_no - 1] if line_no <= len(lines) else ""
    return len(line) - len(line.lstrip())


def outline(text: str) -> list[SourceFunction] | None:
    """Every function of `text` in source order, or None when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.splitlines()
    found: list[SourceFunction] = []
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                body_start = child.body[0].lineno if child.body else child.lineno
                found.append(
                    SourceFunction(
                        name=child.name,
                        qualname=qualname,
                        first_line=first,
                        def_line=child.lineno,
                        header_end=max(child.lineno, body_start - 1),
                        end_line=child.end_lineno or child.lineno,
                        first_col=_first_col(lines, first),
                        name_col=_name_col(lines, child),
                    )
                )
                stack.append((child, f"{qualname}.<locals>."))
            elif isinstance(child, ast.ClassDef):
                stack.append((child, f"{prefix}{child.name}."))
            else:
                stack.append((child, prefix))
    found.sort(key=lambda f: (f.first_line, f.def_line))
    return found


def _cost(row: dict[str, Any], fn: SourceFunction) -> int:
    line = int(row["lineno"])
    return min(abs(fn.first_line - line), abs(fn.def_line - line))


def _align(
    rows: Sequence[dict[str, Any]], functions: Sequence[SourceFunction]
) -> list[tuple[dict[str, Any], SourceFunction, int]]:
    """Order-preserving pairing of same-named records and functions (both sorted by line):
    as many pairs as possible, then the least total line distance. Edits move code in blocks,
    so a getter recorded above its setter is still above it."""
    n, m = len(rows), len(functions)
    # best[i][j]: (pairs, -distance) for rows[i:] and functions[j:]
    best = [[(0, 0)] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            options = [best[i + 1][j], best[i][j + 1]]
            cost = _cost(rows[i], functions[j])
            if cost <= MAX_DRIFT:
                pairs, distance = best[i + 1][j + 1]
                options.append((pairs + 1, distance - cost))
            best[i][j] = max(options)
    out = []
    i = j = 0
    while i < n and j < m:
        cost = _cost(rows[i], functions[j])
        pairs, distance = best[i + 1][j + 1]
        if cost <= MAX_DRIFT and best[i][j] == (pairs + 1, distance - cost):
            out.append((rows[i], functions[j], cost))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    return out


def match(recorded: Sequence[dict[str, Any]], functions: Sequence[SourceFunction]) -> list[Match]:
    """Pair recorded functions with source functions (module doc), in source order."""
    rows_by_name: dict[str, list[dict[str, Any]]] = {}
    for row in recorded:
        if row.get("lineno") is not None and row.get("method"):
            rows_by_name.setdefault(str(row["method"]), []).append(row)
    fns_by_name: dict[str, list[SourceFunction]] = {}
    for fn in functions:
        fns_by_name.setdefault(fn.name, []).append(fn)
    found: list[Match] = []
    for name, rows in rows_by_name.items():
        rows.sort(key=lambda r: (int(r["lineno"]), str(r.get("fqid"))))
        fns = sorted(fns_by_name.get(name, []), key=lambda f: (f.first_line, f.def_line))
        for row, fn, cost in _align(rows, fns):
            found.append(Match(fn, row, exact=cost == 0))
    return sorted(found, key=lambda m: (m.function.first_line, m.function.def_line))


def function_at(matches: Sequence[Match], line: int) -> Match | None:
    """The match whose decorator or signature lines include 1-based `line`."""
    for m in matches:
        if m.function.covers_header(line):
            return m
    return None
