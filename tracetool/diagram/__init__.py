"""Sequence diagrams of recordings and diffs between them (spec: `sequence-diagram`,
`sequence-diagram-diff`).

Public API:

- `diagram_of(source, filter=None, options=None) -> Diagram`: a recording (path or document) →
  its diagram, after an optional filter (`tracetool.filters`).
- `render(diagram, fmt) -> str`: `json` (AppMap sequence.json), `plantuml`, `text` (diffs).
- `write_diagrams(paths, request) -> list[WrittenDiagram]`: what `tracetool sequence-diagram`
  does — one `<name>.sequence.<ext>` per recording beside it or in `output_dir` (`png` may add
  `-2`, `-3` pages), plus an HTML view opened in the browser with `show_browser`. A json or
  plantuml diagram of a recording over `tracetool.trace.stream.STREAM_THRESHOLD` without a
  filter is built and written a batch of call trees at a time (`tracetool.diagram.streamed`),
  the same bytes with memory that does not grow with the recording.
- `diff_diagrams(base, head, request) -> DiffReport`: what `tracetool sequence-diagram-diff`
  does, for two files (diagram JSON, or recordings) or two directories of `*.sequence.json`.

Model, builder, digests, loops, renderers and diff live in the submodules. The names here are
imported on first use: the indexer's digest hook (`BoundDigests`, tracetool.diagram.builder)
does not import the commands' service, renderers and diff.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracetool.diagram.builder import BoundDigests, DiagramOptions, build_diagram
    from tracetool.diagram.model import Action, Actor, Diagram, from_json, to_json
    from tracetool.diagram.service import (
        DiagramRequest,
        DiffReport,
        DiffRequest,
        WrittenDiagram,
        bound_digest,
        diagram_of,
        diff_diagrams,
        load_diagram,
        recording_digest,
        render,
        roots_digest,
        write_diagrams,
    )

# Recordings up to this size are built whole, bigger ones a batch of call trees at a time
# (`tracetool.diagram.streamed`, whose `WHOLE_LIMIT` this is; kept here, where `read_ahead`
# reads it without importing the builder): the whole build's peak (~5× the file) buys 20–40%
# less CPU than streaming, which keeps memory flat.
WHOLE_LIMIT = 64 * 1024 * 1024
# Below this size a recording is read too soon to gain from `read_ahead`.
READ_AHEAD_MIN = 1 << 20


def read_ahead(paths: Sequence[Path]) -> None:
    """Start reading the first recording in a thread (`tracetool.trace.reader.prefetch`) when
    the diagram command will read it whole: the command's imports (~30 ms) then run while it is
    read (a 60 MB recording: ~30 ms). Nothing is read ahead of a recording streamed in batches
    (over `WHOLE_LIMIT`): its bytes would be held for nothing."""
    if not paths:
        return
    import os
    import stat

    try:
        st = os.stat(paths[0])
    except OSError:  # (the command reports it)
        return
    if stat.S_ISREG(st.st_mode) and READ_AHEAD_MIN <= st.st_size <= WHOLE_LIMIT:
        from tracetool.trace.reader import prefetch

        prefetch(paths[0])


# public name -> the submodule that defines it
_EXPORTS: dict[str, str] = {
    "BoundDigests": "builder",
    "DiagramOptions": "builder",
    "build_diagram": "builder",
    "Action": "model",
    "Actor": "model",
    "Diagram": "model",
    "from_json": "model",
    "to_json": "model",
    "DiagramRequest": "service",
    "DiffReport": "service",
    "DiffRequest": "service",
    "WrittenDiagram": "service",
    "bound_digest": "service",
    "diagram_of": "service",
    "diff_diagrams": "service",
    "load_diagram": "service",
    "recording_digest": "service",
    "render": "service",
    "roots_digest": "service",
    "write_diagrams": "service",
}

__all__ = [
    "BoundDigests",
    "bound_digest",
    "recording_digest",
    "roots_digest",
    "Action",
    "Actor",
    "Diagram",
    "DiagramOptions",
    "DiagramRequest",
    "DiffReport",
    "DiffRequest",
    "WrittenDiagram",
    "build_diagram",
    "diagram_of",
    "diff_diagrams",
    "from_json",
    "load_diagram",
    "render",
    "to_json",
    "write_diagrams",
]


def __getattr__(name: str) -> Any:
    submodule = _EXPORTS.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value
    return value
