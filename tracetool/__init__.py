"""tracetool: record, index, query and diagram what Python web apps really do."""

from __future__ import annotations

__version__ = "0.1.0"
