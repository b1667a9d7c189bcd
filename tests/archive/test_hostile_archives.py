"""`restore` on hostile archives (issue 19.6): a member's declared size is checked against the
manifest and against the bytes the archive really holds before anything is written, so a 10 KB
archive announcing a 2 GB (sparse) member writes nothing big and fails with one line. Archives
are built with GNU tar (`-S`, sparse members) and Python's tarfile from a real `archive`."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import orjson
import pytest

from tests.archive.conftest import Project, ok, recording, run
from tracetool.archive.manifest import MANIFEST_NAME
from tracetool.archive.tarball import read_manifest_of

pytestmark = pytest.mark.e2e

BIG = 2 * 1024**3
NAME = "big.trace.json"


def _real_archive(project: Project) -> tuple[str, Path]:
    project.record({"a.trace.json": recording("a")})
    rev = project.commit("one")
    ok("archive")
    tars = list((project.root / ".trace" / "archive" / "full").glob("*.tar"))
    assert len(tars) == 1
    return rev, tars[0]


def _manifest_with_big(archive: Path, declared: int) -> bytes:
    data = dict(read_manifest_of(archive).data)
    data["files"] = {NAME: {"sha256": "0" * 64, "size": declared, "kind": "recording"}}
    data["members"] = [NAME]
    data["recordings"] = {}
    return orjson.dumps(data)


def _sparse_tar(archive: Path, manifest: bytes, work: Path) -> None:
    if shutil.which("tar") is None:
        pytest.skip("GNU tar is needed to build a sparse member")
    work.mkdir()
    (work / MANIFEST_NAME).write_bytes(manifest)
    with open(work / NAME, "wb") as handle:
        handle.truncate(BIG)  # a hole: no blocks on disk
    archive.unlink()
    subprocess.run(
        ["tar", "-cSf", str(archive), "-C", str(work), MANIFEST_NAME, NAME],
        check=True,
        capture_output=True,
    )
    (work / NAME).unlink()


def _largest_file(root: Path) -> int:
    sizes = [p.stat().st_size for p in root.rglob("*") if p.is_file()] if root.exists() else []
    return max(sizes, default=0)


def _blocks_in(root: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("declared", [BIG, 1000])
def test_a_sparse_2gb_member_in_a_10kb_archive_writes_nothing(
    project: Project, tmp_path: Path, declared: int
) -> None:
    rev, archive = _real_archive(project)
    _sparse_tar(archive, _manifest_with_big(archive, declared), tmp_path / "work")
    assert archive.stat().st_size < 64 * 1024
    with tarfile.open(archive) as tar:
        assert any(m.issparse() and m.size == BIG for m in tar.getmembers())
    before = _blocks_in(project.root)
    out_dir = project.root / ".trace" / "work" / "x"
    result = run("restore", "-r", rev, "--output-dir", str(out_dir))
    assert result.code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0], result.stderr
    assert "corrupt or hostile archive" in lines[0], lines[0]
    assert not out_dir.exists()
    assert not list(out_dir.parent.glob(".x.restoring-*"))  # the staging directory is gone
    assert _blocks_in(project.root) - before < 1024 * 1024
    assert _largest_file(out_dir.parent) < 1024 * 1024


def test_a_header_announcing_bytes_the_archive_lacks(project: Project) -> None:
    rev, archive = _real_archive(project)
    manifest = _manifest_with_big(archive, BIG)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(MANIFEST_NAME)
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        big = tarfile.TarInfo(NAME)
        big.size = BIG
        assert tar.fileobj is not None
        tar.fileobj.write(big.tobuf(tarfile.PAX_FORMAT))  # the header, none of its data
        tar.fileobj.write(b"x" * 4096)
        tar.members = []  # nothing for close() to pad
    archive.write_bytes(buffer.getvalue()[: 64 * 1024])
    out_dir = project.root / "restored"
    result = run("restore", "-r", rev, "--output-dir", str(out_dir))
    assert result.code != 0
    assert "internal error" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "hostile archive" in result.stderr, result.stderr
    assert not out_dir.exists()


def test_an_honest_archive_still_restores(project: Project) -> None:
    rev, _ = _real_archive(project)
    out_dir = project.root / "restored"
    ok("restore", "-r", rev, "--output-dir", str(out_dir))
    assert (out_dir / "a.trace.json").is_file()
    assert os.path.getsize(out_dir / "a.trace.json") > 0


def test_leftovers_of_killed_archive_and_restore_runs_are_removed(project: Project) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    pid = int(dead.stdout)
    rev, archive = _real_archive(project)
    orphan = archive.parent / f".{archive.name}.tt{pid}.abcd1234.tmp"
    orphan.write_bytes(b"half an archive")
    then = time.time() - 3600
    os.utime(orphan, (then, then))
    staging = project.root / ".trace" / "work" / f".x.restoring-{pid}-abcd1234"
    staging.mkdir(parents=True)
    (staging / "half.trace.json").write_bytes(b"{")
    project.record({"a.trace.json": recording("a"), "b.trace.json": recording("b")})
    ok("archive")
    assert not orphan.exists()
    ok("restore", "-r", rev, "--output-dir", str(project.root / ".trace" / "work" / "x"))
    assert not staging.exists()
