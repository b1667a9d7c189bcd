"""Start every timed run on a quiet disk: `settle()`, untimed, before each run a benchmark times.

Without it, what the previous run wrote is written back by the kernel while the next one is
timed, and the two sides do not pay alike: a run of ours (~5 s) follows one of AppMap's (~55 s,
whose index leaves ~16,000 files, a few hundred MB, to write back), while AppMap's long run
hardly notices the ~90 MB ours leaves. On the benchmark machine (2 cores), a cold `index` right
after writing 16,000 small files took 5.80 / 4.66 / 4.18 s, and 4.86 / 4.42 / 4.05 s with a
sync between (3 interleaved pairs; the rest of the gap is kernel write-back competing for the
cores). `os.sync()` waits until the writes are done on Linux.
"""

from __future__ import annotations

import os


def settle() -> None:
    """Write back what earlier runs left dirty, before a timed run (module doc)."""
    os.sync()
