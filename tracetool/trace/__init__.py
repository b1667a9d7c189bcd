"""The trace document: load, save, normalize, call tree, code objects.

May be imported by the agent inside a user's app: stdlib and orjson only, Python 3.9+.
"""

from __future__ import annotations

from tracetool.trace.codeobjects import ClassMap, CodeObject
from tracetool.trace.document import (
    FORMAT_VERSION,
    TRACE_SUFFIXES,
    TraceDocument,
    atomic_write_bytes,
    atomic_write_stream,
    dumps,
    find_trace_files,
    from_data,
    gc_paused,
    gc_paused_call,
    is_trace_file,
    load,
    parse,
    recording_stem,
    save,
)
from tracetool.trace.normalize import normalize
from tracetool.trace.tree import CallNode, CallTree, build_call_tree, iter_postorder, iter_preorder

__all__ = [
    "FORMAT_VERSION",
    "TRACE_SUFFIXES",
    "CallNode",
    "CallTree",
    "ClassMap",
    "CodeObject",
    "TraceDocument",
    "atomic_write_bytes",
    "atomic_write_stream",
    "build_call_tree",
    "dumps",
    "find_trace_files",
    "from_data",
    "gc_paused",
    "gc_paused_call",
    "is_trace_file",
    "iter_postorder",
    "iter_preorder",
    "load",
    "normalize",
    "parse",
    "recording_stem",
    "save",
]
