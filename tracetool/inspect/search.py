"""Finding the events of one code object across recordings, with their context (spec `inspect`).

Contract:

- `parse_code_object("type:identifier")` → `CodeObjectRef`. Types and identifiers (spec):
  `function:pkg/path/Class#method` (`.method` for static), `class:pkg/path/Class`,
  `package:pkg/path`, `database:` (any SQL), `table:<name>`, `query:<normalized SQL>`,
  `route:<METHOD> /path/:id`; also `http:` (any server request), `external-service:<url>` and
  `external-route:<METHOD url>` by code-object id.
- An event matches when it is: a call to the function; a call to a function of the class (or of
  a class nested in it); a call to a function in the package or a package below it; a SQL query;
  a SQL query naming the table (`tracetool.sql.analyze(...).tables`, case-insensitive, schema
  optional); a SQL query whose `tracetool.sql.normalize` equals that of the identifier; an HTTP
  server request of the same route (`tracetool.route_model`: method and `shape`, so
  `GET /book/:id` finds `/book/<int:pk>`).
- `find(ref, trace_dir, query_db=None)` reads the recordings below `trace_dir` that can match:
  when query.db exists for `trace_dir` (or `query_db` is given), only those the index says may
  contain the code object, plus any file the index lacks or holds with another size/mtime
  (`tracetool.inspect.indexed`); otherwise every one (a cheap byte test skips files that cannot
  match). The index only chooses files, so results equal a full scan's. It returns `Match`es
  with, per match, the values of the spec's 11 fields (`FIELDS`): event, return value, HTTP server requests (self and ancestors), SQL queries and
  tables (self and descendants), caller, ancestors (HTTP requests and labeled functions),
  descendants (labeled functions), package/class/function trigrams.
- A recording bigger than `tracetool.trace.stream.STREAM_THRESHOLD` is read event by event
  (`open_stream`, only the fields `_Event` names); once more than `HELD_CALLS` calls are held,
  the finished call trees at the front are searched and dropped, so memory follows the largest
  call tree, not the file (a return naming a call of a dropped tree is then ignored: only a
  malformed recording returns a call after its caller returned). Recordings are searched on
  the worker pool (`tracetool.workers`); matches come in file order.
- `summarize(matches)` → the distinct values of each field (sorted; events in scan order).
  Filters (`(field, value)` pairs) keep matches whose field holds the value.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, TypedDict

import msgspec

from tracetool.errors import TraceToolError, UsageError
from tracetool.trace import events as ev
from tracetool.trace.codeobjects import ClassMap, CodeObject
from tracetool.trace.document import TraceDocument, from_data, gc_paused, parse
from tracetool.trace.reader import find_trace_files, guarded, skip_lines
from tracetool.trace.slim import _Request
from tracetool.trace.stream import open_stream, read_small
from tracetool.trace.tree import CallNode, CallTreeBuilder, preorder, release

TYPES = (
    "function",
    "class",
    "package",
    "database",
    "table",
    "query",
    "route",
    "http",
    "external-service",
    "external-route",
)

# (key, title) of the 11 home-screen fields, in the spec's order.
FIELDS: tuple[tuple[str, str], ...] = (
    ("events", "Events"),
    ("returnValues", "Return values"),
    ("httpServerRequests", "HTTP server requests"),
    ("sqlQueries", "SQL queries"),
    ("sqlTables", "SQL tables"),
    ("callers", "Callers"),
    ("ancestors", "Ancestors"),
    ("descendants", "Descendants"),
    ("packageTrigrams", "Package trigrams"),
    ("classTrigrams", "Class trigrams"),
    ("functionTrigrams", "Function trigrams"),
)


@dataclass(frozen=True)
class CodeObjectRef:
    type: str
    identifier: str

    @property
    def text(self) -> str:
        return f"{self.type}:{self.identifier}"


def parse_code_object(text: str) -> CodeObjectRef:
    kind, sep, ident = text.partition(":")
    if not sep:
        raise UsageError(
            f"code object {text!r}: expected <type>:<identifier>, e.g. function:app/models/User#save"
        )
    if kind not in TYPES:
        raise UsageError(f"code object {text!r}: unknown type {kind!r} (one of {', '.join(TYPES)})")
    ident = ident.strip()
    if kind in ("function", "class", "package", "table", "query", "route") and not ident:
        raise UsageError(f"code object {text!r}: the {kind} identifier is missing")
    if kind == "route":
        from tracetool import route_model

        try:
            route_model.parse_route(ident)
        except UsageError:
            raise UsageError(
                f"code object {text!r}: a route is '<METHOD> <path>', e.g. route:GET /users/:id"
            ) from None
    return CodeObjectRef(kind, ident)


@dataclass
class Match:
    recording: str
    event_id: Any
    values: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"recording": self.recording, "eventId": self.event_id, **self.values}


# ---------------------------------------------------------------- matching


class _Matcher:
    def __init__(self, ref: CodeObjectRef) -> None:
        from tracetool.identifiers import loose

        self.ref = ref
        self.ident = ref.identifier
        self.key = loose(self.ident)  # forgiving spelling: `a.b.C.m` is `a/b/C#m`
        self._seen: dict[str, bool] = {}  # function fqid -> whether it matches
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
        return last.encode() in raw

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

    def matches(self, node: CallNode, cos: _CodeObjects) -> bool:
        t = self.ref.type
        call = node.call
        if t in ("function", "class", "package"):
            # SQL and HTTP calls are queries and routes, never functions: not even named
            if (
                "http_server_request" in call
                or "http_client_request" in call
                or "sql_query" in call
            ):
                return False
            co = cos[node]
            if co.type != "function":
                return False
            found = cos.matched.get(id(co))  # (without building its fqid again)
            if found is None:
                found = cos.matched[id(co)] = self._code_match(co)
            return found
        if t in ("database", "table", "query"):
            if "sql_query" not in call:
                return False
            if t == "database":
                return True
            from tracetool import sql

            info = sql.analyze(ev.sql_text(call), ev.database_type(call))
            if t == "query":
                return info.normalized.casefold() == self.query
            want = self.ident.lower()
            return any(tb == want or tb.endswith("." + want) for tb in info.tables)
        if t == "route":
            if "http_server_request" not in call:
                return False
            from tracetool import route_model

            method, template = route_model.server_route(call)
            return (method, route_model.shape(template)) == self.route
        if t == "http":
            return "http_server_request" in call
        co = cos[node]
        return co.type == t and (co.id == self.ident or co.fqid == self.ref.text)


# ---------------------------------------------------------------- context of a match


class _CodeObjects(dict):  # type: ignore[type-arg]
    """node -> its code object, resolved when first asked for: naming a SQL call normalizes its
    query, which only the matches' contexts need. A call that is not SQL or HTTP is named by its
    defined_class, method_id, path, lineno and static alone, so equal ones are resolved once."""

    def __init__(self, cmap: ClassMap) -> None:
        super().__init__()
        self.cmap = cmap
        self.by_key: dict[tuple[Any, ...], CodeObject] = {}
        self.matched: dict[int, bool] = {}  # id of a function code object -> whether it matches

    def __missing__(self, node: CallNode) -> CodeObject:
        call = node.call
        if "http_server_request" in call or "http_client_request" in call or "sql_query" in call:
            co = self[node] = self.cmap.code_object_for(call)
            return co
        get = call.get
        key: tuple[Any, ...] = (
            get("defined_class"),
            get("method_id"),
            get("path"),
            get("lineno"),
            get("static"),
        )
        try:
            found = self.by_key.get(key)
        except TypeError:  # a field of an unhashable type (a malformed recording)
            found = None
            key = ()
        if found is None:
            found = self.cmap.code_object_for(call)
            if key:
                self.by_key[key] = found
        self[node] = found
        return found


def _fqid(co: CodeObject, node: CallNode) -> str:
    if co.type == "query":
        from tracetool import sql

        return "query:" + sql.normalize(ev.sql_text(node.call), ev.database_type(node.call))
    return co.fqid


def _package(co: CodeObject) -> str:
    obj: CodeObject | None = co
    while obj is not None:
        if obj.type == "package" or obj.parent is None:
            return obj.fqid
        obj = obj.parent
    return co.fqid


def _class(co: CodeObject) -> str:
    return co.parent.fqid if co.parent is not None else co.fqid


def _labeled(co: CodeObject, node: CallNode) -> bool:
    return co.type == "function" and bool(co.labels or node.call.get("labels"))


def _return_value(node: CallNode) -> str:
    ret = node.ret or {}
    exceptions = ret.get("exceptions")
    if isinstance(exceptions, list) and exceptions and isinstance(exceptions[0], dict):
        return f"raised {exceptions[0].get('class', 'exception')}"
    value = ret.get("return_value")
    if not isinstance(value, dict) or not value:
        status = ev.status_code(node.ret)
        return str(status) if status is not None else "void"
    if value.get("value") is not None:
        return str(value["value"])
    return f"<{value.get('class', 'object')}>"


def _http_request(node: CallNode) -> str:
    from tracetool import route_model

    status = ev.status_code(node.ret)
    text = route_model.route_id(*route_model.server_route(node.call))
    return f"{text} ({status})" if status is not None else text


class _Notable:
    """The nodes a match's context lists (HTTP requests, SQL, labeled functions), indexed once
    per recording so that each match visits only those of its ancestors and subtrees: a call
    chain 100,000 deep costs one pass, not one pass per match."""

    def __init__(self, nodes: list[CallNode], cos: _CodeObjects) -> None:
        """`nodes`: every node of a whole tree, in pre-order (`tree.preorder`)."""
        self.up: dict[int, CallNode | None] = {}  # nearest notable proper ancestor
        self.below: set[int] = set()  # nodes with a notable proper descendant
        self.notable: set[int] = set()
        self.requests: dict[int, str] = {}  # `_http_request` of the requests met so far
        up, below, notable = self.up, self.below, self.notable
        for node in nodes:
            call = node.call
            if "sql_query" in call or "http_server_request" in call or _labeled(cos[node], node):
                notable.add(id(node))
            parent = node.parent
            if parent is None:
                up[id(node)] = None
            else:
                up[id(node)] = parent if id(parent) in notable else up[id(parent)]
        # in reverse pre-order a node's descendants all come before it
        for node in reversed(nodes):
            key = id(node)
            if (key in notable or key in below) and node.parent is not None:
                below.add(id(node.parent))

    def ancestors(self, node: CallNode) -> list[CallNode]:
        out = []
        found = self.up.get(id(node))
        while found is not None:
            out.append(found)
            found = self.up.get(id(found))
        return out

    def request(self, node: CallNode) -> str:
        """`_http_request(node)`, once per node: many matches share their request."""
        text = self.requests.get(id(node))
        if text is None:
            text = self.requests[id(node)] = _http_request(node)
        return text

    def descendants(self, node: CallNode) -> list[CallNode]:
        out: list[CallNode] = []
        stack = list(reversed(node.children))
        while stack:
            child = stack.pop()
            if id(child) in self.notable:
                out.append(child)
            if id(child) in self.below:
                stack.extend(reversed(child.children))
        return out


def _context(
    node: CallNode, cos: _CodeObjects, recording: str, notable: _Notable
) -> dict[str, list[str]]:
    from tracetool import sql

    co = cos[node]
    parent = node.parent
    ancestors = notable.ancestors(node)
    http = [a for a in [node, *ancestors] if "http_server_request" in a.call]
    queries: list[str] = []
    tables: set[str] = set()
    descendants: list[str] = []
    for d in [node, *notable.descendants(node)]:
        if "sql_query" in d.call:
            info = sql.analyze(ev.sql_text(d.call), ev.database_type(d.call))
            queries.append(info.normalized)
            tables.update(info.tables)
        elif d is not node and _labeled(cos[d], d):
            descendants.append(cos[d].fqid)
    caller_co = cos[parent] if parent is not None else None
    callees: list[CallNode | None] = list(node.children) or [None]
    trigrams: dict[str, list[str]] = {
        "packageTrigrams": [],
        "classTrigrams": [],
        "functionTrigrams": [],
    }
    for callee in callees:
        callee_co = cos[callee] if callee is not None else None
        for key, name in (
            ("packageTrigrams", _package),
            ("classTrigrams", _class),
            ("functionTrigrams", None),
        ):
            parts = []
            for obj, n in ((caller_co, parent), (co, node), (callee_co, callee)):
                if obj is None or n is None:
                    parts.append("")
                elif name is None:
                    parts.append(_fqid(obj, n))
                else:
                    parts.append(name(obj))
            trigrams[key].append(" -> ".join(parts))
    return {
        "events": [f"{recording}#{node.id}"],
        "returnValues": [_return_value(node)],
        "httpServerRequests": sorted({notable.request(h) for h in http}),
        "sqlQueries": sorted(set(queries)),
        "sqlTables": sorted(tables),
        "callers": [caller_co.fqid] if caller_co is not None else [],
        "ancestors": sorted(
            {
                cos[a].fqid
                for a in ancestors
                if "http_server_request" in a.call or _labeled(cos[a], a)
            }
        ),
        "descendants": sorted(set(descendants)),
        **{k: sorted(set(v)) for k, v in trigrams.items()},
    }


# ---------------------------------------------------------------- search


def find(
    ref: CodeObjectRef,
    trace_dir: Path,
    *,
    warn: Any = None,
    query_db: Path | str | None = None,
    use_index: bool = True,
    workers: int | None = None,
) -> list[Match]:
    """Every event matching `ref` in the recordings below `trace_dir` (module doc).

    Recordings are searched on a process pool (`tracetool.workers`); matches and warnings come
    in file order."""
    from tracetool.inspect.indexed import select
    from tracetool.trace.stream import file_size
    from tracetool.workers import INPROCESS_BYTES, INPROCESS_FILES, map_batches

    selection = select(ref, trace_dir, query_db) if use_index else None
    matches: list[Match] = []
    unusable: list[tuple[Path, str]] = []
    files = find_trace_files(trace_dir, unusable)
    if warn:
        for line in skip_lines(unusable):
            warn(line)
    chosen = [
        path
        for path in files
        if selection is None or selection.must_read(_recording(path, trace_dir), path)
    ]
    found: dict[Path, tuple[list[Match], str | None]] = {}
    search = functools.partial(_find_batch, ref, trace_dir)
    sized = [(p, file_size(p)) for p in chosen]
    if len(sized) > INPROCESS_FILES and sum(s for _, s in sized) > INPROCESS_BYTES:
        from tracetool import sql

        sql.analyze("SELECT 1")  # SQL contexts import sqlglot: once here, not in every worker
    for part in map_batches(search, sized, workers=workers):
        found.update(part)
    for path in chosen:
        in_file, error = found[path]
        if error is not None:
            if warn:
                warn(error)
            continue
        matches.extend(in_file)
    return matches


def _recording(path: Path, trace_dir: Path) -> str:
    try:
        return path.relative_to(trace_dir).as_posix()
    except ValueError:
        return str(path)


def _find_batch(
    ref: CodeObjectRef, trace_dir: Path, paths: list[Path]
) -> dict[Path, tuple[list[Match], str | None]]:
    """(matches, or the error line) of each recording of a batch (run in a worker process)."""
    matcher = _Matcher(ref)
    out: dict[Path, tuple[list[Match], str | None]] = {}
    for path in paths:
        try:
            out[path] = (_find_in(path, _recording(path, trace_dir), matcher), None)
        except TraceToolError as exc:
            out[path] = ([], str(exc))
    return out


# Calls held before finished call trees are searched and dropped (a recording bigger than
# `STREAM_THRESHOLD` is read event by event, so memory follows this, not the file size).
HELD_CALLS = 10_000


def _find_in(path: Path, recording: str, matcher: _Matcher) -> list[Match]:
    """The matches of one recording; any defect of its content is one TraceToolError."""
    raw = read_small(path)
    if raw is not None and not matcher.might_match(raw):
        return []
    # The document and its call trees are acyclic once released: the cyclic GC would only walk
    # them again and again (everything is freed before it runs again).
    with guarded(path), gc_paused():
        if raw is not None:
            doc = _parse(raw, str(path))
            del raw
            return _matches_in(doc.class_map, [doc.events], recording, matcher)
        stream = open_stream(path, header_keys=("classMap",), event_updates=False, fields=_Event)
        return _matches_in(stream.class_map, stream.event_blocks(), recording, matcher)


def _matches_in(
    class_map: Any, blocks: Iterable[list[dict[str, Any]]], recording: str, matcher: _Matcher
) -> list[Match]:
    """Matches in the call trees of the events, searched tree by tree once more than
    `HELD_CALLS` calls are held (in document order: the same matches, in the same order)."""
    matches: list[Match] = []
    builder = CallTreeBuilder()
    cos = _CodeObjects(ClassMap.from_json(class_map))
    try:
        for block in blocks:
            builder.add(block)
            if len(builder.nodes) > HELD_CALLS:
                _search(builder.take_finished(), cos, recording, matcher, matches)
        _search(builder.roots, cos, recording, matcher, matches, last=True)
    finally:
        release(builder.roots)
        for co in cos.cmap:
            co.parent = None
        cos.clear()
    return matches


def _search(
    roots: list[CallNode],
    cos: _CodeObjects,
    recording: str,
    matcher: _Matcher,
    matches: list[Match],
    *,
    last: bool = False,
) -> None:
    """Append the matches in these whole trees, then drop them (and, unless they are the
    `last` ones, whose names the caller drops all at once, their nodes' names)."""
    pop = cos.pop
    try:
        for root in roots:
            # a match's context lies within its own tree: index the trees that hold a match
            nodes = preorder((root,))
            notable: _Notable | None = None
            for node in nodes:
                if matcher.matches(node, cos):
                    if notable is None:
                        notable = _Notable(nodes, cos)
                    context = _context(node, cos, recording, notable)
                    matches.append(Match(recording, node.id, context))
            if not last:
                for node in nodes:
                    pop(node, None)
    finally:
        release(roots)


class _Event(TypedDict, total=False):
    """The event fields a match and its context read; msgspec skips the others unparsed
    (parameters, receivers, messages, request headers)."""

    id: Any
    event: Any
    thread_id: Any
    parent_id: Any
    defined_class: Any
    method_id: Any
    path: Any
    lineno: Any
    static: Any
    labels: Any
    sql_query: Any
    http_server_request: Optional[_Request]
    http_client_request: Optional[_Request]
    http_server_response: Any
    http_client_response: Any
    return_value: Any
    exceptions: Any


class _Doc(TypedDict, total=False):
    version: Any
    metadata: Any
    classMap: Any
    events: list[_Event]


_DOC = msgspec.json.Decoder(_Doc)


def _parse(raw: bytes, source: str) -> TraceDocument:
    """The recording with only the fields inspect reads (`_Event`); anything unusual (an event
    or request that is not an object, invalid JSON) is read by the full parser, which reports it."""
    try:
        data = _DOC.decode(raw)
    except msgspec.DecodeError:
        return parse(raw, source)
    return from_data(data, source)


# ---------------------------------------------------------------- not found


_SUGGEST_SCAN_FILES = 200


def known_identifiers(
    ref: CodeObjectRef, trace_dir: Path, query_db: Path | str | None = None
) -> list[str]:
    """Identifiers of `ref`'s type that the recordings hold (for "did you mean").

    From the index when there is one, else from the class maps of the first recordings.
    """
    from tracetool.errors import IndexMissingError
    from tracetool.index.schema import open_reader
    from tracetool.paths import query_db_path

    wanted = "function" if ref.type == "package" else ref.type
    path = Path(query_db).expanduser() if query_db else query_db_path(trace_dir)
    try:
        db = open_reader(path)
    except IndexMissingError:
        db = None
    if db is not None:
        try:
            rows = db.execute("SELECT fqid FROM code_objects WHERE type = ?", (wanted,))
            fqids = [str(r[0]) for r in rows]
        except Exception:
            fqids = []
        finally:
            db.close()
    else:
        seen: dict[str, None] = {}
        for n, file in enumerate(find_trace_files(trace_dir)):
            if n >= _SUGGEST_SCAN_FILES:
                break
            try:
                with guarded(file):
                    # a big recording is streamed: its classMap is read, its events only here
                    doc = open_stream(file, header_keys=("classMap",), event_updates=False)
                    cmap = ClassMap.from_json(doc.class_map)
                    for co in cmap:
                        if co.type == wanted:
                            seen.setdefault(co.fqid, None)
                    if wanted in ("route", "query"):
                        from tracetool import route_model, sql

                        for event in doc.events():
                            if event.get("event") != "call":
                                continue
                            if wanted == "route" and "http_server_request" in event:
                                seen.setdefault(
                                    "route:"
                                    + route_model.route_id(*route_model.server_route(event)),
                                    None,
                                )
                            elif wanted == "query" and "sql_query" in event:
                                text = sql.normalize(ev.sql_text(event), ev.database_type(event))
                                seen.setdefault("query:" + text, None)
            except TraceToolError:
                continue
        fqids = list(seen)
    out = [f[len(wanted) + 1 :] for f in fqids if f.startswith(wanted + ":")]
    if ref.type == "package":  # the packages (and modules) of the functions
        from tracetool.identifiers import loose

        packages: dict[str, None] = {}
        for ident in out:
            parts = ident.replace("#", ".").split("/")
            for i in range(1, len(parts)):
                packages.setdefault("/".join(parts[:i]), None)
            module = ident.rpartition(".")[0] if "#" not in ident else ""
            if module:
                packages.setdefault(module, None)
        out = [p for p in packages if loose(p)]
    return out


def not_found_message(ref: CodeObjectRef, trace_dir: Path, query_db: Any = None) -> str:
    """`<ref> not found in any recording under <dir>; did you mean: …?` (up to 5)."""
    from tracetool.identifiers import did_you_mean

    known = known_identifiers(ref, trace_dir, query_db)
    hint = did_you_mean(ref.text, [f"{ref.type}:{k}" for k in known])
    return f"{ref.text} not found in any recording under {trace_dir}{hint}"


def apply_filters(matches: Iterable[Match], filters: Iterable[tuple[str, str]]) -> list[Match]:
    """Matches whose field holds the value, for every (field, value) filter."""
    active = list(filters)
    return [m for m in matches if all(v in m.values.get(f, ()) for f, v in active)]


def summarize(matches: list[Match]) -> dict[str, list[str]]:
    """Distinct values of each field over the matches (events in scan order, others sorted)."""
    out: dict[str, list[str]] = {}
    for key, _ in FIELDS:
        values: list[str] = []
        seen: set[str] = set()
        for m in matches:
            for v in m.values.get(key, ()):
                if v not in seen:
                    seen.add(v)
                    values.append(v)
        out[key] = values if key == "events" else sorted(values)
    return out


def report(ref: CodeObjectRef, trace_dir: Path, matches: list[Match]) -> dict[str, Any]:
    """The JSON that non-interactive `inspect` prints."""
    return {
        "codeObject": ref.text,
        "traceDir": str(trace_dir),
        "recordings": len({m.recording for m in matches}),
        "matches": [m.to_json() for m in matches],
        **summarize(matches),
    }


__all__ = [
    "FIELDS",
    "TYPES",
    "CodeObjectRef",
    "Match",
    "apply_filters",
    "find",
    "known_identifiers",
    "not_found_message",
    "parse_code_object",
    "report",
    "summarize",
]
