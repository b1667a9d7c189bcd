"""Rendering for the CLI: JSON, tables, warnings and progress.

rich is imported only when a table or progress bar is drawn. Tables go to stdout; warnings and
progress go to stderr, so `--json` output stays machine-readable. NO_COLOR is honoured by rich.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import orjson

T = TypeVar("T")


def _default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if hasattr(obj, "__fspath__"):
        return str(obj)
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def dumps_json(obj: Any, *, indent: bool = True) -> bytes:
    """JSON bytes with a trailing newline (orjson; dataclasses and paths handled)."""
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(obj, default=_default, option=option | orjson.OPT_NON_STR_KEYS) + b"\n"


def print_json(obj: Any, *, indent: bool = True) -> None:
    out = sys.stdout
    out.flush()
    out.buffer.write(dumps_json(obj, indent=indent))
    out.buffer.flush()


def print_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    justify: Sequence[str] | None = None,
    overflow: Sequence[str] | None = None,
) -> None:
    """A rich table on stdout; `justify` gives "left"/"right" per column, `overflow`
    "ellipsis" (default) or "fold" (wrap long identifiers instead of cutting them)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=False, header_style="bold")
    for i, name in enumerate(columns):
        table.add_column(
            name,
            justify=(justify[i] if justify else "left"),  # type: ignore[arg-type]
            overflow=(overflow[i] if overflow else "ellipsis"),  # type: ignore[arg-type]
        )
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    # Piped output (files, CI logs, tests) is not wrapped to a guessed 80 columns.
    width = None if sys.stdout.isatty() else 200
    # emoji=False: a cell is data (`function:a:b:`), never an emoji code; it also spares loading
    # rich's emoji table (~1.5 ms of every table)
    Console(soft_wrap=False, width=width, emoji=False).print(table)


def warn(message: str) -> None:
    """One warning line on stderr."""
    sys.stderr.write(f"warning: {message}\n")
    sys.stderr.flush()


def progress(items: Sequence[T], description: str) -> Iterator[T]:
    """Iterate with a progress bar on an interactive stderr, silently otherwise."""
    if not sys.stderr.isatty() or len(items) < 2:
        yield from items
        return
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(description, total=len(items))
        for item in items:
            yield item
            bar.advance(task)


@contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """A bar on an interactive stderr driven by `update(done, total)` calls; silent otherwise.

    For work whose loop lives in the core (which reports progress through a callback).
    """
    if not sys.stderr.isatty():
        yield lambda done, total: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=max(total, 1))

        yield update
