"""The PyInstaller binary runs every command on the example shop's recordings.

Built by `bash scripts/build-binary` (a couple of minutes), so it is not built by the test run
itself: scripts/test builds it on CI after the suite and runs this file again with
TRACETOOL_BINARY=dist/tracetool/tracetool. Elsewhere: build it, then
`TRACETOOL_BINARY=dist/tracetool/tracetool python -m pytest tests/packaging/test_binary.py`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.conftest import ROOT
from tests.packaging.smoke import smoke

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def binary() -> Path:
    value = os.environ.get("TRACETOOL_BINARY")
    if not value:
        pytest.skip("the binary is built and tested by scripts/test on CI (TRACETOOL_BINARY)")
    path = Path(value).absolute()
    if not path.exists():
        pytest.fail(f"TRACETOOL_BINARY={value} does not exist: run bash scripts/build-binary")
    return path


# dozens of processes, each a cold start: allow for a loaded machine (default 300 s)
@pytest.mark.timeout(900)
def test_binary_runs_every_command(binary: Path, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    shutil.copytree(ROOT / "examples" / "shop", project, ignore=shutil.ignore_patterns("tmp"))
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:django", "--trace-record", "tests"],
        cwd=project,
        check=True,
        capture_output=True,
        timeout=300,
    )
    lsp = binary.with_name("tracetool-lsp" + binary.suffix)
    smoke([str(binary)], [str(lsp)], project)


def test_binary_carries_the_accelerator(binary: Path) -> None:
    """stats' optional C accelerator (tracetool._speedups) is collected into the binary."""
    assert list(binary.parent.rglob("_speedups*.so")) or list(binary.parent.rglob("_speedups*.pyd"))


@pytest.mark.parametrize("columns", ["30", "80", "101", "200"])
def test_binary_help_is_clicks_help_at_every_width(binary: Path, columns: str) -> None:
    # The binary answers `--help` without click, from tracetool/cli/help_texts.txt (collected)
    env = {**os.environ, "COLUMNS": columns}
    ours = subprocess.run(
        [str(binary), "--help"], capture_output=True, text=True, env=env, check=True
    )
    code = "from tracetool.cli import cli; from tracetool.cli.common import run_cli; run_cli(cli)"
    clicks = subprocess.run(
        [sys.executable, "-c", code, "--help"], capture_output=True, text=True, env=env, check=True
    )
    assert ours.stdout == clicks.stdout
    assert "Commands:\n  archive" in ours.stdout
