"""The agent's clocks, taken when the agent is imported — before the app or its tests can patch
them.

Time-freezing libraries (freezegun, time-machine) replace `time.perf_counter`/`time.time` in the
`time` module *and* every module attribute that is the real function, so an agent that looked the
clock up at call time (or kept `from time import perf_counter` as a module attribute) recorded
0 ms for every call made while the clock was frozen. Here the real functions live in a tuple
(not a module attribute, so nothing rewrites them):
- `real_perf_counter()`: the built-in function itself, for hot paths that bind it as a default
  argument (`def enter(..., _now=real_perf_counter())`: a local, and nothing can rewrite it);
- `perf_counter()` / `wall_time()`: callables for everything else (a `partial`, which is not the
  real function object either).
If the agent is imported while freezegun is already active, its saved real functions are used.
"""

from __future__ import annotations

import functools
import sys
import time
from typing import Any, Callable


def _real(name: str) -> Callable[[], Any]:
    current = getattr(time, name)
    if getattr(current, "__module__", "time") == "freezegun.api":  # imported under a frozen clock
        saved = getattr(sys.modules["freezegun.api"], f"real_{name}", None)
        if saved is not None:
            return saved  # type: ignore[no-any-return]
    return current  # type: ignore[no-any-return]


_CLOCKS = (_real("perf_counter"), _real("time"))
perf_counter: Callable[[], float] = functools.partial(_CLOCKS[0])
wall_time: Callable[[], float] = functools.partial(_CLOCKS[1])


def real_perf_counter() -> Callable[[], float]:
    """The real `time.perf_counter`, whatever has been patched since."""
    return _CLOCKS[0]
