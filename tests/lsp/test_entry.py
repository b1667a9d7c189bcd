"""The `tracetool-lsp` console script and `python -m tracetool_daemon.lsp`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tracetool import __version__


def test_console_script_version() -> None:
    script = Path(sys.executable).parent / "tracetool-lsp"
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"tracetool-lsp {__version__}"


def test_module_help_and_lazy_import() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tracetool_daemon.lsp", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "--stdio" in result.stdout and "--log-file" in result.stdout
    # importing the entry point does not load pygls (editors start it; the CLI must stay fast)
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, tracetool_daemon.lsp; print('pygls' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.stdout.strip() == "False", check.stderr


def test_bad_option_exits_with_usage_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tracetool_daemon.lsp", "--tcp"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "unrecognized arguments: --tcp" in result.stderr
