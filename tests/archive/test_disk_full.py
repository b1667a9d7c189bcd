"""A full disk (issue 19.6): `index` and `archive` end with one line "no space left on device
..." and a non-zero exit, not "internal error", and leave no temporary file behind. The disk is
a real 256 KiB tmpfs, mounted in a private mount namespace (`unshare -m` as root, or
`unshare -rm` in a user namespace) so nothing outlives the test; where the kernel allows
neither, the test is skipped (a privilege, not a part CI could install)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from tests.archive.conftest import Project, recording
from tests.index.shop import make_shop

pytestmark = pytest.mark.e2e

FILL = """
mount -t tmpfs -o size=256k tmpfs {full} || exit 97
dd if=/dev/zero of={full}/fill bs=4k 2>/dev/null
"$@"
rc=$?
echo "left on the full disk:" $(ls -A {full})
exit $rc
"""


@lru_cache(maxsize=1)
def _unshare() -> tuple[str, ...] | None:
    """The unshare command that lets us mount a tmpfs here, or None."""
    if shutil.which("unshare") is None:
        return None
    for command in (("unshare", "-m"), ("unshare", "-rm")):
        probe = subprocess.run(
            [*command, "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && umount /mnt"],
            capture_output=True,
            timeout=30,
        )
        if probe.returncode == 0:
            return command
    return None


def on_full_disk(full: Path, *args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """Run `python -m tracetool <args>` with `full` a real tmpfs that has no space left."""
    command = _unshare()
    if command is None:
        pytest.skip("cannot mount a tmpfs here (no CAP_SYS_ADMIN and no user namespaces)")
    full.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETOOL")}
    env["HOME"] = str(home)
    result = subprocess.run(
        [
            *command,
            "sh",
            "-c",
            FILL.format(full=shlex.quote(str(full))),
            "sh",
            sys.executable,
            "-m",
            "tracetool",
            *args,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode == 97:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    return result


def assert_one_no_space_line(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tracetool: no space left on device"), lines[0]
    assert "internal error" not in result.stderr


def test_index_on_a_full_disk(tmp_path: Path) -> None:
    trace = make_shop(tmp_path / "trace")
    home = tmp_path / "home"
    home.mkdir()
    full = tmp_path / "full"
    result = on_full_disk(
        full,
        "index",
        "--trace-dir",
        str(trace),
        "--query-db",
        str(full / "query.db"),
        cwd=tmp_path,
        home=home,
    )
    assert_one_no_space_line(result)
    left = result.stdout.splitlines()[-1]
    assert ".tmp" not in left, left


def test_archive_on_a_full_disk(project: Project, tmp_path: Path) -> None:
    project.record({f"t{i}.trace.json": recording(f"t{i}", repeat=20) for i in range(5)})
    project.commit("recorded")
    full = tmp_path / "full"
    result = on_full_disk(
        full, "archive", "--output-dir", str(full), cwd=project.root, home=tmp_path / "home"
    )
    assert_one_no_space_line(result)
    assert result.stdout.splitlines()[-1] == "left on the full disk: fill"  # no temp file
