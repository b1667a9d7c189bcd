"""Compile the checkout's bytecode before a benchmark times our CLI.

An installed tracetool (pip, pipx, uv tool, the binary) runs from compiled bytecode. This
checkout's editable install does not when `PYTHONDONTWRITEBYTECODE` is set (as on the shared
machines): every run would compile every module it imports again, ~0.1 s of CPU per process
that no user pays. The benchmarks call `compile_checkout()` once before timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def compile_checkout() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "tracetool"), str(ROOT / "daemon")],
        env=env,
        capture_output=True,
        check=False,
    )
