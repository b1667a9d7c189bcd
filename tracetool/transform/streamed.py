"""Rewriting a big recording a block of events at a time: `trim` and `sanitize` of recordings
over `STREAM_THRESHOLD`, with memory that does not grow with the file.

Contract:
- `open_big(path)` returns a `BigRecording`, or None for a recording of at most
  `STREAM_THRESHOLD` bytes (rewritten whole: faster) and for one whose events array the block
  reader cannot find plainly (`tracetool.trace.stream`: a top-level `events` array that orjson
  reads the document up to, within 64 MB). Its `metadata` is the recording's (found without a
  scan of the file for its keys when it comes before the events), `updates` its
  `eventUpdates` object.
- `BigRecording.before` is the `rawdoc.RawDocument` of the members before the events (their
  bytes with an empty events array, split with the whole reader's checks), so a caller knows
  which members come before the events, in order.
- `BigRecording.blocks()` yields the events a block at a time (a few MB of the file), as
  (their exact texts, the events parsed by orjson: what `RawDocument` parses), and tells
  `on_block(size)` of each (progress). It raises
  `NotPlain` wherever the whole reader might read the file differently or word a defect its
  own way: a block the block reader hands over to its fallback reader, an item that is not an
  object, members after the events that repeat one before them. The caller then rewrites the
  file whole, which gives the verdict. Once the array is read, `document` is the
  `RawDocument` of the whole recording with its events array emptied (every other member, in
  order, checked as a whole read checks it) and `array` the byte range of the events array.
- `write_array(handle, pieces)` writes a JSON array whose items come in blocks (each block a
  list of pieces: items and the commas between them).
- `FileChunks(path)` reads a file's bytes in pieces, again on each iteration (`Chunks` of an
  output's events kept in a temporary file; `array_chunks()`: the recording's own events array).
- A file whose size or modification time changes while it is read is a `TraceFormatError`
  ("changed while it was read").
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from tracetool.errors import TraceFormatError
from tracetool.trace import rawdoc
from tracetool.trace.extract import WS
from tracetool.trace.reader import guarded, open_regular
from tracetool.trace.stream import (
    _TAIL_LIMIT,
    STREAM_THRESHOLD,
    _event_arrays,
    _unchecked,
    file_size,
    file_stamp,
    open_stream,
)

_PIECE = 1 << 20  # bytes per read of `FileChunks`


class NotPlain(Exception):
    """The streamed rewrite cannot promise the whole rewrite's result: rewrite the file whole."""


class BigRecording:
    """A big recording opened for a rewrite by blocks (module doc)."""

    def __init__(self, path: Path, events_at: int, prefix: bytes, header: Any) -> None:
        self.path = path
        self.source = str(path)
        self.events_at = events_at
        self.prefix = prefix
        self.metadata: dict[str, Any] = header.metadata  # (the caller's to change)
        self._metadata = copy.deepcopy(self.metadata)
        self.updates: dict[str, Any] = header.updates
        self.before = rawdoc.split(prefix + b"[]}", self.source)
        self.document: rawdoc.RawDocument | None = None
        self.array: tuple[int, int] | None = None
        self.stamp = file_stamp(path)
        self.on_block: Callable[[int], None] = _ignore  # (bytes of each block read)

    def blocks(self, parse: bool = True) -> Iterator[tuple[list[Any], list[dict[str, Any]]]]:
        """The events a block at a time (module doc); `document` and `array` once read. Without
        `parse`, the blocks are only checked (nothing is yielded): to find what follows them."""
        ended: list[Any] = [False]
        arrays = _event_arrays(self.path, self.events_at, ended)
        while True:
            with guarded(self.path):  # (reading only: `NotPlain` is no error of the file)
                found = next(arrays, None)
            if found is None:
                break
            texts, block = found
            self.on_block(len(block))
            if _unchecked(block):  # (what msgspec skips unchecked: the whole reader's)
                raise NotPlain
            if not parse:
                continue
            try:
                events = orjson.loads(block)
            except orjson.JSONDecodeError:
                raise NotPlain from None
            if len(events) != len(texts or ()) or not all(
                event.__class__ is dict for event in events
            ):
                raise NotPlain
            yield texts or [], events
        if not ended[0]:
            raise NotPlain
        _, after, rest, end = ended
        self.check_unchanged()
        if "events" in after or set(after) & set(self.before.top):
            raise NotPlain  # (a repeated member: the whole reader keeps the last one)
        try:
            self.document = rawdoc.split(self.prefix + b"[]" + rest, self.source)
        except TraceFormatError:
            raise NotPlain from None
        if self.document.metadata != self._metadata:
            raise NotPlain  # (what the caller decided on was not the recording's)
        self.array = (self._array_start(), end)

    def array_chunks(self) -> FileChunks:
        """The recording's events array, byte for byte (after `blocks()`)."""
        assert self.array is not None
        return FileChunks(self.path, *self.array)

    def check_unchanged(self) -> None:
        """A `TraceFormatError` if the file changed since it was opened."""
        if file_stamp(self.path) != self.stamp:
            raise TraceFormatError(f"{self.path}: changed while it was read")

    def _array_start(self) -> int:
        """Where the events array's `[` is (after the whitespace that may follow the key)."""
        at = self.events_at
        with open_regular(self.path) as handle:
            handle.seek(at)
            while True:
                head = handle.read(4096)
                blank = len(head) - len(head.lstrip(WS))
                at += blank
                if blank < len(head) or not head:
                    return at


def _ignore(count: int) -> None:
    pass


def open_big(
    path: Path, threshold: int | None = None, on_block: Callable[[int], None] | None = None
) -> BigRecording | None:
    """A big recording opened for a rewrite by blocks, or None (module doc); `on_block(size)`
    is told of each block read (progress)."""
    limit = STREAM_THRESHOLD if threshold is None else threshold
    if file_size(path) <= limit:
        return None
    options: dict[str, Any] = {"threshold": limit, "header_keys": ("metadata",)}
    stream = open_stream(path, events_first=True, **options)  # (no scan for the keys)
    if stream.provisional and "metadata" not in stream.header:
        stream = open_stream(path, **options)  # the metadata may follow the events: scan
    if not stream.streamed or not 0 <= stream.events_at <= _TAIL_LIMIT:
        return None
    with open_regular(path) as handle:
        prefix = handle.read(stream.events_at)
    try:
        big = BigRecording(path, stream.events_at, prefix, stream)
    except (TraceFormatError, RecursionError):  # (nested deep: the whole reader words it)
        return None
    if on_block is not None:
        big.on_block = on_block
    return big


def write_array(handle: BinaryIO, blocks: Iterable[list[Any]]) -> int:
    """Write `[`, the blocks' pieces with a comma between two blocks, `]`; the bytes written."""
    handle.write(b"[")
    written = 2
    comma = b""
    for pieces in blocks:
        if pieces:
            block = b"".join((comma, *pieces))  # (one write a block: a few MB)
            handle.write(block)
            written += len(block)
            comma = b","
    handle.write(b"]")
    return written


class FileChunks:
    """The bytes `start`..`end` of a file (default: all of it) in pieces of 1 MB, read anew on
    each iteration."""

    def __init__(self, path: Path | str, start: int = 0, end: int | None = None) -> None:
        self.path = path
        self.start = start
        self.end = end

    def __iter__(self) -> Iterator[bytes]:
        with open(self.path, "rb") as handle:
            handle.seek(self.start)
            left = (self.end - self.start) if self.end is not None else -1
            while left:
                piece = handle.read(_PIECE if left < 0 else min(_PIECE, left))
                if not piece:
                    if left > 0:
                        raise TraceFormatError(f"{self.path}: changed while it was read")
                    return
                left -= len(piece) if left > 0 else 0
                yield piece
