"""The one atomic file writer, and the removal of the temporary files a killed writer left.

Contract:

- `atomic_open(path, fsync=True)` is a context manager yielding a binary file: a temporary file
  beside `path` named `.<name>.tt<pid>.<random>.tmp`. On a clean exit it is flushed, fsynced
  (unless `fsync=False`: for caches such as the index's sidecars, and for diagrams, big views a
  command remakes from recordings it never writes), given the original's permission bits
  (0644 for a new file) and renamed over `path`; on an exception it is removed and the
  exception propagates. Readers therefore see the old file or the new one, never a partial
  one; what is fsynced also survives a power cut.
- `atomic_write_bytes(path, payload)` / `atomic_write_stream(path, chunks)` write through it;
  `atomic_write_stream(..., behind=True)` writes the chunks from a thread while the caller
  makes the next ones (big outputs made in C: the diagrams).
- `scratch_beside(path)`: a temporary file beside `path` for a writer's intermediate output,
  named like `atomic_open`'s and removed on exit.
- A writer killed with SIGKILL (or a power cut) leaves its temporary file behind.
  `is_orphan(directory, name)` says whether a file is such a leftover: our temp-name pattern,
  and either its writer process is gone and the file has not changed for `ORPHAN_GRACE`
  seconds, or it has not changed for `ORPHAN_AGE` seconds (a leftover of an older tracetool or
  of another machine sharing the directory). `remove_orphans(directory, names)` deletes the
  orphans among `names` (default: the directory's entries) and returns how many it removed.
  The recordings walk (`find_trace_files`) calls it for every directory it lists, so the next
  command over a directory (`index`, `sanitize`, `trim`, `stats`, `archive`, ...) cleans it;
  `archive` also cleans its archive directory.

Stdlib only (the agent writes recordings with it), Python 3.9+.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Optional, Union

from tracetool.lazyre import lazy

PathLike = Union[str, "os.PathLike[str]"]

TEMP_SUFFIX = ".tmp"
ORPHAN_GRACE = 30.0  # seconds unchanged, writer gone
ORPHAN_AGE = 24 * 3600.0  # seconds unchanged, whoever wrote it
# `.<target>.tt<pid>.<mkstemp's 8 characters>.tmp`; older tracetools wrote no `tt<pid>.` part.
_TEMP = lazy(r"\.(?P<target>.+?)\.(?:tt(?P<pid>[0-9]+)\.)?[a-z0-9_]{8}\.tmp")


def temp_prefix(target_name: str) -> str:
    return f".{target_name}.tt{os.getpid()}."


def _mkstemp_beside(target: Path) -> tuple[int, str]:
    """A new temporary file in `target`'s folder, creating the folder.

    Another process may remove the folder between our mkdir and mkstemp (the index drops
    emptied sidecar folders while its workers write into them), so a vanished folder is
    created again, a few times, before giving up.
    """
    import tempfile  # (with shutil, random...: ~9 ms a command that only reads need not pay)

    directory = target.parent
    for attempt in range(5):
        directory.mkdir(parents=True, exist_ok=True)
        try:
            return tempfile.mkstemp(
                prefix=temp_prefix(target.name), suffix=TEMP_SUFFIX, dir=directory
            )
        except FileNotFoundError:
            if attempt == 4:
                raise
    raise AssertionError("unreachable")


@contextlib.contextmanager
def atomic_open(path: PathLike, *, fsync: bool = True) -> Iterator[BinaryIO]:
    """A temporary file renamed over `path` on success (module doc)."""
    target = Path(path)
    fd, tmp = _mkstemp_beside(target)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        try:
            mode = os.stat(target).st_mode & 0o7777  # keep the original's permission bits
        except FileNotFoundError:
            mode = 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def scratch_beside(path: PathLike) -> Iterator[tuple[BinaryIO, Path]]:
    """A temporary file beside `path`, open for writing and reading, removed on exit; named as
    `atomic_open` names its own, so one a killed process left behind is removed as an orphan."""
    fd, tmp = _mkstemp_beside(Path(path))
    try:
        with os.fdopen(fd, "w+b") as handle:
            yield handle, Path(tmp)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


# a streamed write hands what it wrote to the disk every this many bytes (`atomic_write_stream`)
WRITEBACK_STEP = 8 << 20


def atomic_write_stream(
    path: PathLike, chunks: Iterable[bytes], *, fsync: bool = True, behind: bool = False
) -> None:
    """Write the concatenated `chunks` to `path` atomically (streamed: no whole copy in memory).

    With `fsync`, the disk starts writing every `WRITEBACK_STEP` bytes as they come (Linux
    `sync_file_range`, which does not wait), so the final fsync waits for the last ones only
    instead of the whole file (a 100 MB diagram: a tenth of a second or more).

    With `behind`, a thread writes each chunk while the caller makes the next one (the write
    releases the GIL, so a chunk made in C runs beside the copy of the last one into the page
    cache), at most `BEHIND_DEPTH` chunks ahead of it; the chunks must not change once given.
    The disk then starts writing every `WRITEBACK_STEP` bytes even without `fsync`: replacing
    a file, ext4 flushes the new one's data in the rename (`auto_da_alloc`), which otherwise
    waits for all of it (a 96 MB diagram: 45–60 ms). An error of the writer (disk full)
    stops the stream and is raised here, as is the caller's own."""
    with atomic_open(path, fsync=fsync) as handle:
        if behind:
            _write_behind(_Writer(handle, start_disk=True), chunks)
            return
        writer = _Writer(handle, start_disk=fsync)
        for chunk in chunks:
            writer.write(chunk)


class _Writer:
    """`atomic_write_stream`'s writes: with `start_disk`, before each chunk after the first
    `WRITEBACK_STEP` bytes, the disk starts on what came since it last started (a single
    payload is left to the fsync alone)."""

    def __init__(self, handle: BinaryIO, *, start_disk: bool) -> None:
        self.handle = handle
        self.start_disk = start_disk
        self.written = self.started = 0

    def write(self, chunk: bytes) -> None:
        if self.start_disk and self.written - self.started >= WRITEBACK_STEP:
            self.handle.flush()
            _start_writeback(self.handle.fileno(), self.started, self.written - self.started)
            self.started = self.written
        self.handle.write(chunk)
        self.written += len(chunk)


# chunks made and not yet written, at most (`atomic_write_stream(..., behind=True)`)
BEHIND_DEPTH = 2


def _write_behind(writer: _Writer, chunks: Iterable[bytes]) -> None:
    """`atomic_write_stream`'s body with `behind`: the chunks written by a thread."""
    import queue
    import threading

    pending: queue.Queue[Optional[bytes]] = queue.Queue(maxsize=BEHIND_DEPTH)
    failed: list[BaseException] = []

    def run() -> None:
        while True:
            chunk = pending.get()
            if chunk is None:
                return
            if failed:  # (taken and dropped, so the maker never waits on a full queue)
                continue
            try:
                writer.write(chunk)
            except BaseException as exc:  # (raised in the maker's thread, below)
                failed.append(exc)

    thread = threading.Thread(target=run, name="write-behind", daemon=True)
    thread.start()
    try:
        for chunk in chunks:
            if failed:
                break
            pending.put(chunk)
    finally:
        pending.put(None)
        thread.join()
    if failed:
        raise failed[0]


def atomic_write_bytes(path: PathLike, payload: bytes, *, fsync: bool = True) -> None:
    """Write `payload` to `path` atomically: temp file beside it, fsync, rename."""
    atomic_write_stream(path, (payload,), fsync=fsync)


def _start_writeback(fd: int, offset: int, length: int) -> None:
    """Have the kernel start writing a range of `fd` to disk, without waiting for it."""
    from tracetool.trace import libc

    function = libc.function("sync_file_range")
    if function is not None:
        if function.argtypes is None:  # (once: 64-bit offsets must not pass as C ints)
            import ctypes

            function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
            function.restype = ctypes.c_int
        function(fd, offset, length, 2)  # SYNC_FILE_RANGE_WRITE (a failure: fsync still waits)


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (on this machine, in this PID namespace)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return True
    return True


def is_orphan(directory: PathLike, name: str, now: Optional[float] = None) -> bool:
    """Whether `directory/name` is a temporary file a dead writer left (module doc)."""
    if not name.endswith(TEMP_SUFFIX) or not name.startswith("."):
        return False
    match = _TEMP.fullmatch(name)
    if match is None:
        return False
    try:
        info = os.lstat(os.path.join(directory, name))
    except OSError:
        return False
    import stat

    if not stat.S_ISREG(info.st_mode):
        return False
    idle = (time.time() if now is None else now) - info.st_mtime
    if idle >= ORPHAN_AGE:
        return True
    pid = match.group("pid")
    if pid is None or idle < ORPHAN_GRACE:
        return False
    return int(pid) != os.getpid() and not process_alive(int(pid))


def remove_orphans(directory: PathLike, names: Optional[Iterable[str]] = None) -> int:
    """Delete the orphaned temporary files among `names` in `directory`; how many went."""
    if names is None:
        try:
            names = os.listdir(directory)
        except OSError:
            return 0
    now = time.time()
    removed = 0
    for name in names:
        if name.endswith(TEMP_SUFFIX) and is_orphan(directory, name, now):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))
                removed += 1
    return removed


__all__ = [
    "ORPHAN_AGE",
    "ORPHAN_GRACE",
    "atomic_open",
    "atomic_write_bytes",
    "atomic_write_stream",
    "is_orphan",
    "process_alive",
    "remove_orphans",
    "temp_prefix",
]
