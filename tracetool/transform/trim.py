"""`trim`: cap the length of captured value strings, keeping every event.

Contract (spec `trim`, `metadata.trimmed`, Errors):
- Trimmed fields are the `captured.TRIMMED_KINDS`: parameter, receiver and return values
  (request and log-record `message` params included) and exception / log messages. Header
  values, URLs, `path_info` and SQL are captured data too but not trimmed — the spec's list is
  the one above. Every event is kept and every other property is left as it was.
- A plain string longer than `max_length` characters becomes its first `max_length - 1`
  characters plus "…", so the result is exactly `max_length` long; shorter strings are untouched,
  which makes trimming idempotent. Structured values are budgeted per field: a parameter object's
  own `value` and the `value` of each nested `properties` / `items` entry each get `max_length`;
  a value that is itself a list or object (non-standard, tolerated) is capped string by string.
- `metadata.trimmed = {version, max_length}`; after repeated runs `max_length` is the smallest
  cap applied. A file already trimmed by this version to the same cap is skipped. A larger cap
  than the one recorded warns that cut values cannot be restored (the file is still processed:
  nothing grows back, and the marker keeps the smaller cap).
- `trim(doc, options)` is the pure in-memory form; `trim_bytes` rewrites a document's bytes
  event by event (`rawdoc`); `trim_big` rewrites a recording over `STREAM_THRESHOLD` a block of
  events at a time from its file, in memory that does not grow with it, to the same bytes
  (`tracetool.transform.streamed`); `trim_files` runs them over many files (the CLI).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracetool import __version__
from tracetool.errors import UsageError
from tracetool.trace import TraceDocument, atomic_write_stream, gc_paused, rawdoc
from tracetool.trace.atomic import scratch_beside
from tracetool.trace.stream import file_size
from tracetool.transform import files, streamed
from tracetool.transform.captured import TRIMMED_KINDS, rewrite_event, rewrite_metadata
from tracetool.transform.streamed import FileChunks

DEFAULT_MAX_LENGTH = 120
ELLIPSIS = "…"
TRIMMED = "trimmed"


@dataclass(frozen=True)
class TrimOptions:
    max_length: int = DEFAULT_MAX_LENGTH

    def __post_init__(self) -> None:
        if not isinstance(self.max_length, int) or self.max_length < 1:
            raise UsageError(f"--max-length must be a positive number, not {self.max_length!r}")


@dataclass(frozen=True)
class TrimReport:
    status: str  # "trimmed" or "skipped"
    max_length: int  # the cap recorded in metadata.trimmed afterwards
    values_trimmed: int
    bytes_before: int
    bytes_after: int
    warnings: tuple[str, ...] = ()


class _Cutter:
    """The rewrite callback: caps trimmed kinds, counts what it cut."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.count = 0

    def cut(self, value: Any) -> Any:
        if isinstance(value, str):
            if len(value) <= self.cap:
                return value
            self.count += 1
            return value[: self.cap - 1] + ELLIPSIS
        try:
            if isinstance(value, list):
                return [self.cut(v) for v in value]
            if isinstance(value, dict):
                return {k: self.cut(v) for k, v in value.items()}
        except RecursionError:  # absurdly deep: cut entirely
            self.count += 1
            return ELLIPSIS
        return value

    def __call__(self, kind: str, value: Any, context: Any) -> Any:
        if kind not in TRIMMED_KINDS:
            return value
        if isinstance(value, str) and len(value) <= self.cap:
            return value
        return self.cut(value)


def _previous_cap(metadata: dict[str, Any]) -> tuple[str | None, int | None]:
    marker = metadata.get("trimmed")
    if not isinstance(marker, dict):
        return None, None
    cap = marker.get("max_length")
    version = marker.get("version")
    return (
        version if isinstance(version, str) else None,
        cap if isinstance(cap, int) and not isinstance(cap, bool) else None,
    )


def trim_bytes(
    raw: bytes, options: TrimOptions = TrimOptions(), source: str = "<memory>"
) -> tuple[bytes | None, TrimReport]:
    """Trim a document given as bytes; returns (None, report) when the file is skipped."""
    with gc_paused():  # millions of short-lived acyclic containers: the cyclic GC only costs
        return _trim_bytes(raw, options, source)


def _decide(metadata: dict[str, Any], cap: int, source: str) -> tuple[int | None, list[str]]:
    """The cap `metadata.trimmed` records after trimming to `cap`, or None to skip the file
    (trimmed by this version to `cap` already); and the warnings."""
    version, previous = _previous_cap(metadata)
    warnings: list[str] = []
    if previous is not None:
        if version == __version__ and previous == cap:
            return None, warnings
        if cap > previous:
            warnings.append(
                f"{source}: already trimmed to {previous} characters; a larger cap ({cap}) "
                "cannot restore values that were cut"
            )
    return (cap if previous is None else min(cap, previous)), warnings


def _cut_events(
    cutter: _Cutter, pairs: Iterable[tuple[Any, dict[str, Any]]], writer: rawdoc.ArrayWriter
) -> None:
    """Each (text, event) trimmed into `writer`: an event with nothing cut as its text."""
    for raw_event, event in pairs:
        before = cutter.count
        rewrite_event(event, cutter)
        if cutter.count == before:  # nothing cut: the event's bytes stay as they were
            writer.add_raw(raw_event)
        else:
            writer.add(event)


def _values(doc: rawdoc.RawDocument, cutter: _Cutter, recorded: int, events: Any) -> dict[str, Any]:
    """The members a trimmed `doc` gets: its metadata trimmed and marked, `events`, and its
    eventUpdates trimmed."""
    metadata = doc.metadata
    rewrite_metadata(metadata, cutter)
    metadata["trimmed"] = {"version": __version__, "max_length": recorded}
    values: dict[str, Any] = {"metadata": metadata}
    if events is not None:
        values["events"] = events
    updates = doc.event_updates()
    if updates:
        for update in updates.values():
            if isinstance(update, dict):
                rewrite_event(update, cutter)
        values["eventUpdates"] = updates
    return values


def _trim_bytes(raw: bytes, options: TrimOptions, source: str) -> tuple[bytes | None, TrimReport]:
    doc = rawdoc.split(raw, source)
    cap = options.max_length
    recorded, warnings = _decide(doc.metadata, cap, source)
    if recorded is None:
        return None, TrimReport("skipped", cap, 0, len(raw), len(raw))
    cutter = _Cutter(cap)
    events = None
    if doc.events_array is not None:
        writer = rawdoc.ArrayWriter(source)
        _cut_events(cutter, doc.events(), writer)
        events = writer.done()
    values = _values(doc, cutter, recorded, events)
    warnings.extend(doc.warnings)
    out = doc.assemble(values)
    report = TrimReport(TRIMMED, recorded, cutter.count, len(raw), len(out), tuple(warnings))
    return out, report


def trim_big(
    path: Path,
    output: Path,
    options: TrimOptions = TrimOptions(),
    threshold: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> TrimReport | None:
    """Trim a recording over `threshold` bytes (default `STREAM_THRESHOLD`) a block of events at
    a time into `output` (atomically; `output` may be `path`), with memory that does not grow
    with it; the report, or None to trim it whole (`tracetool.transform.streamed`). The events
    are written to a temporary file beside `output` first: the members after them are known
    only once they are read."""
    big = streamed.open_big(path, threshold, progress)
    if big is None:
        return None
    cap = options.max_length
    recorded, warnings = _decide(big.metadata, cap, big.source)
    size = big.stamp[0]
    if recorded is None:
        return TrimReport("skipped", cap, 0, size, size)
    cutter = _Cutter(cap)
    writer = rawdoc.ArrayWriter(big.source)

    def blocks() -> Iterator[list[Any]]:
        for texts, events in big.blocks():
            _cut_events(cutter, zip(texts, events), writer)
            yield writer.pieces()

    try:
        with gc_paused(), scratch_beside(output) as (scratch, name):
            streamed.write_array(scratch, blocks())
            scratch.flush()
            assert big.document is not None
            values = _values(big.document, cutter, recorded, rawdoc.Chunks(FileChunks(name)))
            atomic_write_stream(output, big.document.parts(values))
    except streamed.NotPlain:
        return None
    written = file_size(output)
    return TrimReport(TRIMMED, recorded, cutter.count, size, written, tuple(warnings))


def trim(
    doc: TraceDocument, options: TrimOptions = TrimOptions()
) -> tuple[TraceDocument, TrimReport]:
    """Pure form: a new trimmed document (the input is not modified) and the report."""
    result, report = files.on_document(doc, lambda raw, src: trim_bytes(raw, options, src))
    return result, report


def trim_files(
    inputs: Sequence[str | Path],
    options: TrimOptions = TrimOptions(),
    output_dir: str | Path | None = None,
    *,
    recursive: bool = False,
    progress: files.Progress | None = None,
) -> list[files.FileReport]:
    """Trim many files (in place, or into `output_dir`); one report per file; `progress(done,
    total)` as the input bytes are done."""
    pairs = files.plan(inputs, output_dir, recursive)

    def transform(raw: bytes, source: str) -> tuple[bytes | None, dict[str, Any], list[str]]:
        out, report = trim_bytes(raw, options, source)
        details = {"max_length": report.max_length, "values_trimmed": report.values_trimmed}
        return out, details, list(report.warnings)

    def big(
        path: Path, output: Path, step: Callable[[int], None]
    ) -> tuple[str, int, dict[str, Any], list[str]] | None:
        report = trim_big(path, output, options, progress=step)
        if report is None:
            return None
        details = {"max_length": report.max_length, "values_trimmed": report.values_trimmed}
        return report.status, report.bytes_after, details, list(report.warnings)

    return files.run(pairs, transform, TRIMMED, big, progress)
