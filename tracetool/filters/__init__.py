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
- `bind(doc, sql_names=)` → `Bound`: the call tree with each call's code object, shared by
  filters, prune, diagrams and the indexer; `without_sql_names(bound)` is a bound tree as
  `bind(doc, sql_names=False)` makes it (every SQL call one unnamed query object).

Differences from AppMap, on purpose: hideTree hides the descendants and keeps the matching call
(as AppMap documents; its code drops both), `*` prefixes are literal (AppMap builds an unescaped
regex), a media response is hidden whatever the request method, and unknown keys are reported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tracetool.filters.apply import (
    Bound,
    apply_filter,
    bind,
    code_object_matches,
    filter_nodes,
    has_patterns,
    is_local_path,
    matching_code_objects,
    prune_class_map,
    rebuild,
    without_sql_names,
)

if TYPE_CHECKING:
    from tracetool.filters.state import (
        DEFAULT_CONTEXT_DEPTH,
        DEFAULT_DEPENDENCY_FOLDERS,
        ROOT_EVENT_LABELS,
        FilterState,
        decode,
        describe,
        encode,
        merge,
        to_json,
        with_hidden_names,
    )

# Names of tracetool.filters.state, imported on first use: binding a recording (the indexer)
# needs none of them.
_STATE_NAMES = frozenset(
    (
        "DEFAULT_CONTEXT_DEPTH",
        "DEFAULT_DEPENDENCY_FOLDERS",
        "ROOT_EVENT_LABELS",
        "FilterState",
        "decode",
        "describe",
        "encode",
        "merge",
        "to_json",
        "with_hidden_names",
    )
)

__all__ = [
    "DEFAULT_CONTEXT_DEPTH",
    "DEFAULT_DEPENDENCY_FOLDERS",
    "ROOT_EVENT_LABELS",
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
    "without_sql_names",
]


def __getattr__(name: str) -> Any:
    if name not in _STATE_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("tracetool.filters.state"), name)
    globals()[name] = value
    return value
