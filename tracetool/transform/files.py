"""Running a byte-level transform over many recording files: `trim` and `sanitize` share this.

Contract:
- `plan(inputs, output_dir, recursive)` maps each input to the file it is written to: itself
  (in place) or `output_dir/<file name>`; with `recursive`, a directory argument stands for every
  recording below it (`tracetool.trace.find_trace_files`) and keeps its relative layout under
  `output_dir`. It raises `UsageError` — before any file is touched — when a directory is given
  without `recursive`, when two inputs would be written to one output, when `output_dir` is a
  file, or when an output would overwrite any input (`-o` never writes over the input set).
- `run(plan, transform, done, big)` processes each file independently: read, `transform(bytes,
  source)`, atomic write. A file that cannot be read, is not a trace document or cannot be
  written is skipped with a warning and reported with status "error"; the others go on.
  A transform returning no bytes means "skip, unchanged" (already done with the same options):
  in place nothing is written, with `-o` the original bytes are copied so the output set is
  complete.
- `big(source path, output path, step)`, when given, is tried first: it rewrites a big
  recording a block at a time (`tracetool.transform.streamed`), writing the output itself, and
  returns (status, bytes after, details, warnings), or None to leave the file to `transform` (a
  small file, or one it cannot promise `transform`'s result for); `step(n)` tells that n more
  bytes of it were read. A skipped file is copied as a stream for `-o`.
- `progress(done, total)`, when given, is called as the input bytes are done: after each file,
  and after each block of a big one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracetool.errors import TraceToolError, UsageError
from tracetool.trace import (
    TraceDocument,
    atomic_write_bytes,
    atomic_write_stream,
    find_trace_files,
    parse,
)
from tracetool.trace.reader import guarded, read_file
from tracetool.trace.stream import file_size
from tracetool.transform.streamed import FileChunks

ERROR = "error"
SKIPPED = "skipped"

# (input bytes, source name) -> (output bytes or None to skip, details, warnings)
Transform = Callable[[bytes, str], "tuple[bytes | None, dict[str, Any], list[str]]"]
# (input path, output path, step) -> (status, bytes written, details, warnings), or None
BigTransform = Callable[
    [Path, Path, Callable[[int], None]], "tuple[str, int, dict[str, Any], list[str]] | None"
]
Progress = Callable[[int, int], None]  # (bytes done, bytes in all)


@dataclass(frozen=True)
class FileReport:
    """What happened to one file."""

    file: str
    output: str | None
    status: str  # the command's done status ("trimmed", "sanitized"), "skipped" or "error"
    bytes_before: int = 0
    bytes_after: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    error: str | None = None

    @property
    def change_percent(self) -> float:
        if not self.bytes_before:
            return 0.0
        return round((self.bytes_after - self.bytes_before) * 100.0 / self.bytes_before, 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "output": self.output,
            "status": self.status,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "change_percent": self.change_percent,
            **self.details,
            "warnings": list(self.warnings),
            "error": self.error,
        }


def on_document(
    doc: TraceDocument, transform_bytes: Callable[[bytes, str], tuple[bytes | None, Any]]
) -> tuple[TraceDocument, Any]:
    """The pure, in-memory form of a bytes transform: a new document (the input is untouched)."""
    source = str(doc.path or "<memory>")
    raw = doc.to_bytes()
    out, report = transform_bytes(raw, source)
    result = parse(out if out is not None else raw, source)
    result.path = doc.path
    return result, report


def _key(path: Path) -> str:
    return os.path.normcase(os.path.realpath(path))


def plan(
    inputs: Sequence[str | Path], output_dir: str | Path | None = None, recursive: bool = False
) -> list[tuple[Path, Path]]:
    """Input → output pairs (module doc)."""
    out_dir = Path(output_dir) if output_dir is not None else None
    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--output-dir {out_dir}: exists and is not a directory")
    pairs: list[tuple[Path, Path]] = []
    seen: set[str] = set()
    for arg in inputs:
        path = Path(arg)
        if path.is_dir():
            if not recursive:
                raise UsageError(
                    f"{path}: is a directory; pass recording files, or add --recursive to "
                    "process every recording below it"
                )
            unusable: list[tuple[Path, str]] = []
            members = [(f, f.relative_to(path)) for f in find_trace_files(path, unusable)]
            members += [
                (_Unusable(f, why), Path(*f.relative_to(path).parts)) for f, why in unusable
            ]
        else:
            members = [(path, Path(path.name))]
        for member, relative in members:
            if _key(member) in seen:
                continue
            seen.add(_key(member))
            pairs.append((member, out_dir / relative if out_dir is not None else member))
    if out_dir is not None:
        inputs_by_key = {_key(src): src for src, _ in pairs}
        targets: dict[str, Path] = {}
        for src, dst in pairs:
            key = _key(dst)
            if key in inputs_by_key:
                raise UsageError(
                    f"--output-dir {out_dir} would overwrite the input {inputs_by_key[key]}; "
                    "choose another directory, or omit -o to rewrite files in place"
                )
            if key in targets:
                raise UsageError(
                    f"{targets[key]} and {src} would both be written to {dst}; "
                    "process them separately or with --recursive from a common directory"
                )
            targets[key] = src
    return pairs


def run(
    pairs: Sequence[tuple[Path, Path]],
    transform: Transform,
    done: str,
    big: BigTransform | None = None,
    progress: Progress | None = None,
) -> list[FileReport]:
    """Apply `transform` (or `big`) to every planned file (module doc); one report per file."""
    reports = []
    sizes = [0 if isinstance(src, _Unusable) else file_size(src) for src, _ in pairs]
    meter = _Meter(progress, sum(sizes))
    for (src, dst), size in zip(pairs, sizes):
        report = None
        if big is not None and not isinstance(src, _Unusable):
            report = _big(src, dst, big, meter.within(size))
        reports.append(report or _one(src, dst, transform, done))
        meter.finish(size)
    return reports


class _Meter:
    """The input bytes done over a run, told to `progress`: whole files, and blocks of a file
    within it (never past its size)."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress = progress
        self.total = total
        self.done = 0
        self.partial = 0

    def within(self, size: int) -> Callable[[int], None]:
        self.partial = 0

        def step(count: int) -> None:
            self.partial = min(size, self.partial + count)
            if self.progress is not None:
                self.progress(self.done + self.partial, self.total)

        return step

    def finish(self, size: int) -> None:
        self.done += size
        self.partial = 0
        if self.progress is not None:
            self.progress(self.done, self.total)


def _big(src: Path, dst: Path, big: BigTransform, step: Callable[[int], None]) -> FileReport | None:
    output = None if dst == src else str(dst)
    before = file_size(src)
    try:
        outcome = big(src, dst, step)
        if outcome is None:
            return None
        status, after, details, warnings = outcome
        if status == SKIPPED and dst != src:
            atomic_write_stream(dst, FileChunks(src))
    except TraceToolError as exc:
        return FileReport(str(src), output, ERROR, before, error=str(exc))
    except OSError as exc:  # (reading is guarded: a TraceToolError)
        reason = exc.strerror or str(exc)
        error = f"{dst}: cannot write ({reason})"
        return FileReport(str(src), output, ERROR, before, error=error)
    return FileReport(str(src), output, status, before, after, details, tuple(warnings))


class _Unusable(type(Path())):  # type: ignore[misc]
    """A path found below a directory argument that cannot be read (an unreadable directory, a
    FIFO named like a recording): planned like a file so that it is reported as an error."""

    reason = ""

    def __new__(cls, path: Path, reason: str) -> _Unusable:
        self = super().__new__(cls, path)
        self.reason = reason
        return self


def _one(src: Path, dst: Path, transform: Transform, done: str) -> FileReport:
    output = None if dst == src else str(dst)
    if isinstance(src, _Unusable):
        return FileReport(str(src), output, ERROR, error=f"{src}: {src.reason}")
    try:
        raw = read_file(src)
        assert raw is not None
    except TraceToolError as exc:
        return FileReport(str(src), output, ERROR, error=str(exc))
    try:
        with guarded(src):
            result, details, warnings = transform(raw, str(src))
    except TraceToolError as exc:
        return FileReport(str(src), output, ERROR, len(raw), error=str(exc))
    status = done
    if result is None:
        status = SKIPPED
        if dst == src:
            return FileReport(
                str(src), output, status, len(raw), len(raw), details, tuple(warnings)
            )
        result = raw
    try:
        atomic_write_bytes(dst, result)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return FileReport(
            str(src),
            output,
            ERROR,
            len(raw),
            details=details,
            warnings=tuple(warnings),
            error=f"{dst}: cannot write ({reason})",
        )
    return FileReport(str(src), output, status, len(raw), len(result), details, tuple(warnings))
