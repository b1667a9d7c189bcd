"""The C library's memory and writeback calls that Python does not expose (Linux only).

`function(name)` is the libc function of that name through ctypes, or None where there is none
(not Linux, no ctypes, a libc without it such as musl's `mallopt`). Each caller's use is a
hint to the kernel or the allocator — nothing fails without it — so a None simply skips it.
ctypes is imported only on the first ask. Stdlib only (the agent ships this module).
"""

from __future__ import annotations

import sys
from typing import Any, Optional

_FUNCTIONS: dict[str, Any] = {}


def function(name: str) -> Optional[Any]:
    """libc's `name` (a ctypes function; set its argtypes before calling with 64-bit values),
    or None where there is none."""
    if name not in _FUNCTIONS:
        found = None
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                found = getattr(ctypes.CDLL(None, use_errno=True), name)
            except (ImportError, OSError, AttributeError):
                found = None
        _FUNCTIONS[name] = found
    return _FUNCTIONS[name]
