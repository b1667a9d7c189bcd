"""`openapi`: an OpenAPI document from the HTTP server requests in recordings.

Pipeline: find recordings → collect each into an `ApiModel` (`collect.py`, on a process pool)
→ merge (order-independent) → render paths and security schemes (`model.py`) → place them in the
template and apply overrides (`document.py`) → YAML. What each step decides is in those modules.

    result = generate("tmp/trace", OpenApiOptions(title="Shop API"))
    print(result.yaml())

An empty directory gives a valid document with no paths (and a warning); a recording that cannot
be read, and requests that cannot be described (bad status, path without a leading `/`), are
skipped with warnings in `result.warnings`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from tracetool.openapi.document import DEFAULT_TITLE, assemble, is_oas31, load_template, to_yaml
from tracetool.openapi.model import ApiModel

__all__ = [
    "ApiModel",
    "OpenApiOptions",
    "OpenApiResult",
    "build_model",
    "generate",
]


@dataclass(frozen=True)
class OpenApiOptions:
    template: Optional[Path] = None  # YAML/JSON template file
    title: Optional[str] = None  # overrides info.title
    version: Optional[str] = None  # overrides info.version
    default_title: str = DEFAULT_TITLE  # info.title when neither template nor override has one
    workers: Optional[int] = None  # processes; None = one per CPU


@dataclass(frozen=True)
class OpenApiResult:
    document: dict[str, Any]
    recordings: int  # recordings read
    requests: int  # HTTP server requests described
    media: int  # media requests left out
    warnings: tuple[str, ...] = field(default=())

    def yaml(self) -> str:
        return to_yaml(self.document)


def build_model(files: Sequence[Path], *, workers: Optional[int] = None) -> ApiModel:
    """Collect and merge the API model of these recordings."""
    from tracetool.openapi.collect import collect_batch
    from tracetool.trace.stream import file_size
    from tracetool.workers import map_batches

    model = ApiModel()
    for part in map_batches(collect_batch, [(p, file_size(p)) for p in files], workers=workers):
        model.merge(part)
    return model


def generate(
    source: Path | str | Sequence[Path], options: OpenApiOptions = OpenApiOptions()
) -> OpenApiResult:
    """The OpenAPI document of every recording below `source` (a directory, file or file list)."""
    from tracetool.trace.reader import find_trace_files, skip_lines

    template = load_template(options.template) if options.template else None
    warnings: list[str] = []
    if isinstance(source, (str, Path)):
        unusable: list[tuple[Path, str]] = []
        files = find_trace_files(source, unusable)
        warnings.extend(skip_lines(unusable, source))
        if not files:
            warnings.append(f"no recordings (*.trace.json, *.appmap.json) found in {source}")
    else:
        files = list(source)
    model = build_model(files, workers=options.workers)
    document = assemble(
        model.paths(oas31=is_oas31(template)),
        model.security_schemes(),
        template=template,
        title=options.title,
        version=options.version,
        default_title=options.default_title,
    )
    prefix = f"{source}{'' if str(source).endswith('/') else '/'}"
    for line in model.warnings():
        # name files relative to the directory given, as the rest of the CLI does
        warnings.append(line.replace(prefix, "", 1) if isinstance(source, (str, Path)) else line)
    return OpenApiResult(document, model.recordings, model.requests, model.media, tuple(warnings))
