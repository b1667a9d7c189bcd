"""Code objects: the classMap as a tree, their ids, and which code object an event belongs to.

Ids follow AppMap (reference/appmap.md §1.7) so fqids mean the same in both tools:
a child's id is its parent's id joined by `/` (parent package), `::` (parent class), `.` (static
function) or `#` (instance function); children of `http`, `database` and `external-service`
objects use their own name. `fqid = "<type>:<id>"`:
`package:app/models`, `class:app/models/User`, `function:app/models/User#save`,
`route:GET /users/{id}`, `query:<normalized SQL>`, `database:Database`, `http:HTTP server requests`.

Events without a matching classMap function get dynamic objects, created on demand:
HTTP server → `http` → `route`; HTTP client → `external-service` (host) → `external-route`;
SQL → `database` → `query` (named by its normalized SQL); an unknown function → `class`
(defined_class with `.` → `/`) → `function`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

from tracetool.trace import events as ev
from tracetool.trace.events import Event

HTTP_ROOT = "HTTP server requests"
DATABASE_ROOT = "Database"
_NAMELESS_PARENTS = {"http", "database", "external-service"}
# classMap fields kept as they are (`CodeObject.extra`)
_EXTRA_KEYS = ("comment", "source", "sql", "database_type")


class CodeObject:
    __slots__ = (
        "_fqid",
        "_id",
        "children",
        "extra",
        "labels",
        "location",
        "name",
        "parent",
        "static",
        "type",
    )

    def __init__(
        self,
        type: str,
        name: str,
        parent: CodeObject | None = None,
        *,
        location: str | None = None,
        static: bool = False,
        labels: Iterable[str] = (),
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.type = type
        self.name = name
        self.parent = parent
        self.children: list[CodeObject] = []
        self.location = location
        self.static = static
        self.labels = sorted(set(labels)) if labels else []
        self.extra = extra or {}
        self._id: str | None = None
        self._fqid: str | None = None

    @property
    def id(self) -> str:
        if self._id is None:
            parent = self.parent
            if parent is None or parent.type in _NAMELESS_PARENTS:
                self._id = self.name
            else:
                if self.type == "function":
                    sep = "." if self.static else "#"
                elif parent.type == "package":
                    sep = "/"
                elif parent.type == "class":
                    sep = "::"
                else:
                    sep = "/"
                self._id = f"{parent.id}{sep}{self.name}"
        return self._id

    @property
    def fqid(self) -> str:
        # Cached like `id` (a recording asks it of the same objects thousands of times); type,
        # name and parent never change once an object is made.
        fqid = self._fqid
        if fqid is None:
            fqid = self._fqid = f"{self.type}:{self.id}"
        return fqid

    def ancestors(self) -> Iterator[CodeObject]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def nearest(self, type: str) -> CodeObject | None:
        """This object or its nearest ancestor of the given type."""
        node: CodeObject | None = self
        while node is not None:
            if node.type == type:
                return node
            node = node.parent
        return None

    @property
    def package(self) -> CodeObject | None:
        return self.nearest("package")

    @property
    def class_(self) -> CodeObject | None:
        return self.nearest("class")

    def descendants(self) -> Iterator[CodeObject]:
        stack = list(reversed(self.children))
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def to_json(self) -> dict[str, Any]:
        """This object and its subtree in classMap JSON form (iteratively)."""
        root: dict[str, Any] = {}
        stack: list[tuple[CodeObject, dict[str, Any]]] = [(self, root)]
        while stack:
            obj, out = stack.pop()
            out["name"] = obj.name
            out["type"] = obj.type
            if obj.type == "function":
                if obj.location:
                    out["location"] = obj.location
                out["static"] = obj.static
            if obj.labels:
                out["labels"] = list(obj.labels)
            out.update(obj.extra)
            if obj.children:
                kids: list[dict[str, Any]] = [{} for _ in obj.children]
                out["children"] = kids
                stack.extend(zip(obj.children, kids))
        return root

    def __repr__(self) -> str:
        return f"CodeObject({self.fqid!r})"


class ClassMap:
    """The code-object forest of one recording, with lookups by fqid and by source location."""

    def __init__(self) -> None:
        self.roots: list[CodeObject] = []
        self.by_location: dict[str, list[CodeObject]] = {}
        self._children: dict[tuple[int, str, str], CodeObject] = {}  # in creation order
        # fqid -> the first object created with it; None until first asked for (`by_fqid`)
        self._by_fqid: dict[str, CodeObject] | None = {}

    @property
    def by_fqid(self) -> dict[str, CodeObject]:
        """fqid -> the first object created with it. `from_json` leaves it to be built when
        first asked for: many readers look objects up by location alone, and an object's fqid
        costs more than the object."""
        found = self._by_fqid
        if found is None:
            found = self._by_fqid = {}
            for obj in self._children.values():
                found.setdefault(obj.fqid, obj)
        return found

    @classmethod
    def from_json(cls, data: Any, fill: Any = None) -> ClassMap:
        """The code objects of a document's `classMap` (nothing unless it is a list). `fill`:
        the same walk in C (`tracetool.accel.class_map` passes it; the agent never does),
        which this walk stays the reference of."""
        cmap = cls()
        if not isinstance(data, list):
            return cmap
        cmap._by_fqid = None  # built when first asked for
        if fill is not None and data.__class__ is list:
            fill(cmap.roots, cmap.by_location, cmap._children, data, CodeObject, _EXTRA_KEYS)
            return cmap
        stack: list[tuple[Any, CodeObject | None]] = [(item, None) for item in reversed(data)]
        pop, extend, child = stack.pop, stack.extend, cmap.child
        while stack:
            item, parent = pop()
            if not isinstance(item, dict):
                continue
            get = item.get
            obj = child(
                parent,
                str(get("type") or "package"),
                str(get("name", "")),
                location=get("location"),
                static=bool(get("static", False)),
                labels=_labels(get("labels")),
            )
            for extra in _EXTRA_KEYS:
                if extra in item:
                    obj.extra[extra] = item[extra]
            children = get("children")
            if isinstance(children, list):
                extend([(c, obj) for c in reversed(children)])
        return cmap

    def child(
        self,
        parent: CodeObject | None,
        type: str,
        name: str,
        *,
        location: str | None = None,
        static: bool = False,
        labels: Iterable[str] = (),
    ) -> CodeObject:
        """Get or create the child of `parent` (None = root) with this type and name."""
        key = (id(parent), type, name if type != "function" else f"{name}\0{static}\0{location}")
        existing = self._children.get(key)
        if existing is not None:
            if labels:
                existing.labels = sorted(set(existing.labels) | set(labels))
            return existing
        obj = CodeObject(type, name, parent, location=location, static=static, labels=labels)
        self._children[key] = obj
        (parent.children if parent is not None else self.roots).append(obj)
        if self._by_fqid is not None:
            self._by_fqid.setdefault(obj.fqid, obj)
        if type == "function" and location:
            self.by_location.setdefault(str(location), []).append(obj)
        return obj

    def objects(self) -> Iterable[CodeObject]:
        """Every code object, in creation order (cheaper than iterating the tree)."""
        return self._children.values()

    def __iter__(self) -> Iterator[CodeObject]:
        stack = list(reversed(self.roots))
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def get(self, fqid: str) -> CodeObject | None:
        return self.by_fqid.get(fqid)

    def to_json(self) -> list[dict[str, Any]]:
        return [root.to_json() for root in self.roots]

    def code_object_for(self, call: Event) -> CodeObject:
        """The code object a call event belongs to, creating a dynamic one when needed."""
        kind = ev.kind(call)
        if kind == ev.FUNCTION:
            return self._function_for(call)
        if kind == ev.HTTP_SERVER:
            from tracetool import route_model

            # the one route model: `GET /book/{pk}`, as index, query, openapi name it
            return self.route(route_model.route_id(*route_model.server_route(call)))
        if kind == ev.HTTP_CLIENT:
            url = str(ev.part(call, "http_client_request").get("url") or "")
            return self.external_route(service_host(url), ev.route(call))
        if kind == ev.SQL:
            return self.query(query_name(call))
        name = str(call.get("method_id") or call.get("defined_class") or "event")
        return self.child(None, "function", name)

    def route(self, route_id: str) -> CodeObject:
        """The `route` code object of HTTP server requests whose route is `route_id`."""
        return self.child(self.child(None, "http", HTTP_ROOT), "route", route_id)

    def external_route(self, host: str, route: str) -> CodeObject:
        """The `external-route` code object of HTTP client requests to `route` (`ev.route`) of
        the service `host` (`service_host`)."""
        return self.child(self.child(None, "external-service", host), "external-route", route)

    def query(self, normalized: str) -> CodeObject:
        """The `query` code object of a SQL call whose normalized SQL is `normalized`."""
        database = self.child(None, "database", DATABASE_ROOT)
        return self.child(database, "query", normalized)

    def _function_for(self, call: Event) -> CodeObject:
        method_id = str(call.get("method_id", ""))
        path, lineno = call.get("path"), call.get("lineno")
        if path is not None:
            # Agents write `location` as "path:line", or as the bare path when there is no line
            # (Ruby C functions: "JSON::Ext::Generator::State#generate").
            key = f"{path}:{lineno}" if lineno is not None else str(path)
            for candidate in self.by_location.get(key, ()):
                if candidate.name == method_id:
                    return candidate
        static = bool(call.get("static", False))
        class_name = str(call.get("defined_class", "")).replace(".", "/")
        sep = "." if static else "#"
        found = self.by_fqid.get(f"function:{class_name}{sep}{method_id}")
        if found is not None:
            return found
        cls = self.child(None, "class", class_name)
        location = f"{path}:{lineno}" if path is not None and lineno is not None else None
        return self.child(cls, "function", method_id, static=static, location=location)


def service_host(url: str) -> str:
    """The name of the `external-service` an HTTP client request to `url` goes to: scheme and
    host[:port] (credentials are data, not schema), or the url when it has no host."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return f"{parts.scheme}://{netloc}" if netloc else url


def function_call_key(call: Event) -> tuple[Any, ...]:
    """The fields `ClassMap.code_object_for` names a function call by: calls with equal keys
    belong to one code object, so a caller may decide something once per key (the key may
    hold unhashable values in a malformed recording: callers catch the TypeError)."""
    get = call.get
    return (get("defined_class"), get("method_id"), get("path"), get("lineno"), get("static"))


def query_name(call: Event) -> str:
    """The name of a SQL call's `query` code object: its parameterized SQL."""
    from tracetool import sql as sql_module

    return sql_module.normalize(ev.sql_text(call), ev.database_type(call))


def _labels(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str):
        return [value]
    return []


def bind_events(cmap: ClassMap, calls: Iterable[Event]) -> dict[Any, CodeObject]:
    """Resolve the code object of every call event; returns call id -> code object."""
    return {call.get("id"): cmap.code_object_for(call) for call in calls}
