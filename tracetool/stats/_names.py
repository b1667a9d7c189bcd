"""Code-object names (fqids) for the calls of many recordings, without a ClassMap per file.

`ClassMap.code_object_for(call)` is the rule: a function call is the classMap function at its
`path:lineno` with its `method_id` as name (the first such in classMap order), else a dynamic
object. Building a full `ClassMap` for every recording costs more than the rest of `stats`, and
the same functions recur across a project's recordings. So `Names` reads each classMap as plain
JSON into `location -> [(name, ancestry)]` (ancestry = the (type, name) chain from the root, the
only thing an fqid depends on) and turns an ancestry into its fqid once, with the real
`ClassMap.child` in one long-lived scratch map, so the id rules stay in `codeobjects`.

Non-function calls (routes, queries, external services) do not depend on the classMap and are
named in the scratch map; function calls that match no classMap location by a full
`ClassMap.code_object_for` of that recording (built only when such a call occurs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import msgspec

from tracetool.trace import events as ev
from tracetool.trace.codeobjects import ClassMap

Chain = tuple[tuple[Any, ...], ...]
UNSET: Any = msgspec.UNSET


class Names:
    """fqids of calls; one instance per worker, `recording()` per file."""

    def __init__(self) -> None:
        self._scratch = ClassMap()
        self._fqids: dict[Chain, str] = {}
        # the fqid of each classMap chain the C accelerator met, by its bytes (tracetool.stats.
        # _scan), and what names a chain there
        self.chain_names: tuple[dict[bytes, str], Callable[[Chain], str]] = ({}, self._chain_fqid)

    def _chain_fqid(self, chain: Chain) -> str:
        return self.fqid_of_chain(chain)[0]

    def recording(self, class_map: Any) -> RecordingNames:
        """The names of one recording's calls; `class_map` may be a function that returns it,
        called only when it is read."""
        return RecordingNames(self, class_map)

    def event_function(self, call: Any) -> Optional[str]:
        """The fqid of a call (an `EventHead`) named from the event alone (an HTTP call), else
        None: as `RecordingNames.function` names it."""
        if "http_server_request" in call or "http_client_request" in call:
            kind = ev.kind(call)
            if kind in (ev.HTTP_SERVER, ev.HTTP_CLIENT):
                return self._scratch.code_object_for(call.to_dict()).fqid
        return None

    def fqid_of_chain(self, chain: Chain) -> tuple[str, Optional[str]]:
        """(fqid, location) of the function at the end of an ancestry chain."""
        fqid = self._fqids.get(chain)
        if fqid is None:
            parent = None
            for kind, name in chain[:-1]:
                parent = self._scratch.child(parent, kind, name)
            _, name, static, location = chain[-1]
            obj = self._scratch.child(parent, "function", name, location=location, static=static)
            fqid = self._fqids[chain] = obj.fqid
        return fqid, chain[-1][3]


class RecordingNames:
    """Names for the calls of one recording."""

    def __init__(self, names: Names, class_map: Any) -> None:
        self._names = names
        self._class_map = class_map
        self._index: Optional[dict[str, list[tuple[str, Optional[Chain]]]]] = None
        self._full: Optional[ClassMap] = None

    def _locations(self) -> dict[str, list[tuple[str, Optional[Chain]]]]:
        # same traversal order and coercions as ClassMap.from_json; a function nested in a
        # function (not in the format, but readable) has no plain chain: None sends it to the
        # full ClassMap
        index: dict[str, list[tuple[str, Optional[Chain]]]] = {}
        data = self._data()
        data = data if isinstance(data, list) else []
        # (item, chain of its ancestors, whether that chain holds no function)
        stack: list[tuple[Any, Chain, bool]] = [(item, (), True) for item in reversed(data)]
        pop, push = stack.pop, stack.extend
        while stack:
            item, chain, plain = pop()
            if item.__class__ is not dict:
                continue
            get = item.get
            kind = str(get("type") or "package")
            name = str(get("name", ""))
            if kind == "function":
                location = get("location")
                link: Chain = (*chain, (kind, name, bool(get("static", False)), location))
                if location:
                    index.setdefault(str(location), []).append((name, link if plain else None))
                children = get("children")
                if children and children.__class__ is list:
                    push((child, link, False) for child in reversed(children))
                continue
            children = get("children")
            if children and children.__class__ is list:
                link = (*chain, (kind, name))
                push((child, link, plain) for child in reversed(children))
        return index

    def plain_function(
        self,
        method_id: Any,
        path: Any,
        lineno: Any,
        call: Any,
        head_of: Optional[Callable[[Any], Any]] = None,
    ) -> tuple[str, Optional[str]]:
        """`function(call)` of a function call given its `method_id` (present), `path` and
        `lineno` (None or UNSET when missing): the classMap lookup without reading it again.
        `head_of(call)` is the call itself when read (by default `call` is)."""
        if path is not None and path is not UNSET and lineno is not None and lineno is not UNSET:
            if self._index is None:
                self._index = self._locations()
            entries = self._index.get(f"{path}:{lineno}")
            if entries:
                method_id = str(method_id)
                for name, chain in entries:
                    if name == method_id:
                        if chain is None:
                            break
                        return self._names.fqid_of_chain(chain)
        return self._full_function(call if head_of is None else head_of(call))

    def function(self, call: Any) -> tuple[str, Optional[str]]:
        """(fqid, location) of a call's code object (a call event, or its `EventHead`)."""
        if ev.kind(call) != ev.FUNCTION:
            # routes, queries, external services: named from the event alone
            obj = self._names._scratch.code_object_for(call)
            return obj.fqid, obj.location
        if "method_id" in call:
            return self.plain_function(
                call.get("method_id"), call.get("path"), call.get("lineno"), call
            )
        return self._full_function(call)

    def _data(self) -> Any:
        if callable(self._class_map):
            self._class_map = self._class_map()
        return self._class_map

    def _full_function(self, call: Any) -> tuple[str, Optional[str]]:
        if self._full is None:
            self._full = ClassMap.from_json(self._data())
        obj = self._full.code_object_for(call)
        return obj.fqid, obj.location

    def close(self) -> None:
        """Free the per-recording ClassMap at once (its parent/child links are cycles)."""
        if self._full is not None:
            for obj in self._full:
                obj.parent = None
            self._full = None
        self._index = None


_PROCESS_NAMES: Optional[Names] = None


def process_names() -> Names:
    """The `Names` of this process: the fqid of a classMap chain or of a request does not
    depend on the recording, so every batch of `stats` and every file `index` sums shares them."""
    global _PROCESS_NAMES
    if _PROCESS_NAMES is None:
        _PROCESS_NAMES = Names()
    return _PROCESS_NAMES
