"""The one reading layer: how every command opens, finds and parses recording files.

Contract (issue 14: hostile input never crashes or hangs):

- `open_regular(path)` / `read_file(path)` open regular files only. A FIFO, socket, device or
  directory named like a recording is refused with a `TraceFormatError` *before* it is opened
  (opening a FIFO for reading blocks until a writer appears), and the opened descriptor is
  checked again (`fstat`) so a file swapped for a FIFO in between is refused too.
- `find_trace_files(root, skipped)` walks a directory iteratively: every directory is entered
  once (by device and inode), so a symlink loop ends; an unreadable subdirectory and a
  recording-named entry that is not a regular file become one (path, reason) each (appended to
  `skipped`, or logged when no list is given); nothing is opened. Orphaned temp files of killed
  atomic writes are removed on the way (`tracetool.trace.atomic.remove_orphans`).
- `guarded(source)` is the per-file bulkhead: inside it, any exception that file content can
  provoke (a parser's error, `UnicodeDecodeError`, `RecursionError`, `MemoryError`, a huge
  integer, a field of the wrong type reaching code that expected another, a database refusing
  a value) becomes one `TraceFormatError` line naming the file and the defect. A command runs
  each file's whole processing inside it, so one bad file is skipped and the others go on.
- `prefetch(path)` starts reading a regular file's bytes in a thread; the process's next
  `read_file(path)` takes them if the file is still the one read (same inode, size and
  mtime), else reads it again. A command that reads one big recording whole starts it before
  its own imports, which then run beside the read (the read releases the GIL). Errors are
  left to `read_file`, which raises them as it always does.
- `MAX_DEPTH` is the deepest nesting a recording may have: the JSON parsers stop at it
  ("nested deeper than N levels"), and every walk over parsed values and call trees is
  iterative, so a deep file never reaches Python's recursion limit.

Stdlib only (the agent may import `tracetool.trace`); parser modules are recognized by name.
"""

from __future__ import annotations

import logging
import operator
import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Optional, cast

from tracetool.errors import NotFoundError, TraceFormatError, TraceToolError
from tracetool.trace.atomic import remove_orphans
from tracetool.trace.checks import DEPTH_MESSAGE, MAX_DEPTH, type_defect

TRACE_SUFFIXES = (".trace.json", ".appmap.json")
# Folders never searched for recordings (VCS, dependencies, virtualenvs, caches).
SKIP_DIRS = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}
)

_log = logging.getLogger("tracetool.trace")
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_FLAGS |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def not_regular(path: Path | str, mode: int) -> TraceFormatError:
    """The error for a recording-named path that is not a regular file."""
    kind = _kind(mode)
    what = kind if kind.startswith("not") else f"is {kind}"
    return TraceFormatError(f"{path}: {what}, not a trace document (not opened)")


def check_regular(path: Path | str) -> os.stat_result:
    """`os.stat(path)`, refusing what is not a regular file (nothing is opened)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise not_regular(path, st.st_mode)
    return st


def open_regular(path: Path | str) -> BinaryIO:
    """Open a regular file for reading (module doc); raises a one-line error otherwise."""
    check_regular(path)
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced between stat and open
            raise not_regular(path, mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


# path text -> (the reading thread, [(fstat before the read, the bytes)] once read): `prefetch`
_PREFETCHED: dict[str, tuple[Any, list[tuple[os.stat_result, bytes]]]] = {}


def prefetch(path: Path | str) -> None:
    """Start reading `path` whole in a thread, for the next `read_file(path)` (module doc)."""
    import threading

    key = os.fspath(path)
    if key in _PREFETCHED:
        return
    read: list[tuple[os.stat_result, bytes]] = []

    def run() -> None:
        try:
            with open_regular(key) as handle:
                read.append((os.fstat(handle.fileno()), handle.read()))
        except BaseException:  # (`read_file` reads it again and raises what it finds)
            pass

    thread = threading.Thread(target=run, name="prefetch", daemon=True)
    _PREFETCHED[key] = (thread, read)
    thread.start()


def _prefetched(path: Path | str, limit: Optional[int]) -> Optional[bytes]:
    """The bytes `prefetch(path)` read, when the file is still the one it read and within
    `limit`; None otherwise (and when none were asked for)."""
    entry = _PREFETCHED.pop(os.fspath(path), None)
    if entry is None:
        return None
    thread, read = entry
    thread.join()
    if not read:
        return None
    before, data = read[0]
    try:
        now = os.stat(path)
    except OSError:
        return None
    if (now.st_ino, now.st_dev, now.st_size, now.st_mtime_ns) != (
        before.st_ino,
        before.st_dev,
        before.st_size,
        before.st_mtime_ns,
    ) or len(data) != now.st_size:
        return None
    if limit is not None and now.st_size > limit:
        return None
    return data


def read_file(path: Path | str, limit: Optional[int] = None) -> Optional[bytes]:
    """The bytes of a regular file; None when `limit` is given and the file is bigger."""
    if _PREFETCHED:
        data = _prefetched(path, limit)
        if data is not None:
            return data
    with open_regular(path) as handle:
        try:
            if limit is not None and os.fstat(handle.fileno()).st_size > limit:
                return None
            return handle.read()
        except MemoryError:
            raise TraceFormatError(f"{path}: too large to read into memory") from None
        except OSError as exc:
            raise TraceFormatError(f"{path}: cannot read ({exc.strerror or exc})") from None


def is_trace_name(name: str) -> bool:
    """Whether a file name is a recording's (`*.trace.json`, `*.appmap.json`, not hidden)."""
    return name.endswith(TRACE_SUFFIXES) and not name.startswith(".")


def _child_maker() -> Callable[[Path, str], Path]:
    """`directory / name` for one more component `name`: pathlib's own shortcut for walking
    directories (`Path._make_child_relpath`, 3.11-3.12), which skips parsing the path again
    (a third of `find_trace_files`' time over 1000 recordings), else the `/` it stands for."""
    child = getattr(Path, "_make_child_relpath", None)
    if child is not None:
        try:
            probe = Path("/d/sub")
            made = child(probe, "x.trace.json")
            if made == probe / "x.trace.json" and str(made) == str(probe / "x.trace.json"):
                return cast("Callable[[Path, str], Path]", child)
        except Exception:  # (another pathlib: its own `/`)
            pass
    return operator.truediv


def find_trace_files(
    root: Path | str, skipped: Optional[list[tuple[Path, str]]] = None
) -> list[Path]:
    """Every recording below `root`, sorted; a file root is returned as is (module doc).

    Skips VCS, dependency and virtualenv folders and hidden temp files of atomic writes. What
    cannot be used (an unreadable directory, a FIFO named like a recording...) is appended to
    `skipped` as (path, reason), or logged as a warning when no list is given.
    """
    base = Path(root)
    try:
        st = os.stat(base)
    except OSError:
        raise NotFoundError(f"{base}: no such directory") from None
    if not stat.S_ISDIR(st.st_mode):
        if stat.S_ISREG(st.st_mode):
            return [base]
        raise not_regular(base, st.st_mode)

    def skip(path: str | Path, reason: str) -> None:
        if skipped is None:
            _log.warning("skipped %s: %s", path, reason)
        else:
            skipped.append((Path(path), reason))

    found: list[Path] = []
    seen = {(st.st_dev, st.st_ino)}
    stack = [base]
    child = _CHILD
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                listing = list(entries)
        except OSError as exc:
            skip(directory, f"cannot read directory ({exc.strerror or exc})")
            continue
        # temp files that killed writers left behind (tracetool.trace.atomic) go on the way
        remove_orphans(directory, [e.name for e in listing if e.name.endswith(".tmp")])
        for entry in listing:
            name = entry.name
            try:
                if entry.is_dir():  # follows a symlink: a loop is caught by `seen`
                    if name in SKIP_DIRS:
                        continue
                    dst = entry.stat()
                    key = (dst.st_dev, dst.st_ino)
                    if key not in seen:
                        seen.add(key)
                        stack.append(child(directory, name))
                    if is_trace_name(name):
                        skip(entry.path, "is a directory, not a trace document")
                    continue
                if not is_trace_name(name):
                    continue
                if entry.is_file():  # a regular file (from the directory entry: no syscall)
                    found.append(child(directory, name))
                    continue
                fst = entry.stat()
            except FileNotFoundError:  # a dangling symlink, or gone meanwhile
                if is_trace_name(name):
                    skip(entry.path, "no such file (a dangling link?)")
                continue
            except OSError as exc:
                skip(entry.path, f"cannot read ({exc.strerror or exc})")
                continue
            skip(entry.path, str(not_regular("", fst.st_mode))[2:])
    found.sort(key=lambda path: path.parts)  # Path order, without its slow __lt__
    return found


_CHILD = _child_maker()


def skip_lines(skipped: list[tuple[Path, str]], root: Optional[Path | str] = None) -> list[str]:
    """`skipped <path>: <reason>` lines (paths relative to `root` when given)."""
    lines = []
    for path, reason in skipped:
        shown: Path | str = path
        if root is not None:
            try:
                shown = path.relative_to(root)
            except ValueError:
                pass
        lines.append(f"skipped {shown}: {reason}")
    return lines


def describe(exc: BaseException) -> str:
    """What a content exception says about the file, in a few words."""
    text = " ".join(str(exc).split())[:200]
    module = type(exc).__module__ or ""
    lowered = text.lower()
    if isinstance(exc, RecursionError):
        return f"nested too deeply to process (deeper than about {sys.getrecursionlimit()} levels)"
    if "recursion" in lowered or "depth" in lowered:
        return DEPTH_MESSAGE
    if isinstance(exc, UnicodeError):
        return f"not valid UTF-8 ({text})"
    if isinstance(exc, MemoryError):
        return "too large to process in memory"
    huge = ("number" in lowered or "integer" in lowered) and (
        any(word in lowered for word in ("large", "range", "limit", "overflow", "infinity"))
    )
    if isinstance(exc, OverflowError) or huge:
        return f"holds a number too large to use ({text})"
    if module.startswith(("orjson", "msgspec", "ijson", "json")) or type(exc).__name__ in (
        "JSONDecodeError",
        "IncompleteJSONError",
    ):
        return f"not valid JSON ({text})"
    if module.startswith("sqlite3"):
        return f"holds a value that cannot be stored ({text})"
    return f"holds a value of an unexpected type ({type(exc).__name__}: {text})"


def diagnose(path: Path | str, limit: int = 256 * 1024 * 1024) -> Optional[str]:
    """`type_defect` of a recording file (None when it cannot tell): used after a failure,
    never on the happy path, so a good file pays nothing for the check."""
    try:
        raw = read_file(path, limit)
        if raw is None:
            return None
        import orjson

        return type_defect(orjson.loads(raw))
    except Exception:
        return None


def content_error(exc: BaseException, source: Path | str) -> TraceFormatError:
    """`exc`, raised while handling the file `source`, as the one line that names them; a
    field of the wrong type is named when the file shows one."""
    reason = describe(exc)
    if isinstance(exc, (TypeError, AttributeError, KeyError, IndexError, ValueError)) or (
        type(exc).__module__ or ""
    ).startswith("sqlite3"):
        if not isinstance(exc, UnicodeError) and not reason.startswith(("nested", "not valid")):
            defect = diagnose(source) if Path(source).is_file() else None
            if defect is not None:
                reason = defect
    return TraceFormatError(f"{source}: {reason}")


@contextmanager
def guarded(source: Path | str) -> Iterator[None]:
    """Turn any exception that file content can provoke into a `TraceFormatError` (module doc).

    A `TraceToolError` passes unchanged; `KeyboardInterrupt`/`SystemExit` are not caught.
    """
    try:
        yield
    except TraceToolError:
        raise
    except Exception as exc:
        _log.debug("%s: content error", source, exc_info=True)
        raise content_error(exc, source) from None


__all__ = [
    "MAX_DEPTH",
    "SKIP_DIRS",
    "TRACE_SUFFIXES",
    "check_regular",
    "content_error",
    "describe",
    "diagnose",
    "find_trace_files",
    "guarded",
    "is_trace_name",
    "open_regular",
    "read_file",
    "skip_lines",
    "type_defect",
]
