"""The two diagram commands as functions: build and write diagrams; diff diagrams.

Contract: see `tracetool.diagram` (package doc). Output files are written atomically; a file
that is not a recording or diagram raises `TraceFormatError` naming it; a missing one
`NotFoundError`.

A diagram is a view the command remakes from its recording, which it never writes: like the
index's sidecars it is written atomically (temporary file, then rename: never seen half
written) but not fsynced. A power cut right after a run can at worst lose the diagram, not a
recording; the fsync made every run wait for the disk, a tenth of a second and more per 100 MB
of diagram.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tracetool import accel
from tracetool.diagram import diff as diffmod
from tracetool.diagram import plantuml, text
from tracetool.diagram.builder import BoundDigests as BoundDigests  # (defined there now)
from tracetool.diagram.builder import DiagramOptions, build_diagram, release
from tracetool.diagram.model import Action, Actor, Diagram, from_json, json_default, to_json
from tracetool.errors import NotFoundError, TraceFormatError, TraceToolError, UsageError
from tracetool.filters import Bound, FilterState, bind
from tracetool.trace.document import (
    TraceDocument,
    atomic_write_stream,
    dispose,
    dispose_kept,
    dumps_deep,
    gc_paused,
    is_trace_file,
    recording_stem,
    reuse_freed_buffers,
)
from tracetool.trace.reader import describe, find_trace_files, guarded, read_file, skip_lines
from tracetool.trace.slim import load_slim

EXTENSIONS = {"json": ".sequence.json", "plantuml": ".sequence.uml", "png": ".sequence.png"}
DIAGRAM_SUFFIX = ".sequence.json"
_INDENT = orjson.OPT_INDENT_2


def diagram_of(
    source: Path | str | TraceDocument,
    filter: FilterState | None = None,
    options: DiagramOptions | None = None,
) -> Diagram:
    """The diagram of one recording, after `filter` when given."""
    # extras=False: a diagram never reads top-level keys beyond the trace format's own
    # structs: the events as `SlimCall` and `SlimReturn` structs (half the memory of dicts; every pass reads faster)
    doc = (
        source
        if isinstance(source, TraceDocument)
        else load_slim(source, extras=False, structs=True)
    )
    return build_diagram(doc, options, filter)


def roots_digest(root_subtree_digests: Iterable[str]) -> str:
    """AppMap's per-recording digest: sha256 over the root actions' subtree digests, concatenated.

    Two recordings with equal digests have the same sequence-diagram structure (compare, index).
    """
    return hashlib.sha256("".join(root_subtree_digests).encode()).hexdigest()


def recording_digest(doc: TraceDocument) -> str:
    """The sequence-diagram digest of one recording (default diagram options, no filter)."""
    bound = bind(doc, sql_names=False)
    try:
        return bound_digest(bound)
    finally:
        release(bound)


def bound_digest(bound: Bound) -> str:
    """`recording_digest` of a recording already bound (by `bind` or the indexer's extract):
    the tree is not built again. SQL calls count as one unnamed query object, as in
    `recording_digest`, whatever `bound` names them."""
    digests = BoundDigests()
    digests.add(bound)
    return digests.result()


def render(diagram: Diagram, fmt: str, **kwargs: Any) -> str:
    """The diagram as text: `json` (AppMap sequence.json), `plantuml` or `text` (diffs)."""
    return render_bytes(diagram, fmt, **kwargs).decode()


def json_chunks(diagram: Diagram, batch: int = 256) -> Iterator[bytes]:
    """`render_bytes(diagram, "json")` in pieces, a batch of root actions at a time, so the
    whole document is never held (a diagram's JSON is bigger than its recording). Raises
    `orjson.JSONEncodeError` where `render_bytes` falls back to compact JSON (too deep)."""
    return json_stream(diagram.actors, [diagram.root_actions], batch)


def json_stream(
    actors: list[Actor], batches: Iterable[list[Action]], batch: int = 256
) -> Iterator[bytes]:
    """`json_chunks` of a diagram given as its actors and its root actions in batches (the
    JSON of their concatenation), each batch read once as it comes."""
    head = orjson.dumps({"actors": [a.to_json() for a in actors]}, option=_INDENT)
    yield head[:-2] + b',\n  "rootActions": ['
    first = True
    for roots in batches:
        for start in range(0, len(roots), batch):
            piece = actions_text(roots[start : start + batch])
            if not first:
                yield b","  # (on its own: the body is not copied once more behind it)
            yield piece
            first = False
    yield b"]\n}" if first else b"\n  ]\n}"


_ACTIONS_JSON = accel.function("actions_json")  # `actions_text` in C (tracetool/_speedups_json.c)


def actions_text(actions: list[Action]) -> bytes:
    """The sequence.json objects of `actions` as `json_stream` writes them: each at an indent
    of two levels after a newline, separated by commas (`orjson.dumps` of `[actions]` inside
    its two brackets). Raises `orjson.JSONEncodeError` as that does (too deep)."""
    if _ACTIONS_JSON is not None:
        text = _ACTIONS_JSON(actions, Action)
        if text is not None:
            return text  # type: ignore[no-any-return]
    # the list inside a list, so its items are indented as `rootActions` items are
    # (`[\n  [\n    {…},\n    {…}\n  ]\n]`), then without the brackets
    return orjson.dumps([actions], option=_INDENT, default=json_default)[5:-6]


def write_view(target: Path, chunks: Iterable[bytes]) -> None:
    """Write a diagram file (the concatenated `chunks`, each a new bytes object): atomically,
    without fsync (module doc), a thread writing each chunk while the next is made. Every file
    the diagram commands write goes through it."""
    atomic_write_stream(target, chunks, fsync=False, behind=True)


def write_json(diagram: Diagram, target: Path) -> None:
    """The diagram's sequence.json, written atomically without a whole copy in memory."""
    try:
        write_view(target, json_chunks(diagram))
    except orjson.JSONEncodeError:  # (the partial file is gone) compact JSON, in one piece
        write_view(target, (render_bytes(diagram, "json"),))


def render_bytes(diagram: Diagram, fmt: str, **kwargs: Any) -> bytes:
    if fmt == "json":
        head = {"actors": [a.to_json() for a in diagram.actors]}
        try:
            return orjson.dumps(
                {**head, "rootActions": diagram.root_actions}, option=_INDENT, default=json_default
            )
        except orjson.JSONEncodeError:
            # nested deeper than orjson writes (a call chain hundreds of levels deep): compact
            # JSON, written iteratively (indented, its size would grow with the square of depth)
            return dumps_deep(to_json(diagram))
    if fmt == "plantuml":
        return plantuml.render(diagram, **kwargs).encode()
    if fmt == "text":
        return text.render(diagram).encode()
    raise UsageError(f"unknown diagram format {fmt!r} (json, plantuml, text)")


@dataclass(frozen=True)
class DiagramRequest:
    format: str = "png"
    output_dir: Path | None = None
    filter: FilterState | None = None
    options: DiagramOptions = field(default_factory=DiagramOptions)
    show_browser: bool = False
    # PNG: hide deep calls within one lifeline (`tracetool.diagram.collapse`)
    collapse: bool = False


@dataclass(frozen=True)
class WrittenDiagram:
    source: Path
    outputs: tuple[Path, ...]
    actions: int
    actors: int
    hidden: int = 0  # actions hidden by `collapse`


def _expand(paths: list[Path], skipped: list[tuple[Path, str]] | None = None) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = find_trace_files(p, skipped)
            if not found:
                raise NotFoundError(f"{p}: no recordings (*.trace.json, *.appmap.json) found")
            out.extend(found)
        elif not p.exists():
            raise NotFoundError(f"{p}: no such file")
        else:
            out.append(p)
    return out


def write_diagrams(
    paths: list[Path], request: DiagramRequest, errors: list[str] | None = None
) -> list[WrittenDiagram]:
    """Diagram every recording (module doc); returns what was written, in input order.

    With `errors`, a recording that cannot be diagrammed adds one line there and the others
    go on; without it, the first such error is raised.
    """
    if request.format not in EXTENSIONS:
        raise UsageError(f"unknown format {request.format!r} (png, plantuml, json)")
    written: list[WrittenDiagram] = []
    skipped: list[tuple[Path, str]] | None = None if errors is None else []
    files = _expand(paths, skipped)
    if errors is not None and skipped:
        errors.extend(skip_lines(skipped))
    for path in files:
        try:
            written.extend(_write_one(path, request))
        except TraceToolError as exc:
            if errors is None:
                raise
            errors.append(f"skipped {exc}")
    return written


def _write_one(path: Path, request: DiagramRequest) -> list[WrittenDiagram]:
    if request.format == "json":
        # written in pieces of ~4 MB, each mapped afresh and faulted in otherwise (a 60 MB
        # recording's diagram: 12,000 page faults, ~3 µs each on this kind of VM); PlantUML's
        # pieces are smaller and reuse the heap already
        reuse_freed_buffers()
    if request.format in ("json", "plantuml") and request.filter is None:
        if not request.show_browser:
            streamed = _write_streamed(path, request)
            if streamed is not None:
                return [streamed]
    written: list[WrittenDiagram] = []
    dispose_kept()  # the previous recording's objects, if kept (`free_at_exit`)
    # One pause for the whole file: the GC would otherwise rescan the growing heap of
    # event dicts again and again (several times the work itself on big recordings).
    with gc_paused():
        with guarded(path):
            diagram = diagram_of(path, request.filter, request.options)
            hidden = 0
            if request.collapse and request.format == "png":
                from tracetool.diagram.collapse import collapse

                hidden = collapse(diagram)
        directory = request.output_dir if request.output_dir is not None else path.parent
        base = directory / (recording_stem(path) + EXTENSIONS[request.format])
        if request.format == "png":
            from tracetool.diagram.png import render_png

            outputs = render_png(diagram, base)
        elif request.format == "json":
            with guarded(path):
                write_json(diagram, base)
            outputs = [base]
        elif request.format == "plantuml":
            with guarded(path):
                write_view(base, (c.encode() for c in plantuml.chunks(diagram)))
            outputs = [base]
        else:
            with guarded(path):
                payload = render_bytes(diagram, request.format)
            write_view(base, (payload,))
            outputs = [base]
        if request.show_browser:
            from tracetool.diagram.svg import render_html

            page = directory / (recording_stem(path) + ".sequence.html")
            write_view(page, (render_html(diagram, path.name).encode(),))
            outputs.append(page)
            open_in_browser(page)
        written.append(
            WrittenDiagram(path, tuple(outputs), _size(diagram), len(diagram.actors), hidden)
        )
        # Free the diagram while the GC is still paused: re-enabling it with ~10^5 live
        # actions starts a full collection over them (0.1 s on a 60 MB recording).
        dispose(diagram)
        del diagram
    return written


def _size(diagram: Diagram) -> int:
    """`len(diagram)`, from the builder's count when it has one (no walk over the actions)."""
    return len(diagram) if diagram.built_size is None else diagram.built_size


def _write_streamed(path: Path, request: DiagramRequest) -> WrittenDiagram | None:
    """A big recording's json or plantuml diagram, written a batch of root actions at a time
    (`tracetool.diagram.streamed`); None when it is to be built whole."""
    from tracetool.diagram.streamed import stream_diagram

    with gc_paused(), guarded(path):
        streamed = stream_diagram(path, request.options)
        if streamed is None:
            return None
        directory = request.output_dir if request.output_dir is not None else path.parent
        base = directory / (recording_stem(path) + EXTENSIONS[request.format])
        if request.format == "json":
            try:
                write_view(base, json_stream(streamed.actors, streamed.batches()))
            except orjson.JSONEncodeError:
                return None  # too deep for orjson: written whole, as compact JSON
        else:
            pieces = plantuml.stream_chunks(streamed.actors, streamed.batches())
            write_view(base, (c.encode() for c in pieces))
    return WrittenDiagram(path, (base,), streamed.actions, len(streamed.actors))


def open_in_browser(page: Path) -> bool:
    """Open a local file in the user's browser (no server: the page needs no network)."""
    if os.environ.get("TRACETOOL_NO_BROWSER"):
        return False
    import webbrowser  # (only here: it costs every diagram command its import otherwise)

    return webbrowser.open(page.resolve().as_uri())


# ---------------------------------------------------------------- diff


def load_diagram(path: Path) -> Diagram:
    """A diagram from a sequence.json file, or built from a recording."""
    if not path.exists():
        raise NotFoundError(f"{path}: no such file")
    with guarded(path):
        return _load_diagram(path)


def _load_diagram(path: Path) -> Diagram:
    if is_trace_file(path):
        return diagram_of(path)
    raw = read_file(path)
    try:
        obj = orjson.loads(raw)  # type: ignore[arg-type]
    except orjson.JSONDecodeError as exc:
        raise TraceFormatError(f"{path}: {describe(exc)}") from None
    if isinstance(obj, dict) and "rootActions" not in obj and "events" in obj:
        from tracetool.trace.document import from_data

        return build_diagram(from_data(obj, str(path)))
    if isinstance(obj, dict) and "rootActions" not in obj:
        raise TraceFormatError(
            f"{path}: not a sequence diagram; make one with "
            f"`tracetool sequence-diagram -f json <recording>`"
        )
    return from_json(obj, str(path))


@dataclass(frozen=True)
class DiffRequest:
    format: str = "plantuml"
    output_dir: Path = Path(".")


@dataclass
class DiffReport:
    """What a diff run found: per pair, its summary text and the file written (if changed)."""

    pairs: list[tuple[str, str, Path | None]] = field(default_factory=list)  # (name, text, file)
    identical: list[str] = field(default_factory=list)
    only_base: list[str] = field(default_factory=list)
    only_head: list[str] = field(default_factory=list)


def diff_diagrams(base: Path, head: Path, request: DiffRequest) -> DiffReport:
    """Diff two diagram files or two directories of them (module doc)."""
    if request.format not in ("plantuml", "json"):
        raise UsageError(f"unknown format {request.format!r} (plantuml, json)")
    for p in (base, head):
        if not p.exists():
            raise NotFoundError(f"{p}: no such file or directory")
    report = DiffReport()
    if base.is_dir() != head.is_dir():
        raise UsageError("compare two files or two directories, not a file with a directory")
    ext = ".sequence.uml" if request.format == "plantuml" else ".sequence.json"
    if not base.is_dir():
        _diff_pair(load_diagram(base), load_diagram(head), "diff", request, ext, report)
        return report
    b_files = _diagram_files(base)
    h_files = _diagram_files(head)
    for rel in sorted(set(b_files) | set(h_files)):
        if rel not in h_files:
            report.only_base.append(rel)
        elif rel not in b_files:
            report.only_head.append(rel)
        else:
            name = rel[: -len(DIAGRAM_SUFFIX)] + ".diff"
            _diff_pair(
                load_diagram(b_files[rel]), load_diagram(h_files[rel]), name, request, ext, report
            )
    return report


def _diagram_files(root: Path) -> dict[str, Path]:
    return {
        p.relative_to(root).as_posix(): p
        for p in sorted(root.rglob(f"*{DIAGRAM_SUFFIX}"))
        if p.is_file()
    }


def _diff_pair(
    base: Diagram, head: Diagram, name: str, request: DiffRequest, ext: str, report: DiffReport
) -> None:
    result = diffmod.diff(base, head)
    if result is None:
        report.identical.append(name)
        return
    target = request.output_dir / (name + ext)
    write_view(target, (render_bytes(result, request.format),))
    report.pairs.append((name, text.render(result), target))
