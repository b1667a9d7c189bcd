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

Model, builder, digests, loops, renderers and diff live in the submodules.
"""

from __future__ import annotations

from tracetool.diagram.builder import DiagramOptions, build_diagram
from tracetool.diagram.model import Action, Actor, Diagram, from_json, to_json
from tracetool.diagram.service import (
    BoundDigests,
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
