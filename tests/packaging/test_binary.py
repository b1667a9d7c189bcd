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
