"""The OpenAPI document around the generated paths: template, overrides, YAML.

The template (default: `openapi: 3.0.3`, `info: {title, version: v1}`) is any YAML or JSON
mapping; the generated `paths` are placed in its `paths` (an operation the template already
defines for a path and method is kept as written — the template is the curated part) and the
generated security schemes in `components.securitySchemes` (a scheme of the same name in the
template wins). `--openapi-title` / `--openapi-version` then override `info`. A template that
declares OpenAPI 3.1 gets 3.1 nullability (`type: [T, "null"]`) instead of `nullable`.

YAML is written block style with keys in document order: paths, methods, statuses, parameters and
properties are already sorted by the model, so equal recordings give byte-equal documents.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Optional

from tracetool.errors import ConfigError, NotFoundError

DEFAULT_OPENAPI = "3.0.3"
DEFAULT_TITLE = "My project"
DEFAULT_VERSION = "v1"


def load_template(path: Path | str) -> dict[str, Any]:
    """Read a template file; one-line errors for a missing, unreadable or non-mapping file."""
    import yaml

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFoundError(f"{p}: no such OpenAPI template") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read the OpenAPI template ({exc})") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{p}: the OpenAPI template is not valid YAML{where}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{p}: the OpenAPI template must be a mapping (it is a {type(data).__name__})"
        )
    for key in ("paths", "components", "info"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise ConfigError(f"{p}: the OpenAPI template's {key} must be a mapping")
    return data


def is_oas31(template: Optional[dict[str, Any]]) -> bool:
    return str((template or {}).get("openapi", DEFAULT_OPENAPI)).startswith("3.1")


def assemble(
    paths: dict[str, Any],
    schemes: dict[str, Any],
    *,
    template: Optional[dict[str, Any]] = None,
    title: Optional[str] = None,
    version: Optional[str] = None,
    default_title: str = DEFAULT_TITLE,
) -> dict[str, Any]:
    """The whole document: template + generated paths and schemes + overrides."""
    base = copy.deepcopy(template) if template else {}
    doc: dict[str, Any] = {"openapi": str(base.pop("openapi", DEFAULT_OPENAPI))}
    info = dict(base.pop("info", None) or {})
    info.setdefault("title", default_title)
    info.setdefault("version", DEFAULT_VERSION)
    if title is not None:
        info["title"] = title
    if version is not None:
        info["version"] = version
    info["title"] = str(info["title"])
    info["version"] = str(info["version"])
    doc["info"] = info
    template_paths = base.pop("paths", None) or {}
    components = base.pop("components", None) or {}
    doc.update(base)  # servers, tags, externalDocs... in the template's order

    merged_paths: dict[str, Any] = {}
    for path in sorted(set(paths) | set(template_paths)):
        generated = paths.get(path) or {}
        curated = template_paths.get(path)
        if not isinstance(curated, dict):
            merged_paths[path] = generated if curated is None else curated
            continue
        item = dict(curated)
        for method, operation in generated.items():
            item.setdefault(method, operation)
        merged_paths[path] = item
    doc["paths"] = merged_paths

    if schemes or components:
        components = dict(components)
        existing = components.get("securitySchemes")
        all_schemes = dict(schemes)
        if isinstance(existing, dict):
            all_schemes.update(existing)
        if all_schemes:
            components["securitySchemes"] = {k: all_schemes[k] for k in sorted(all_schemes)}
        doc["components"] = components
    return doc


def to_yaml(doc: dict[str, Any]) -> str:
    """Block-style YAML, keys in document order, unicode kept."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text: str = yaml.dump(
        doc,
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
    return text
