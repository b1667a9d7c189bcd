"""AppMap-compatible canonical forms ("fingerprints") of one recording.

These are the values AppMap's `index` writes as `canonical.<algorithm>.json` (reference/appmap.md
§3.1), computed here in the indexer's single pass over the call tree and stored in the sidecar.
Each algorithm maps call events to values (a value, a list of values, or nothing); the result is
the values flattened, made unique and sorted by their compact JSON text, as AppMap does.

Input events are those inside HTTP server requests when the recording has any, else all.
Code-object rules, checked against AppMap's golden index files in the shared corpus:

- `classes` / `packages`: the nearest class / package of each function call;
- `classDependencies` / `packageDependencies`: `{caller, callee}` for a call whose parent's
  "class" / "package" differs from its own, where the class of a code object is the child of its
  root in the code-object tree (so a route or a query is its own class) and the package is the
  root itself (`HTTP server requests`, `Database`, a top-level package);
- `httpServerRequests` / `httpClientRequests`: `{route, parameters: "(a,b)", status}` with the
  sorted names of the request's `message` parameters;
- `labels` of function calls; `sqlNormalized` (literals as `?`) and `sqlTables` of SQL calls;
- `exceptions`: `{class, message, stack, location}` where the stack is the exception's
  `path:lineno` followed by the locations of the raising function and its callers;
- `parameters`: names of function parameters and of request message fields (nested too).

`bound_class_map` is AppMap's `classMap.json`: the classMap limited to code objects that have
events, dynamic ones (http/route, database/query, external-service/route) included.

Known difference: query code objects are named by their normalized SQL (DESIGN.md §3), AppMap
names them by the raw text. SQL normalization is `tracetool.sql`'s (sqlglot tokens), which keeps `IS NULL`
where AppMap's regexes write `IS ?`.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson

from tracetool import accel
from tracetool.trace.codeobjects import ClassMap, CodeObject
from tracetool.trace.tree import CallNode

ALGORITHMS = (
    "classDependencies",
    "classes",
    "exceptions",
    "httpClientRequests",
    "httpServerRequests",
    "labels",
    "packageDependencies",
    "packages",
    "parameters",
    "sqlNormalized",
    "sqlTables",
)


_NAME = itertools.repeat("name")
_STR_ONLY = frozenset((str,))


def _class_of(co: CodeObject) -> CodeObject | None:
    """The child of the root on the path from `co` up (AppMap's `ancestors[length - 2]`)."""
    child, node = None, co
    while node.parent is not None:
        child, node = node, node.parent
    return child


def _package_of(co: CodeObject) -> CodeObject:
    node = co
    while node.parent is not None:
        node = node.parent
    return node


def _names(params: Any, out: list[str]) -> None:
    """Names of parameter objects and, iteratively, of their nested properties."""
    stack = [params]
    while stack:
        items = stack.pop()
        if not isinstance(items, list):
            continue
        for item in items:
            if isinstance(item, dict):
                name = item.get("name")
                if name is not None:
                    out.append(str(name))
                props = item.get("properties")
                if props:
                    stack.append(props)


def _depend(
    values: list[dict[str, Any]], seen: set[tuple[Any, Any]], caller: Any, callee: Any
) -> None:
    """`{caller, callee}` appended to `values` unless `seen` has the pair (then added): made
    distinct here, not serialized once per code-object pair by `result`. Only string ids are
    paired (equal pairs, equal JSON; `1 == True`, but their JSON differs)."""
    if caller.__class__ is str and callee.__class__ is str:
        pair = (caller, callee)
        if pair in seen:
            return
        seen.add(pair)
    values.append({"caller": caller, "callee": callee})


def _request(route: str, message: Any, status: int | None) -> dict[str, Any]:
    names = sorted(str(m.get("name")) for m in message or () if isinstance(m, dict))
    return {"route": route, "parameters": f"({','.join(names)})", "status": status}


class Canonical:
    """Collects the canonical values while the indexer walks the call tree."""

    def __init__(self) -> None:
        self.values: dict[str, list[Any]] = {name: [] for name in ALGORITHMS}
        # Results depend only on the code objects involved: do each once (a recording repeats
        # the same calls thousands of times).
        self.functions: set[int] = set()  # id(code object) of the functions seen
        # id(code object) -> (id of its "class", id of its "package"), for `dependency`
        self._sides: dict[int, tuple[str | None, str]] = {}
        self.pairs: set[tuple[int, int]] = set()
        self._params: set[tuple[Any, ...]] = set()
        # id(code object) -> the parameter names of its last call with parameters, a pair in
        # `_params` (the C walk compares a call's names with them before building its pair)
        self._last_params: dict[int, tuple[Any, ...]] = {}
        self._sql: set[tuple[str, tuple[str, ...]]] = set()
        # the (caller, callee) pairs of the class and package dependencies appended: many
        # code-object pairs make one dependency (`result` would keep it once anyway)
        self._class_deps: set[tuple[Any, Any]] = set()
        self._package_deps: set[tuple[Any, Any]] = set()

    def function(self, node: CallNode, co: CodeObject) -> None:
        v = self.values
        params = node.call.get("parameters")
        if params:
            # Same function, same parameter names: the nested names are the same too.
            try:  # a list of objects (the format), names read without a Python-level step
                names = tuple(map(dict.get, params, _NAME))
            except TypeError:  # not a list of objects: skip what is not one
                names = tuple([p.get("name") for p in params if isinstance(p, dict)])
            key = (id(co), names)
            if key not in self._params:
                self._params.add(key)
                _names(params, v["parameters"])
        if id(co) in self.functions:
            return
        self.functions.add(id(co))
        cls = co.class_
        if cls is not None:
            v["classes"].append(cls.id)
        pkg = co.package
        if pkg is not None:
            v["packages"].append(pkg.id)
        if co.labels:
            v["labels"].extend(co.labels)

    def dependency(self, co: CodeObject, parent_co: CodeObject | None) -> None:
        if parent_co is None:
            return
        pair = (id(co), id(parent_co))
        if pair in self.pairs:
            return
        self.pairs.add(pair)
        sides = self._sides  # (the sides met before read inline: most are)
        mine, mine_p = sides.get(pair[0]) or self._side(co)
        theirs, theirs_p = sides.get(pair[1]) or self._side(parent_co)
        if mine is not None and theirs is not None and mine != theirs:
            _depend(self.values["classDependencies"], self._class_deps, theirs, mine)
        if mine_p != theirs_p:
            _depend(self.values["packageDependencies"], self._package_deps, theirs_p, mine_p)

    def _side(self, co: CodeObject) -> tuple[str | None, str]:
        """The ids of `co`'s "class" and "package" (`_class_of`, `_package_of`), once each."""
        side = self._sides.get(id(co))
        if side is None:
            cls = _class_of(co)
            side = self._sides[id(co)] = (
                None if cls is None else cls.id,
                _package_of(co).id,
            )
        return side

    def http_server(self, node: CallNode, route: str, status: int | None) -> None:
        message = node.call.get("message")
        self.values["httpServerRequests"].append(_request(route, message, status))
        _names(message, self.values["parameters"])

    def http_client(self, node: CallNode, route: str, status: int | None) -> None:
        self.values["httpClientRequests"].append(_request(route, node.call.get("message"), status))

    def sql(self, normalized: str, tables: tuple[str, ...]) -> None:
        # A repeated query adds nothing (`result` keeps each value once): skip it here, before
        # `result` serializes every value.
        key = (normalized, tables)
        if key in self._sql:
            return
        self._sql.add(key)
        self.values["sqlNormalized"].append(normalized)
        self.values["sqlTables"].extend(tables)

    def exceptions(self, node: CallNode, codes: dict[int, CodeObject]) -> None:
        ret = node.ret or {}
        for exc in ret.get("exceptions") or ():
            if not isinstance(exc, dict):
                continue
            item: dict[str, Any] = {
                "class": exc.get("class"),
                "message": exc.get("message"),
                "stack": [],
            }
            path, lineno = exc.get("path"), exc.get("lineno")
            if path:
                item["location"] = ":".join(str(p) for p in (path, lineno) if p)
                item["stack"].append(item["location"])
            ancestor: CallNode | None = node
            while ancestor is not None:
                co = codes.get(id(ancestor))
                if co is not None and co.location:
                    item["stack"].append(co.location)
                ancestor = ancestor.parent
            self.values["exceptions"].append(item)

    def result(self) -> dict[str, list[Any]]:
        """Each algorithm's values, unique and sorted by compact JSON text."""
        out: dict[str, list[Any]] = {}
        for name in ALGORITHMS:
            values = self.values[name]
            if _STR_ONLY.issuperset(map(type, values)):
                # equal strings, equal JSON texts: made unique first, each serialized once
                out[name] = sorted(set(values), key=orjson.dumps)
                continue
            seen: dict[bytes, Any] = {}
            for value in values:
                seen.setdefault(orjson.dumps(value), value)
            out[name] = [seen[key] for key in sorted(seen)]
        return out


def bound_class_map(cmap: ClassMap, used: dict[int, CodeObject]) -> list[dict[str, Any]]:
    """The classMap limited to code objects with events and their ancestors (AppMap's binding).

    Made in C where the accelerator is built (`tracetool._speedups.bound_class_map`, the same
    dicts; `python_bound_class_map` stays its reference)."""
    if _BOUND_CLASS_MAP is not None:
        return _BOUND_CLASS_MAP(cmap.roots, used, CodeObject)  # type: ignore[no-any-return]
    return python_bound_class_map(cmap, used)


_BOUND_CLASS_MAP = accel.function("bound_class_map")


def python_bound_class_map(cmap: ClassMap, used: dict[int, CodeObject]) -> list[dict[str, Any]]:
    """`bound_class_map` without the accelerator."""
    # (code objects hash by identity: the set holds them, not their ids)
    keep: set[CodeObject] = set()
    add = keep.add
    for co in used.values():
        node: CodeObject | None = co
        while node is not None and node not in keep:
            add(node)
            node = node.parent
    roots: list[dict[str, Any]] = []
    stack: list[tuple[CodeObject, list[dict[str, Any]]]] = [
        (root, roots) for root in reversed(cmap.roots) if root in keep
    ]
    pop, push = stack.pop, stack.append
    while stack:
        obj, siblings = pop()
        out: dict[str, Any] = {"name": obj.name, "type": obj.type}
        if obj.type == "function":
            if obj.location:
                out["location"] = obj.location
            out["static"] = obj.static
        if obj.labels:
            out["labels"] = list(obj.labels)
        if obj.extra:
            out.update(obj.extra)
        siblings.append(out)
        if obj.children:
            kids = [c for c in obj.children if c in keep]
            if kids:
                children: list[dict[str, Any]] = []
                out["children"] = children
                for c in reversed(kids):
                    push((c, children))
    return roots
