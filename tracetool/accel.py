"""The optional C accelerator's functions by name (`tracetool._speedups`, built from
tracetool/_speedups*.c when a compiler is there: setup.py).

`function(name)` is the accelerator's function of that name, or None without the accelerator
or with TRACETOOL_NO_SPEEDUPS set (non-empty, not "0"): callers then run their pure-Python code,
which stays the reference each C function is tested against. Tool only: the agent never
imports it.
"""

from __future__ import annotations

import os
from typing import Any

from tracetool.trace.codeobjects import ClassMap


def function(name: str) -> Any:
    if os.environ.get("TRACETOOL_NO_SPEEDUPS", "") not in ("", "0"):
        return None
    try:
        from tracetool import _speedups  # type: ignore[attr-defined]
    except ImportError:
        return None
    return getattr(_speedups, name, None)


_CLASS_MAP = function("class_map")


def class_map(data: Any) -> ClassMap:
    """`ClassMap.from_json(data)`, its walk made in C where the accelerator is built."""
    return ClassMap.from_json(data, _CLASS_MAP)
