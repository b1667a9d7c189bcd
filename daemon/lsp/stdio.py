"""The language server's stdin, bounded: an absurd `Content-Length` is refused, not obeyed.

pygls reads a header line with `readline()` and then exactly `Content-Length` bytes with
`read(n)`; a header claiming 10^20 bytes made it fail (OverflowError / MemoryError) and the
server exit. `BoundedStdin` wraps the binary stdin:

- a `Content-Length` header over `max_message` bytes (default 64 MiB) is logged once as an error
  and replaced by a header pygls ignores, so the message is skipped: the lines that follow are
  read (and dropped) until the next well-formed header, and the server keeps serving;
- every `readline()` returns at most `max_line` bytes (default 64 KiB), so a header without a
  newline cannot grow without bound;
- `read(n)` over the limit (not reachable through pygls's loop, kept as a guard) returns a
  blank body that pygls reports as an unparsable message.
"""

from __future__ import annotations

import logging
import re
from typing import BinaryIO

log = logging.getLogger("tracetool.lsp")

DEFAULT_MAX_MESSAGE = 64 * 1024 * 1024
DEFAULT_MAX_LINE = 64 * 1024
_LENGTH = re.compile(rb"content-length:\s*(\d+)\s*", re.IGNORECASE)


class BoundedStdin:
    """`readline` / `read` over a binary stream with the limits of the module doc."""

    def __init__(
        self,
        stream: BinaryIO,
        max_message: int = DEFAULT_MAX_MESSAGE,
        max_line: int = DEFAULT_MAX_LINE,
    ) -> None:
        self._stream = stream
        self.max_message = max_message
        self.max_line = max_line
        self.refused = 0

    def readline(self) -> bytes:
        line = self._stream.readline(self.max_line)
        match = _LENGTH.fullmatch(line)
        if match is not None and int(match.group(1)) > self.max_message:
            self.refused += 1
            log.error(
                "refused a message of %s bytes (Content-Length over the %d-byte limit); skipped",
                match.group(1)[:40].decode("ascii"),
                self.max_message,
            )
            return b"X-Refused-Content-Length: too large\r\n"
        return line

    def read(self, size: int = -1) -> bytes:
        if size < 0 or size > self.max_message:
            log.error("refused to read %d bytes (limit %d)", size, self.max_message)
            return b" "
        return self._stream.read(size)


__all__ = ["BoundedStdin"]
