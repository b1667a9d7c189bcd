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


# `fault_ahead`: how far ahead of its use the heap is faulted in, once it is this big
FAULT_AHEAD = 16 << 20
FAULT_AHEAD_FROM = 32 << 20


def fault_ahead() -> bool:
    """In a one-shot command (`tracetool.cli.common.leave_to_exit`): once the objects' heap
    (pymalloc's arenas) passes `FAULT_AHEAD_FROM` bytes, a helper thread faults its next pages
    in, up to `FAULT_AHEAD` bytes past what is in use, so the command's own thread finds them
    mapped (tracetool/_speedups_arena.c has the contract). A 60 MB recording's JSON diagram:
    ~35,000 page faults moved to the idle core, 0.06 s less wall time, 15 MB more peak memory.
    Whether it is on: not without the accelerator, off Linux, or under an address-space
    limit."""
    install = function("fault_ahead")
    return install is not None and bool(install(FAULT_AHEAD, FAULT_AHEAD_FROM))
