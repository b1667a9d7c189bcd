"""trace.yml: the project's tracetool configuration.

Keys: `name` (app name), `trace_dir` (where recordings live; default `tmp/trace`, relative to the
file's directory), `packages` (what the agent records: each `{path, exclude, shallow}` or just a
dotted module path), `labels` (`{label: [function patterns]}`), `allowed_hosts` (extra host names
the agent and the local servers answer; `tracetool.hostcheck`), `safe_repr` (dotted class names
whose own `repr()` the agent may call when capturing values; docs/trace-yml.md). Unknown keys are
kept in `raw` for
the features that read them. A wrong type fails with a `ConfigError` naming the key.

Precedence everywhere: command-line flag > environment > trace.yml > the command's default.
Imported by the agent: stdlib and pyyaml only, Python 3.9+.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracetool.errors import ConfigError

# (they live in tracetool.paths, where a command that is given its folder finds it without
# importing this module)
from tracetool.paths import DEFAULT_TRACE_DIR as DEFAULT_TRACE_DIR
from tracetool.paths import ENV_TRACE_DIR as ENV_TRACE_DIR
from tracetool.paths import resolve_trace_dir as resolve_trace_dir

CONFIG_FILE = "trace.yml"
ENV_CONFIG = "TRACETOOL_CONFIG"


@dataclass(frozen=True)
class PackageSpec:
    """A package (or module) to record. `path` is dotted: `shop`, `shop.models`."""

    path: str
    exclude: tuple[str, ...] = ()
    shallow: bool = False

    def covers(self, module: str) -> bool:
        """Whether module `module` belongs to this package and is not excluded."""
        if module != self.path and not module.startswith(self.path + "."):
            return False
        for ex in self.exclude:
            full = ex if ex.startswith(self.path) else f"{self.path}.{ex}"
            if module == full or module.startswith(full + "."):
                return False
        return True


@dataclass(frozen=True)
class Config:
    root: Path
    path: Path | None = None
    name: str = ""
    trace_dir: Path = Path(DEFAULT_TRACE_DIR)
    packages: tuple[PackageSpec, ...] = ()
    labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    safe_repr: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict)
    # extra Host/Origin names the agent's /_trace/record and the local servers accept
    # (tracetool.hostcheck; docs/security.md)
    allowed_hosts: tuple[str, ...] = ()


def find_config_file(start: Path | str | None = None) -> Path | None:
    """`$TRACETOOL_CONFIG`, else trace.yml in `start` (cwd) or the nearest parent up to a repo root."""
    env = os.environ.get(ENV_CONFIG)
    if env:
        return Path(env)
    here = Path(start or os.getcwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / CONFIG_FILE
        if candidate.is_file():
            return candidate
        if (directory / ".git").exists():
            break
    return None


def _expect(cond: bool, source: str, key: str, what: str) -> None:
    if not cond:
        raise ConfigError(f"{source}: {key} must be {what}")


def _str_list(value: Any, source: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    _expect(
        isinstance(value, list) and all(isinstance(v, str) for v in value),
        source,
        key,
        "a list of strings",
    )
    return tuple(value)


def parse_config(data: Any, root: Path, source: str = CONFIG_FILE) -> Config:
    """Validate parsed YAML into a Config (see module doc)."""
    if data is None:
        data = {}
    _expect(isinstance(data, dict), source, "the top level", "a mapping of keys to values")
    name = data.get("name", root.name)
    _expect(isinstance(name, str), source, "name", "a string")
    trace_dir = data.get("trace_dir", DEFAULT_TRACE_DIR)
    _expect(isinstance(trace_dir, str) and bool(trace_dir), source, "trace_dir", "a path string")

    packages: list[PackageSpec] = []
    raw_packages = data.get("packages") or []
    _expect(isinstance(raw_packages, list), source, "packages", "a list")
    for i, item in enumerate(raw_packages):
        key = f"packages[{i}]"
        if isinstance(item, str):
            packages.append(PackageSpec(item))
            continue
        _expect(isinstance(item, dict), source, key, "a mapping with a path, or a module name")
        path = item.get("path")
        _expect(isinstance(path, str) and bool(path), source, f"{key}.path", "a module path string")
        shallow = item.get("shallow", False)
        _expect(isinstance(shallow, bool), source, f"{key}.shallow", "true or false")
        exclude = _str_list(item.get("exclude"), source, f"{key}.exclude")
        packages.append(PackageSpec(path.replace("/", "."), exclude, shallow))

    labels: dict[str, tuple[str, ...]] = {}
    raw_labels = data.get("labels") or {}
    _expect(isinstance(raw_labels, dict), source, "labels", "a mapping of label to functions")
    for label, funcs in raw_labels.items():
        labels[str(label)] = _str_list(funcs, source, f"labels.{label}")

    allowed_hosts = _str_list(data.get("allowed_hosts"), source, "allowed_hosts")
    safe_repr = _str_list(data.get("safe_repr"), source, "safe_repr")
    for class_path in safe_repr:
        _expect(
            "." in class_path and " " not in class_path,
            source,
            "safe_repr",
            f"a list of dotted class names (module.Class), not {class_path!r}",
        )

    return Config(
        root=root,
        name=name,
        trace_dir=(root / trace_dir) if not os.path.isabs(trace_dir) else Path(trace_dir),
        packages=tuple(packages),
        labels=labels,
        safe_repr=safe_repr,
        raw=dict(data),
        allowed_hosts=allowed_hosts,
    )


def load_config(path: Path | str | None = None, *, required: bool = False) -> Config:
    """Load trace.yml (found as in `find_config_file` when `path` is None).

    Without a file: defaults rooted at the current directory, or a ConfigError if `required`.
    """
    file = Path(path) if path is not None else find_config_file()
    if file is None:
        if required:
            raise ConfigError(f"no {CONFIG_FILE} found in {os.getcwd()} or its parents")
        cwd = Path(os.getcwd())
        return Config(root=cwd, name=cwd.name, trace_dir=cwd / DEFAULT_TRACE_DIR)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such configuration file") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read ({exc.strerror})") from None
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{file}: not valid YAML{where}") from None
    config = parse_config(data, file.resolve().parent, str(file))
    return Config(**{**config.__dict__, "path": file})
