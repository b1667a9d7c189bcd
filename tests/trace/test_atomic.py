"""The one atomic writer and its orphans (issue 19.6): a writer killed with SIGKILL leaves its
temporary file; the next command over that directory removes it, while a live writer's file is
left alone. Real processes, real `kill -9`, real `tracetool index` / `sanitize`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.index.shop import make_shop
from tracetool.trace.atomic import ORPHAN_AGE, ORPHAN_GRACE, atomic_write_bytes, is_orphan

pytestmark = pytest.mark.e2e

WRITER = """
import sys, time
from tracetool.trace.atomic import atomic_write_stream
def chunks():
    yield b'{"version": "1.12", "events": ['
    print("writing", flush=True)
    time.sleep(600)
    yield b']}'
atomic_write_stream(sys.argv[1], chunks())
"""


def killed_write(target: Path) -> Path:
    """Start a writer, SIGKILL it mid-write; the temporary file it left behind."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
        (temp,) = [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]
        assert f".tt{proc.pid}." in temp.name
        assert not is_orphan(temp.parent, temp.name)  # its writer is alive
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert temp.exists() and not target.exists()
    return temp


def age(path: Path, seconds: float) -> None:
    """The file was last written `seconds` ago (the writer died a while back)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def tracetool(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    env.pop("TRACETOOL_TRACE_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "tracetool", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_index_removes_what_a_killed_writer_left(tmp_path: Path) -> None:
    trace = make_shop(tmp_path / "trace")
    temp = killed_write(trace / "killed.trace.json")
    (trace / "sub").mkdir()
    recent = killed_write(trace / "sub" / "recent.trace.json")
    age(temp, ORPHAN_GRACE + 5)
    age(recent, 1)  # just died: within the grace period another machine's writer may own it
    home = tmp_path / "home"
    home.mkdir()
    result = tracetool(
        "index", "--trace-dir", str(trace), "--query-db", str(tmp_path / "q.db"), home=home
    )
    assert result.returncode == 0, result.stderr
    assert "4 added" in result.stdout
    assert not temp.exists()
    assert recent.exists()
    age(recent, ORPHAN_GRACE + 5)
    result = tracetool("stats", str(trace), home=home)
    assert result.returncode == 0, result.stderr
    assert not recent.exists()
    assert sorted(p.name for p in trace.rglob("*.tmp")) == []


def test_what_is_and_is_not_an_orphan(tmp_path: Path) -> None:
    live = tmp_path / f".a.trace.json.tt{os.getpid()}.abcd1234.tmp"
    live.write_bytes(b"x")
    age(live, ORPHAN_GRACE + 5)
    assert not is_orphan(tmp_path, live.name)  # our own process
    legacy = tmp_path / ".b.trace.json.abcd_123.tmp"  # an older tracetool's name: age only
    legacy.write_bytes(b"x")
    age(legacy, ORPHAN_GRACE + 5)
    assert not is_orphan(tmp_path, legacy.name)
    age(legacy, ORPHAN_AGE + 5)
    assert is_orphan(tmp_path, legacy.name)
    mine = tmp_path / "notes.tmp"  # not our pattern
    mine.write_bytes(b"x")
    age(mine, ORPHAN_AGE + 5)
    assert not is_orphan(tmp_path, mine.name)


def test_a_failed_write_leaves_nothing_and_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "x.trace.json"
    atomic_write_bytes(target, b"old")
    os.chmod(target, 0o600)

    def chunks():  # type: ignore[no-untyped-def]
        yield b"new"
        raise OSError(28, "No space left on device")

    from tracetool.trace.atomic import atomic_write_stream

    with pytest.raises(OSError):
        atomic_write_stream(target, chunks())
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.trace.json"]
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new" and (target.stat().st_mode & 0o777) == 0o600


def test_a_folder_removed_between_mkdir_and_mkstemp_is_created_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The index drops emptied sidecar folders while its workers write new sidecars into them.
    import tempfile

    real = tempfile.mkstemp
    calls: list[str] = []

    def racing_mkstemp(*args: Any, **kwargs: Any) -> tuple[int, str]:
        calls.append(str(kwargs["dir"]))
        if len(calls) == 1:
            Path(kwargs["dir"]).rmdir()  # another process empties and removes the folder
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", racing_mkstemp)
    target = tmp_path / "sidecars" / "poison" / "a.index.json"
    atomic_write_bytes(target, b"{}", fsync=False)
    assert target.read_bytes() == b"{}"
    assert len(calls) == 2


@pytest.mark.parametrize("behind", [False, True])
@pytest.mark.parametrize("fsync", [True, False])
def test_a_streamed_write_handed_to_the_disk_on_the_way_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsync: bool, behind: bool
) -> None:
    """`atomic_write_stream` starts the disk writing every `WRITEBACK_STEP` bytes, and with
    `behind` writes from a thread: the file is still exactly the chunks, in order."""
    from tracetool.trace import atomic

    monkeypatch.setattr(atomic, "WRITEBACK_STEP", 1000)
    chunks = [bytes([65 + i % 26]) * (300 + 97 * i) for i in range(40)]
    target = tmp_path / "out.bin"
    atomic.atomic_write_bytes(target, b"old")
    atomic.atomic_write_stream(target, iter(chunks), fsync=fsync, behind=behind)
    assert target.read_bytes() == b"".join(chunks)
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_write_behind_whose_maker_fails_keeps_the_old_file(tmp_path: Path) -> None:
    from tracetool.trace.atomic import atomic_write_stream

    target = tmp_path / "x.sequence.json"
    atomic_write_bytes(target, b"old")

    def chunks():  # type: ignore[no-untyped-def]
        for _ in range(10):
            yield b"x" * 100_000
        raise ValueError("too deep")

    with pytest.raises(ValueError, match="too deep"):
        atomic_write_stream(target, chunks(), fsync=False, behind=True)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.sequence.json"]


FULL_WRITER = """
import resource, signal, sys
from tracetool.trace.atomic import atomic_write_stream
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # (a write past the limit fails with EFBIG)
resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))
made = []
def chunks():
    for i in range(1000):
        made.append(i)
        yield b"y" * 10_000
try:
    atomic_write_stream(sys.argv[1], chunks(), fsync=False, behind=True)
except OSError as exc:
    print("raised", exc.errno, len(made))
"""


def test_a_write_behind_that_fails_raises_in_the_maker_and_stops_it(tmp_path: Path) -> None:
    """A real write error in the writer thread (past `RLIMIT_FSIZE`: EFBIG, as a full disk
    gives ENOSPC) is raised to the caller, which makes no more chunks; the old file stays."""
    import errno

    target = tmp_path / "x.sequence.json"
    atomic_write_bytes(target, b"old")
    proc = subprocess.run(
        [sys.executable, "-c", FULL_WRITER, str(target)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    word, code, made = proc.stdout.split()
    assert (word, int(code)) == ("raised", errno.EFBIG)
    assert int(made) < 20  # stopped a few chunks after the failed one (the 6th), not at 1000
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.sequence.json"]
