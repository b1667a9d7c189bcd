"""Regular expressions compiled on first use.

`lazy(pattern, flags)` stands for `re.compile(pattern, flags)` as a module-level constant: it
compiles the pattern the first time one of its attributes is read, so a module whose patterns a
run never uses does not pay for them (re compiles in Python, ~0.1-0.5 ms a pattern; a `tracetool
index` that re-indexes one recording imports ~60 patterns and uses a handful). After the first
use its methods (`match`, `search`, `sub`, ...) are the compiled pattern's own, bound, read from
the instance. It is not a `re.Pattern`: use its methods, not `re.sub(it, ...)` or `isinstance`;
`compiled` is the real pattern.
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast

__all__ = ["LazyPattern", "lazy"]

_ATTRIBUTES = (
    "match",
    "fullmatch",
    "search",
    "sub",
    "subn",
    "split",
    "findall",
    "finditer",
    "scanner",
    "pattern",
    "flags",
    "groups",
    "groupindex",
)


class LazyPattern:
    """`re.compile(*args)` on first use (module doc)."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self._args = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        # Only reached for a name not in the instance's dict: before the first use, or a
        # name `_ATTRIBUTES` does not copy.
        if name.startswith("__") or name == "_args":
            raise AttributeError(name)
        compiled: re.Pattern[Any] = re.compile(*self._args)  # type: ignore[call-overload]
        for attribute in _ATTRIBUTES:
            self.__dict__[attribute] = getattr(compiled, attribute)
        self.__dict__["compiled"] = compiled
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self._args[0]!r}, {self._args[1]!r})"


def lazy(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """A pattern compiled on first use (module doc), typed as the `re.Pattern` it stands for."""
    return cast("re.Pattern[AnyStr]", LazyPattern(pattern, flags))
