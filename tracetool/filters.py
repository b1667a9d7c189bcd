"""The filter state: what to hide or keep in a recording (AppMap's FilterState, made explicit).

Contract:

- `FilterState` is the one schema (JSON keys in camelCase, as AppMap and its editors write them):

  | key | type | default | meaning |
  |---|---|---|---|
  | rootObjects | [pattern] | [] | keep only the call subtrees of matching code objects |
  | limitRootEvents | bool | true | keep only subtrees of commands (HTTP server requests, functions labeled cli.command, job.perform, message.handle), unless there are none |
  | hideMediaRequests | bool | true | drop GET requests for media files and responses with media content types (the request only) |
  | hideUnlabeled | bool | false | drop functions that carry no label |
  | hideExternal | bool or [folder] | false | drop functions whose source is outside the project (absolute, `<internal>`, in a dependency folder); a list also sets dependencyFolders. Alias `hideExternalPaths` |
  | dependencyFolders | [folder] | ["vendor", "node_modules"] | folders that hold dependencies |
  | hideElapsedTimeUnder | number (ms) | off | drop calls faster than this (and calls without timing) |
  | hideName | [pattern] | [] | drop matching calls; their children move up. Alias `hideNames` |
  | hideTree | [pattern] | [] | drop everything below matching calls (the calls stay) |
  | context | [pattern] | [] | keep matching calls with `contextDepth` levels below and above them (and the root) |
  | contextDepth | int | 1 | see context |

  A pattern is an fqid (`function:app/models/User#save`), `label:<glob>`, `/regex/` (case
  insensitive, searched in the fqid) or a prefix ending in `*`. A matching code object brings its
  whole code-object subtree (a package matches its classes and functions).
- `decode(value)` accepts a dict, raw JSON text, or base64 / base64url of it with or without
  padding (also percent-encoded). The editors' "copy current recording state" object
  `{"currentView": …, "filters": {…}}` decodes to its `filters`. Keys that are neither filter keys
  nor editor view state are reported in `FilterState.unknown` (callers warn), never silently
  dropped; `false` for a list or number means "off", as AppMap writes it. Bad values raise
  `UsageError`.
- `to_json(state)` emits exactly the non-default keys, so `decode(to_json(s)) == s` (hideTree and
  context included, unlike AppMap); `encode(state)` is base64url without padding of that JSON.
- `merge(first, second)`: lists are unioned and sorted, hideElapsedTimeUnder is the minimum,
  contextDepth the maximum, and each boolean comes from the first state that sets it explicitly.
- `apply_filter(doc, state)` returns a new document (the input is not changed) holding the events
  that survive the steps, in AppMap's order: limitRootEvents, rootObjects, context, hideTree,
  hideMediaRequests, hideUnlabeled, hideExternal, hideElapsedTimeUnder, hideName. Events keep
  their ids and order; a dropped call takes its return with it and its children move up to the
  nearest kept ancestor. The classMap keeps only code objects that still have events.

Differences from AppMap, on purpose: hideTree hides the descendants and keeps the matching call
(as AppMap documents; its code drops both), `*` prefixes are literal (AppMap builds an unescaped
regex), a media response is hidden whatever the request method, and unknown keys are reported.
"""

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
from tracetool.trace.codeobjects import DATABASE_ROOT, ClassMap, CodeObject
from tracetool.trace.document import TraceDocument, gc_paused
from tracetool.trace.tree import CallNode, build_call_tree, iter_preorder

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

_MEDIA_EXTENSIONS = frozenset(
    "aac avi bmp css flv gif htm html ico jpeg jpg js json jsonld mid midi mjs mov mp3 mp4 mpeg "
    "oga ogg ogv ogx opus otf png svg tif tiff ts ttf wav weba webm webp woff woff2 xhtml 3gp "
    "3g2".split()
)
_MEDIA_TYPE = re.compile(
    r"application/javascript|application/ecmascript|audio/.+|font/.+|image/.+|text/javascript"
    r"|text/ecmascript|text/css|video/.+",
    re.IGNORECASE,
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


# ---------------------------------------------------------------- matching code objects


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(p) for p in pattern.split("*")) + "$", re.I)


def code_object_matches(obj: CodeObject, pattern: str) -> bool:
    """Whether one code object matches one pattern (fqid, label:glob, /regex/, prefix*)."""
    if pattern == obj.fqid:
        return True
    if pattern.startswith("label:"):
        rx = _glob(pattern[len("label:") :])
        return any(rx.match(label) for label in obj.labels)
    if len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/"):
        try:
            return re.search(pattern[1:-1], obj.fqid, re.I) is not None
        except re.error:
            raise UsageError(f"filter pattern {pattern}: not a valid regular expression") from None
    if pattern.endswith("*"):
        return obj.fqid.lower().startswith(pattern[:-1].lower())
    return False


def matching_code_objects(
    cmap: ClassMap, patterns: Iterable[str], *, include_self: bool = True
) -> set[int]:
    """ids (`id(obj)`) of code objects matched by a pattern, with their code-object subtrees."""
    patterns = list(patterns)
    matched: set[int] = set()
    if not patterns:
        return matched
    for obj in cmap:
        if id(obj) in matched:
            continue
        if any(code_object_matches(obj, p) for p in patterns):
            if include_self:
                matched.add(id(obj))
            matched.update(id(d) for d in obj.descendants())
    return matched


# ---------------------------------------------------------------- applying


@dataclass
class Bound:
    """A recording's call tree with the code object of every call (shared by filters and prune)."""

    doc: TraceDocument
    events: list[dict[str, Any]]
    nodes: list[CallNode]  # pre-order
    roots: list[CallNode]
    cmap: ClassMap
    static: set[int]  # ids of code objects that came from the document's classMap
    code_objects: dict[int, CodeObject]  # id(node) -> code object


def bind(doc: TraceDocument, *, sql_names: bool = True) -> Bound:
    """Build the call tree (eventUpdates applied, the document untouched) and bind code objects.

    `sql_names=False` skips naming `query:` code objects by their parameterized SQL (the one
    costly part: it tokenizes every distinct statement): all SQL calls then share one unnamed
    query object under `database:Database`. Use it when no pattern can name a query.
    """
    updates = doc.event_updates
    events = doc.events
    with gc_paused():
        if updates:
            events = [
                u if isinstance(u := updates.get(str(e.get("id"))), dict) else e for e in events
            ]
        tree = build_call_tree(events)
        cmap = ClassMap.from_json(doc.class_map)
        static = {id(o) for o in cmap}
        nodes = [n for n, _ in iter_preorder(tree.roots)]
        unnamed = None
        if not sql_names:
            unnamed = cmap.child(cmap.child(None, "database", DATABASE_ROOT), "query", "")
        code_objects: dict[int, CodeObject] = {}
        # Function calls repeat: resolve each (location, name) once.
        functions: dict[tuple[Any, ...], CodeObject] = {}
        for n in nodes:
            call = n.call
            if unnamed is not None and "sql_query" in call:
                code_objects[id(n)] = unnamed
                continue
            method = call.get("method_id")
            if method is not None and "http_server_request" not in call:
                key = (
                    method,
                    call.get("path"),
                    call.get("lineno"),
                    call.get("defined_class"),
                    call.get("static"),
                    "sql_query" in call or "http_client_request" in call,
                )
                co = functions.get(key)
                if co is None:
                    co = functions[key] = cmap.code_object_for(call)
                code_objects[id(n)] = co
                continue
            code_objects[id(n)] = cmap.code_object_for(call)
    return Bound(doc, events, nodes, tree.roots, cmap, static, code_objects)


def has_patterns(state: FilterState) -> bool:
    """Whether `state` names code objects (so SQL query objects need their names)."""
    return bool(state.root_objects or state.context or state.hide_tree or state.hide_name)


def apply_filter(doc: TraceDocument, state: FilterState) -> TraceDocument:
    """A new document with only the events `state` keeps (module doc)."""
    bound = bind(doc, sql_names=has_patterns(state))
    kept = filter_nodes(bound, state)
    return rebuild(bound, kept)


def filter_nodes(bound: Bound, state: FilterState) -> set[int]:
    """ids (`id(node)`) of the call nodes that survive every step of `state`."""
    nodes, cos = bound.nodes, bound.code_objects
    kept = {id(n) for n in nodes}

    if state.limit_root_events:

        def is_command(n: CallNode) -> bool:
            if "http_server_request" in n.call:
                return True
            return bool(ROOT_EVENT_LABELS.intersection(cos[id(n)].labels))

        marked = _subtrees(n for n in nodes if id(n) in kept and is_command(n))
        if marked:
            kept &= marked
    if state.root_objects:
        objs = matching_code_objects(bound.cmap, state.root_objects)
        kept &= _subtrees(n for n in nodes if id(n) in kept and id(cos[id(n)]) in objs)
    if state.context:
        objs = matching_code_objects(bound.cmap, state.context)
        matches = [n for n in nodes if id(n) in kept and id(cos[id(n)]) in objs]
        around = _subtrees(matches, state.context_depth)
        for n in matches:
            for distance, ancestor in enumerate(n.ancestors(), start=1):
                if distance <= state.context_depth or ancestor.parent is None:
                    around.add(id(ancestor))
        kept &= around
    if state.hide_tree:
        objs = matching_code_objects(bound.cmap, state.hide_tree)
        below: set[int] = set()
        for n in nodes:
            if id(n) in kept and id(cos[id(n)]) in objs:
                below.update(id(d) for d in n.descendants())
        kept -= below
    if state.hide_media_requests:
        kept -= {id(n) for n in nodes if id(n) in kept and _is_media_request(n)}
    if state.hide_unlabeled:
        kept -= {
            id(n)
            for n in nodes
            if cos[id(n)].type == "function" and not (cos[id(n)].labels or n.call.get("labels"))
        }
    if state.hide_external:
        folders = set(state.dependency_folders)
        kept -= {
            id(n)
            for n in nodes
            if cos[id(n)].type == "function" and not is_local_path(cos[id(n)].location, folders)
        }
    if state.hide_elapsed_time_under is not None and state.hide_elapsed_time_under > 0:
        limit = state.hide_elapsed_time_under / 1000
        kept -= {id(n) for n in nodes if not (n.elapsed and n.elapsed >= limit)}
    if state.hide_name:
        objs = matching_code_objects(bound.cmap, state.hide_name)
        kept -= {id(n) for n in nodes if id(cos[id(n)]) in objs}
    return kept


def _subtrees(starts: Iterable[CallNode], max_depth: int | None = None) -> set[int]:
    """ids of the given nodes and their descendants (to `max_depth` levels below, if given)."""
    out: set[int] = set()
    for start in starts:
        if id(start) in out and max_depth is None:
            continue
        out.add(id(start))
        stack = [(c, 1) for c in start.children]
        while stack:
            node, depth = stack.pop()
            if max_depth is not None and depth > max_depth:
                continue
            if max_depth is None and id(node) in out:
                continue
            out.add(id(node))
            stack.extend((c, depth + 1) for c in node.children)
    return out


def _is_media_request(n: CallNode) -> bool:
    req = n.call.get("http_server_request")
    if not isinstance(req, dict):
        return False
    method = str(req.get("request_method") or "").upper()
    path = str(req.get("normalized_path_info") or req.get("path_info") or "")
    if method == "GET" and path:
        m = re.match(r".*\.(\S*)$", path)
        if m and m.group(1) in _MEDIA_EXTENSIONS:
            return True
    resp = (n.ret or {}).get("http_server_response")
    if not isinstance(resp, dict):
        return False
    headers = resp.get("headers")
    mime = None
    if isinstance(headers, dict):
        for key, value in headers.items():
            if str(key).lower() == "content-type":
                mime = value
                break
    else:
        mime = resp.get("mime_type")
    return bool(mime) and _MEDIA_TYPE.search(str(mime)) is not None


def is_local_path(location: str | None, dependency_folders: Iterable[str]) -> bool:
    """Whether a function's `path:line` location is project source (not a dependency)."""
    if not location or ":" not in location:
        return False
    path = location.rpartition(":")[0] if location.rpartition(":")[2].isdigit() else location
    if not re.search(r"\.\w+$", path) or path.startswith("<"):
        return False
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:[\\/]", path):
        return False
    parts = set(re.split(r"[\\/]", path))
    return not parts.intersection(dependency_folders)


def rebuild(bound: Bound, kept: set[int]) -> TraceDocument:
    """A new document of the kept nodes' events, in their original order, ids unchanged."""
    keep_events: set[int] = set()
    for n in bound.nodes:
        if id(n) in kept:
            keep_events.add(id(n.call))
            if n.ret is not None:
                keep_events.add(id(n.ret))
    events = [e for e in bound.events if id(e) in keep_events]
    data = {k: v for k, v in bound.doc.data.items() if k not in ("events", "eventUpdates")}
    data["classMap"] = prune_class_map(bound, kept)
    data["events"] = events
    return TraceDocument(data, bound.doc.path, list(bound.doc.warnings))


def prune_class_map(bound: Bound, kept: set[int]) -> list[dict[str, Any]]:
    """The document's classMap reduced to code objects that still have events."""
    used: set[int] = set()
    for n in bound.nodes:
        if id(n) in kept:
            obj: CodeObject | None = bound.code_objects[id(n)]
            while obj is not None and id(obj) not in used:
                used.add(id(obj))
                obj = obj.parent
    roots = [r for r in bound.cmap.roots if id(r) in used and id(r) in bound.static]
    out: list[dict[str, Any]] = []
    stack: list[tuple[CodeObject, list[dict[str, Any]]]] = [(r, out) for r in reversed(roots)]
    while stack:
        obj, into = stack.pop()
        node = _shallow_json(obj)
        into.append(node)
        children = [c for c in obj.children if id(c) in used and id(c) in bound.static]
        if children:
            node["children"] = []
            stack.extend((c, node["children"]) for c in reversed(children))
    return out


def _shallow_json(obj: CodeObject) -> dict[str, Any]:
    node: dict[str, Any] = {"name": obj.name, "type": obj.type}
    if obj.type == "function":
        if obj.location:
            node["location"] = obj.location
        node["static"] = obj.static
    if obj.labels:
        node["labels"] = list(obj.labels)
    node.update(obj.extra)
    return node


def describe(state: FilterState) -> str:
    """One line naming what a filter does, for messages."""
    parts = [f"{k}={v}" for k, v in to_json(state).items()]
    return ", ".join(parts) if parts else "default filter"


__all__ = [
    "DEFAULT_DEPENDENCY_FOLDERS",
    "Bound",
    "FilterState",
    "apply_filter",
    "bind",
    "code_object_matches",
    "decode",
    "describe",
    "encode",
    "filter_nodes",
    "has_patterns",
    "is_local_path",
    "matching_code_objects",
    "merge",
    "prune_class_map",
    "rebuild",
    "to_json",
    "with_hidden_names",
]
