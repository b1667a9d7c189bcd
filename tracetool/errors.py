"""The exception family every tracetool failure belongs to.

The CLI maps a `TraceToolError` to one line on stderr and a non-zero exit (`-v` adds the
traceback). Library code raises the most specific subclass; nothing else should reach the user.
"""

from __future__ import annotations


class TraceToolError(Exception):
    """A failure the user can act on; its message is one complete line."""

    exit_code = 1


class UsageError(TraceToolError):
    """Wrong options or arguments."""

    exit_code = 2


class ConfigError(TraceToolError):
    """trace.yml is missing, unreadable or has a wrong value."""


class TraceFormatError(TraceToolError):
    """A file is not a trace document (or not JSON at all)."""


class NotFoundError(TraceToolError):
    """A named file, recording, code object or revision does not exist."""


class IndexMissingError(TraceToolError):
    """The query database has not been built yet."""
