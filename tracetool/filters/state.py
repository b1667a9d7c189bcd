"""The filter state schema and its codec: decode, to_json / encode, merge (see `tracetool.filters`)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

import orjson

from tracetool.errors import UsageError

DEFAULT_DEPENDENCY_FOLDERS = ("vendor", "node_modules")
DEFAULT_CONTEXT_DEPTH = 1
ROOT_EVENT_LABELS = frozenset({"cli.command", "job.perform", "message.handle"})

# Keys of the editors' recording state that are about the view, not the filter.
_VIEW_STATE_KEYS = frozenset(
    {
        "currentView",
        "selectedObject",
        "selectedObjectId",
        "selectedTraceEventFqid",
        "traceFilter",
        "expandedPackages",
        "highlightedEventId",
        "filters",
    }
)


@dataclass(frozen=True)
class FilterState:
    """One filter (module doc). Lists are tuples so states are hashable and comparable."""

    root_objects: tuple[str, ...] = ()
    limit_root_events: bool = True
    hide_media_requests: bool = True
    hide_unlabeled: bool = False
    hide_external: bool = False
    dependency_folders: tuple[str, ...] = DEFAULT_DEPENDENCY_FOLDERS
    hide_elapsed_time_under: float | None = None
    hide_name: tuple[str, ...] = ()
    hide_tree: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    context_depth: int = DEFAULT_CONTEXT_DEPTH
    # Keys given explicitly when decoded (drives merge); unknown keys met while decoding.
    explicit: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    unknown: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def is_default(self) -> bool:
        return self == FilterState()


# JSON key <-> attribute, in the order `to_json` writes them.
_KEYS: tuple[tuple[str, str], ...] = (
    ("rootObjects", "root_objects"),
    ("limitRootEvents", "limit_root_events"),
    ("hideMediaRequests", "hide_media_requests"),
    ("hideUnlabeled", "hide_unlabeled"),
    ("hideExternal", "hide_external"),
    ("dependencyFolders", "dependency_folders"),
    ("hideElapsedTimeUnder", "hide_elapsed_time_under"),
    ("hideName", "hide_name"),
    ("hideTree", "hide_tree"),
    ("context", "context"),
    ("contextDepth", "context_depth"),
)
_ALIASES = {"hideExternalPaths": "hideExternal", "hideNames": "hideName"}
_LIST_KEYS = {"rootObjects", "dependencyFolders", "hideName", "hideTree", "context"}
_BOOL_KEYS = {"limitRootEvents", "hideMediaRequests", "hideUnlabeled"}


# ---------------------------------------------------------------- decoding and encoding


def decode(
    value: str | Mapping[str, Any] | FilterState | None, *, source: str = "--filter"
) -> FilterState:
    """A FilterState from a dict, JSON text or base64(url) JSON (module doc)."""
    if value is None:
        return FilterState()
    if isinstance(value, FilterState):
        return value
    if isinstance(value, Mapping):
        data: Any = dict(value)
    else:
        data = _parse_text(str(value), source)
    if not isinstance(data, dict):
        raise UsageError(f"{source}: a filter must be a JSON object, not {type(data).__name__}")
    if isinstance(data.get("filters"), dict) and not any(
        key in data for key, _ in _KEYS if key != "context"
    ):
        # The editors' "copy current recording state": the filter is nested, the rest is view.
        data = data["filters"]
        view_keys: frozenset[str] = frozenset()
    else:
        view_keys = _VIEW_STATE_KEYS
    return _from_dict(data, source, view_keys)


def _parse_text(text: str, source: str) -> Any:
    text = text.strip()
    if text.startswith("%7B") or text.startswith("%7b"):
        text = unquote(text)
    if not text:
        raise UsageError(f"{source}: empty filter")
    if text.startswith("{"):
        raw = text.encode()
    else:
        compact = re.sub(r"\s+", "", text).replace("-", "+").replace("_", "/").rstrip("=")
        try:
            raw = base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise UsageError(
                f"{source}: not a filter (neither JSON nor base64-encoded JSON)"
            ) from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"{source}: filter is not valid JSON ({exc})") from None


def _from_dict(data: Mapping[str, Any], source: str, ignorable: frozenset[str]) -> FilterState:
    values: dict[str, Any] = {}
    explicit: set[str] = set()
    unknown: list[str] = []
    for raw_key, value in data.items():
        key = _ALIASES.get(raw_key, raw_key)
        if key not in dict(_KEYS):
            if raw_key not in ignorable:
                unknown.append(raw_key)
            continue
        attr = dict(_KEYS)[key]
        if key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise UsageError(f"{source}: {raw_key} must be true or false")
            values[attr] = value
        elif key == "hideExternal":
            if isinstance(value, list):
                values["hide_external"] = True
                values["dependency_folders"] = _strings(value, raw_key, source)
                explicit.add("dependencyFolders")
            elif isinstance(value, bool) or value is None:
                values["hide_external"] = bool(value)
            else:
                raise UsageError(f"{source}: {raw_key} must be true, false or a list of folders")
        elif key == "hideElapsedTimeUnder":
            values[attr] = _milliseconds(value, raw_key, source)
        elif key == "contextDepth":
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise UsageError(f"{source}: contextDepth must be a whole number")
            try:
                depth = int(value)
            except ValueError:
                raise UsageError(f"{source}: contextDepth must be a whole number") from None
            if depth < 0:
                raise UsageError(f"{source}: contextDepth must not be negative")
            values[attr] = depth
        elif key in _LIST_KEYS:
            if value is False or value is None:
                if key == "dependencyFolders":
                    continue
                values[attr] = ()
            else:
                values[attr] = _strings(value, raw_key, source)
        explicit.add(key)
    return FilterState(**values, explicit=frozenset(explicit), unknown=tuple(unknown))


def _strings(value: Any, key: str, source: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{source}: {key} must be a list of strings")
    return tuple(value)


def _milliseconds(value: Any, key: str, source: str) -> float | None:
    if value is False or value is None:
        return None
    if isinstance(value, bool):
        raise UsageError(f"{source}: {key} must be a number of milliseconds or false")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{source}: {key} must be a number of milliseconds or false") from None
    if number < 0:
        raise UsageError(f"{source}: {key} must not be negative")
    return number


def to_json(state: FilterState) -> dict[str, Any]:
    """The non-default keys of `state` (lossless: `decode(to_json(s)) == s`)."""
    default = FilterState()
    out: dict[str, Any] = {}
    for key, attr in _KEYS:
        value = getattr(state, attr)
        if value == getattr(default, attr):
            continue
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        out[key] = value
    return out


def encode(state: FilterState) -> str:
    """base64url (no padding) of `to_json(state)`: what `--filter` and the editors accept."""
    raw = orjson.dumps(to_json(state))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def merge(first: FilterState, second: FilterState) -> FilterState:
    """Combine two filters (module doc); `first` wins where both set a boolean."""
    values: dict[str, Any] = {}
    for key, attr in _KEYS:
        a, b = getattr(first, attr), getattr(second, attr)
        a_set = key in first.explicit or a != getattr(FilterState(), attr)
        b_set = key in second.explicit or b != getattr(FilterState(), attr)
        if key in _LIST_KEYS:
            if key == "dependencyFolders" and not (a_set and b_set):
                values[attr] = a if a_set else b
            else:
                values[attr] = tuple(sorted(set(a) | set(b)))
        elif key == "hideElapsedTimeUnder":
            present = [v for v in (a, b) if v is not None]
            values[attr] = min(present) if present else None
        elif key == "contextDepth":
            values[attr] = max(a, b)
        else:
            values[attr] = a if a_set or not b_set else b
    explicit = frozenset(first.explicit | second.explicit)
    return FilterState(**values, explicit=explicit, unknown=first.unknown + second.unknown)


def with_hidden_names(state: FilterState, names: Iterable[str]) -> FilterState:
    """`state` with more hideName patterns (sorted, unique)."""
    return replace(state, hide_name=tuple(sorted(set(state.hide_name) | set(names))))


def describe(state: FilterState) -> str:
    """One line naming what a filter does, for messages."""
    parts = [f"{k}={v}" for k, v in to_json(state).items()]
    return ", ".join(parts) if parts else "default filter"
