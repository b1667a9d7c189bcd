"""Whether a call is an event of the code object `inspect` looks for (spec `inspect`).

An event matches when it is: a call to the function; a call to a function of the class (or of
a class nested in it); a call to a function in the package or a package below it; a SQL query;
a SQL query naming the table (`tracetool.sql.analyze(...).tables`, case-insensitive, schema
optional); a SQL query whose `tracetool.sql.normalize` equals that of the identifier; an HTTP
server request of the same route (`tracetool.route_model`: method and `shape`, so
`GET /book/:id` finds `/book/<int:pk>`). `Matcher.might_match` is a cheap byte test that skips
files which cannot match; `Matcher.screen` a cheap test of the call events that skips naming
(and searching the call trees of) calls which cannot match.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracetool import accel
from tracetool.inspect.refs import CodeObjectRef
from tracetool.trace.codeobjects import CodeObject, function_call_key
from tracetool.trace.tree import CallNode

if TYPE_CHECKING:
    from tracetool.inspect.context import CodeObjects


# `screen` of a function in C (`tracetool._speedups`), or None
_SCREEN_CALLS = accel.function("screen_calls")

# the field every call of these types that matches holds
_SCREENED = {
    "database": "sql_query",
    "table": "sql_query",
    "query": "sql_query",
    "route": "http_server_request",
    "http": "http_server_request",
}


def _numeric(text: str) -> bool:
    """Whether a name's last part may be a number's: a number-valued `method_id` is named as the
    value read (`1.2345678901234568e+29` for a 30-digit integer: `tracetool.trace.checks.
    orjson_ints`), which the text need not spell that way."""
    try:
        float(text)
    except ValueError:
        return False
    return True


class Matcher:
    def __init__(self, ref: CodeObjectRef) -> None:
        from tracetool.identifiers import loose

        self.ref = ref
        self.ident = ref.identifier
        self.key = loose(self.ident)  # forgiving spelling: `a.b.C.m` is `a/b/C#m`
        self._seen: dict[str, bool] = {}  # function fqid -> whether it matches
        # the last name component a matching function's name holds (`screen`)
        self.last = self.key.rpartition(".")[2]
        if ref.type == "query":
            from tracetool import sql

            self.query = sql.normalize(self.ident).casefold()
        if ref.type == "route":
            from tracetool import route_model

            method, template = route_model.parse_route(self.ident)
            self.route = (method, route_model.shape(template))

    def might_match(self, raw: bytes) -> bool:
        """A cheap test on the file bytes, to skip recordings that cannot match."""
        t = self.ref.type
        if t in ("database", "table", "query"):
            return b'"sql_query"' in raw
        if t in ("route", "http"):
            return b'"http_server_request"' in raw
        if t in ("external-service", "external-route"):
            return b'"http_client_request"' in raw
        last = self.ident.replace("#", "/").replace(".", "/").replace("::", "/").split("/")[-1]
        return last.encode() in raw or _numeric(last)

    def screen(self, events: list[dict[str, Any]]) -> list[int] | None:
        """The positions of the call events among `events` that may match (a superset of those
        that do, in order), or None when any call may (class and package: their match depends on the
        classMap's nesting, not on the call's fields).

        A function's id ends with its name, and the name comes from the call: its `method_id`
        (by location, or a dynamic object), or the end of `defined_class` + separator +
        `method_id` (by fqid). So a call whose code object's loose id equals the identifier's
        holds its last component in `method_id` or, when `method_id` has no name part at all
        (`loose` empties it; a missing one reads as ""), may hold it anywhere: kept."""
        t = self.ref.type
        key = _SCREENED.get(t)
        if key is not None:  # (its calls only: `matches` asks for this field first)
            return [i for i, e in enumerate(events) if key in e and e.get("event") == "call"]
        if t != "function":
            return None
        from tracetool.identifiers import loose

        last = self.last
        if _SCREEN_CALLS is not None:  # (the same, in C)
            found = _SCREEN_CALLS(events, last, loose)
            if found is not None:
                return found  # type: ignore[no-any-return]
        return [
            i
            for i, e in enumerate(events)
            if e.get("event") == "call"
            and (last in (name := str(e.get("method_id", ""))) or not loose(name))
        ]

    def _code_match(self, co: CodeObject) -> bool:
        """Whether a function code object is the function, or in the class or package."""
        if self.ref.type != "function":  # depends on the ancestors' types, not only the fqid
            return self._code_match_uncached(co)
        found = self._seen.get(co.fqid)
        if found is None:
            found = self._seen[co.fqid] = self._code_match_uncached(co)
        return found

    def _code_match_uncached(self, co: CodeObject) -> bool:
        from tracetool.identifiers import loose

        t, key = self.ref.type, self.key
        if t == "function":
            return co.id == self.ident or loose(co.id) == key
        if t == "class":
            return any(a.type == "class" and loose(a.id) == key for a in co.ancestors())
        # a package, or a package below it; a module function's module reads as a package too
        below = key + "."
        return any(
            a.type in ("package", "class") and (loose(a.id) == key or loose(a.id).startswith(below))
            for a in co.ancestors()
        )

    def matches(self, node: CallNode, cos: CodeObjects) -> bool:
        return self.matches_call(node.call, cos, node)

    def matches_call(
        self, call: dict[str, Any], cos: CodeObjects, node: CallNode | None = None
    ) -> bool:
        """Whether this call event matches (`node`: its node, which then holds its name)."""
        t = self.ref.type
        if t in ("function", "class", "package"):
            # SQL and HTTP calls are queries and routes, never functions: not even named
            if (
                "http_server_request" in call
                or "http_client_request" in call
                or "sql_query" in call
            ):
                return False
            # equal keys name one code object (`CodeObjects`): decided once per key
            key = function_call_key(call)
            try:
                found = cos.matched_keys.get(key)
            except TypeError:  # a field of an unhashable type (a malformed recording)
                found, key = None, ()
            if found is None:
                co = cos[node] if node is not None else cos.of_call(call)
                if co.type != "function":
                    found = False
                else:
                    found = cos.matched.get(id(co))  # (without building its fqid again)
                    if found is None:
                        found = cos.matched[id(co)] = self._code_match(co)
                if key:
                    cos.matched_keys[key] = found
            return found
        if t in ("database", "table", "query"):
            if "sql_query" not in call:
                return False
            if t == "database":
                return True
            normalized, tables = cos.sql.info(call)
            if t == "query":
                return normalized.casefold() == self.query
            want = self.ident.lower()
            return any(tb == want or tb.endswith("." + want) for tb in tables)
        if t == "route":
            if "http_server_request" not in call:
                return False
            from tracetool import route_model

            method, template = route_model.server_route(call)
            return (method, route_model.shape(template)) == self.route
        if t == "http":
            return "http_server_request" in call
        co = cos[node] if node is not None else cos.of_call(call)
        return co.type == t and (co.id == self.ident or co.fqid == self.ref.text)
