"""`inspect`: where a code object appears across recordings, and in which context.

Public API: `parse_code_object`, `find`, `apply_filters`, `summarize`, `report`
(`tracetool.inspect.search`) and the interactive `Session` (`tracetool.inspect.interactive`).
"""

from __future__ import annotations

from tracetool.inspect.search import (
    FIELDS,
    TYPES,
    CodeObjectRef,
    Match,
    apply_filters,
    find,
    parse_code_object,
    report,
    summarize,
)

__all__ = [
    "FIELDS",
    "TYPES",
    "CodeObjectRef",
    "Match",
    "apply_filters",
    "find",
    "parse_code_object",
    "report",
    "summarize",
]
