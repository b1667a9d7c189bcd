"""Stable properties and digests of diagram actions, as AppMap computes them.

Contract (reference/appmap.md §1.10, §3.3):

- Function, HTTP server and HTTP client actions: `digest = build_hash("event-stable-properties-v2",
  props)` with props `{event_type: "function", id: <code object id>, raises_exception: bool}` or
  `{event_type: "http_server_request" | "http_client_request", route, status_code}` (missing
  values as ""). Byte-compatible with AppMap, quirks included: `route` is the raw method plus the
  template (or path, or client URL), and a client request's status counts only when written as
  `status` (AppMap falls back to the *server* response's status_code there).
- SQL actions: AppMap hashes the JSON of its own SQL parser's AST, which no Python parser can
  reproduce, so SQL digests deliberately differ and carry their own algorithm name,
  `SQL_ALGORITHM` = "tracetool-sql-canonical-v1", over `{event_type: "sql", sql_normalized}`.
  The canonical form v1 is `tracetool.sql.normalize` (sqlglot tokenizer: literals → `?`, comments
  dropped, whitespace collapsed, every bind placeholder — `$1`, `?1`, `:name`, `%s`,
  `%(name)s`, `@p1`, with a glued cast — written `?`), then runs of `?, ?, …` collapsed to one `?` (as AppMap
  collapses runs of variables), keywords upper-cased. Plain numbers and '…' strings are masked
  with a regex before tokenizing (same result, one tokenizer run per statement shape). A statement whose text ends in `...`
  (truncated by the agent) has digest "truncatedQuery", as in AppMap.
- `subtree_digest(digest, child_digests)` = sha256 of the digest and the children's subtree
  digests joined by newlines.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from tracetool import accel
from tracetool.digest import build_hash

STABLE_ALGORITHM = "event-stable-properties-v2"
SQL_ALGORITHM = "tracetool-sql-canonical-v1"
TRUNCATED_QUERY = "truncatedQuery"

_RUN = re.compile(r"\?(?:\s*,\s*\?)+")
_WORD = re.compile(r'"[^"]*"|`[^`]*`|\[[^\]]*\]|\b[A-Za-z_]+\b')
_KEYWORDS = frozenset(
    """select from where and or not in is null insert into values update set delete join inner
    left right outer full cross on as order by group having limit offset distinct union all
    exists between like ilike case when then else end returning with asc desc begin commit
    rollback savepoint release create table index drop alter add primary key foreign
    references default count sum min max avg coalesce cast true false""".split()
)


# Plain literals, masked before tokenizing so statements that differ only in them share one
# (cached) tokenizer run. Quoted identifiers are matched first so they stay intact; texts with
# backslashes or dollar quotes skip this step (their literals need the dialect's tokenizer).
_PRE = re.compile(
    r'"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]|(\'(?:[^\']|\'\')*\')|(?<![\w$.?:@])(\d+(?:\.\d+)?)(?![\w.])'
)


# `_PRE.sub` of an ASCII text in C (tracetool/_speedups_diagram.c), or None: the regex tries
# its five alternatives at every character and calls back into Python for every quoted name,
# ~40% of a diagram's SQL digests (1,200 distinct statements on the 60 MB recording)
_PREMASK: Callable[[str], str | None] | None = accel.function("sql_premask")


def _premask(sql: str) -> str:
    if "\\" in sql or "$$" in sql:
        return sql
    if _PREMASK is not None:
        masked = _PREMASK(sql)
        if masked is not None:
            return masked
    return _PRE.sub(lambda m: "?" if m.group(1) or m.group(2) else m.group(0), sql)


def canonical_sql(sql: str, database_type: str | None = None) -> str:
    """The v1 canonical form of one SQL statement (module doc)."""
    return _canonical(_premask(sql), database_type)


@lru_cache(maxsize=8192)
def _canonical(sql: str, database_type: str | None) -> str:
    from tracetool import sql as sqlmod

    text = sqlmod.normalize(sql, database_type)  # placeholders of every paramstyle are `?`
    text = _RUN.sub("?", text)

    if _KEYWORDS_UPPER is not None:
        upper_cased = _KEYWORDS_UPPER(text, _KEYWORDS)
        if upper_cased is not None:
            return upper_cased  # type: ignore[no-any-return]

    def upper(m: re.Match[str]) -> str:
        word = m.group(0)
        return word.upper() if word.lower() in _KEYWORDS else word

    return _WORD.sub(upper, text)


# `_WORD.sub(upper, text)` of an ASCII text in C (tracetool/_speedups_diagram.c), or None
_KEYWORDS_UPPER = accel.function("sql_keywords_upper")


def sql_text(call: dict[str, Any]) -> str:
    """AppMap's `sqlQuery`: `normalized_sql` if the agent wrote one, else `sql`."""
    q = call.get("sql_query")
    if isinstance(q, str):  # a bare-string sql_query (tolerated) is the SQL itself
        return q
    q = q if isinstance(q, dict) else {}
    value = q.get("normalized_sql") or q.get("sql") or ""
    return value if isinstance(value, str) else str(value)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def appmap_route(call: dict[str, Any]) -> str | None:
    """AppMap's `event.route`: raw method + template/path (server) or url (client)."""
    req = call.get("http_server_request")
    if isinstance(req, dict):
        path = _text(req.get("normalized_path_info")) or _text(req.get("path_info"))
    else:
        req = call.get("http_client_request")
        if not isinstance(req, dict):
            return None
        path = _text(req.get("url"))
    method = _text(req.get("request_method"))
    if not method or not path:
        return None
    return f"{method} {path}"


def _js(value: Any) -> str:
    # Array.join renders null and undefined as empty strings
    return "" if value is None else str(value)


def _js_or(*values: Any) -> Any:
    for v in values:
        if v:
            return v
    return values[-1] if values else None


def response_status(ret: dict[str, Any] | None, key: str) -> Any:
    """`response.status || response.status_code` (AppMap's reading of a status)."""
    resp = (ret or {}).get(key)
    if not isinstance(resp, dict):
        return None
    return _js_or(resp.get("status"), resp.get("status_code"))


def stable_properties(
    call: dict[str, Any], ret: dict[str, Any] | None, code_object_id: str
) -> dict[str, Any]:
    """AppMap's `gatherStableProperties` for a non-SQL call (module doc)."""
    if "http_server_request" in call or "http_client_request" in call:
        kind = "http_server_request" if "http_server_request" in call else "http_client_request"
        server = (ret or {}).get("http_server_response")
        client = (ret or {}).get("http_client_response")
        server = server if isinstance(server, dict) else {}
        client = client if isinstance(client, dict) else {}
        status = (
            server.get("status")
            or server.get("status_code")
            or client.get("status")
            or server.get("status_code")
        )
        route = appmap_route(call)
        return {
            "event_type": kind,
            "route": "" if route is None else route,
            "status_code": "" if status is None else status,
        }
    exceptions = (ret or {}).get("exceptions")
    return {
        "event_type": "function",
        "id": code_object_id,
        "raises_exception": bool(exceptions),
    }


@lru_cache(maxsize=65536)
def _cached_hash(algorithm: str, items: tuple[tuple[str, Any], ...]) -> str:
    return build_hash(algorithm, dict(items))


def digest(props: dict[str, Any]) -> str:
    try:
        return _cached_hash(STABLE_ALGORITHM, tuple(sorted(props.items())))
    except TypeError:  # a value that cannot be a cache key (an HTTP status given as an object)
        return build_hash(STABLE_ALGORITHM, props)


@lru_cache(maxsize=8192)  # a worker indexes many recordings of the same application
def function_digest(code_object_id: str, raises_exception: bool) -> str:
    """`digest(stable_properties(call, ret, code_object_id))` of a function call (not an HTTP
    request), whose return raises an exception or not."""
    props = {"event_type": "function", "id": code_object_id, "raises_exception": raises_exception}
    return digest(props)


_remembered: Any = None


def _remembered_template(sql: str) -> tuple[bool, str | None]:
    """`tracetool.sql.remembered_template` (imported on first use, as `tracetool.sql` is here)."""
    global _remembered
    if _remembered is None:
        from tracetool.sql import remembered_template

        _remembered = remembered_template
    return _remembered(sql)  # type: ignore[no-any-return]


# (template, database_type) -> the SQL digest of every text of that template (`sql_digest`)
_by_template: dict[tuple[str, str | None], str] = {}
_TEMPLATES_MAX = 8192


@lru_cache(maxsize=8192)  # a worker indexes many recordings of the same application
def sql_digest(sql: str, database_type: str | None) -> str:
    """The digest of a SQL action (module doc).

    Texts of one template (`tracetool._sql_template`) share it, when `tracetool.sql` has
    computed the text's template already (for its analysis: the index analyzes a recording's
    statements before it digests them): a templated text holds no backslash, `$$`,
    backtick or bracket, and its marked literals are digit runs between the characters
    `_BEFORE_NUMBER` and `_AFTER_NUMBER` and `'…'` strings without quotes inside or next to them,
    outside quoted names; `_premask` masks exactly those runs as `?` too (and reads the same
    names and strings around them), so its text, hence the canonical form, is one per template.
    tests/test_sql_digest_template.py checks this.
    """
    if sql.endswith("..."):  # (a text ending in a marked literal ends in a quote or digit)
        return TRUNCATED_QUERY
    _, key = _remembered_template(sql)
    if key is None:  # (not known: computing it would cost about what `_premask` does)
        return _sql_digest_of(sql, database_type)
    tkey = (key, database_type)
    found = _by_template.get(tkey)
    if found is None:
        found = _sql_digest_of(sql, database_type)
        if len(_by_template) >= _TEMPLATES_MAX:
            _by_template.clear()
        _by_template[tkey] = found
    return found


def _sql_digest_of(sql: str, database_type: str | None) -> str:
    props = (("event_type", "sql"), ("sql_normalized", canonical_sql(sql, database_type)))
    return _cached_hash(SQL_ALGORITHM, props)


_sql_digest_cache_clear = sql_digest.cache_clear


def _sql_digest_clear() -> None:
    _sql_digest_cache_clear()
    _by_template.clear()


sql_digest.cache_clear = _sql_digest_clear  # type: ignore[method-assign]


def subtree_digest(own: str, child_subtree_digests: list[str]) -> str:
    if not child_subtree_digests:
        return hashlib.sha256(own.encode()).hexdigest()
    return hashlib.sha256("\n".join([own, *child_subtree_digests]).encode()).hexdigest()


def loop_digest(member_subtree_digests: list[str]) -> str:
    return "loop:" + hashlib.sha256("\n".join(member_subtree_digests).encode()).hexdigest()


# AppMap's classNameToOpenAPIType in strict mode, for return-value type names.
_RUBY = {
    "array": "array",
    "sequel::postgres::pgarray": "array",
    "hash": "object",
    "sequel::postgres::jsonbhash": "object",
    "activesupport::hashwithindifferentaccess": "object",
    "integer": "integer",
    "float": "number",
    "numeric": "number",
    "trueclass": "boolean",
    "falseclass": "boolean",
    "string": "string",
}
_PYTHON = {
    "bool": "boolean",
    "dict": "object",
    "int": "integer",
    "list": "array",
    "str": "string",
    "float": "number",
    "tuple": "array",
}


def openapi_type(class_name: Any) -> str | None:
    if not class_name or not isinstance(class_name, str):
        return None
    lower = class_name.lower()
    if lower in _RUBY:
        return _RUBY[lower]
    if lower.startswith("builtins.") and lower[9:] in _PYTHON:
        return _PYTHON[lower[9:]]
    if lower == "java.lang.string":
        return "string"
    return None


def return_value(ret: dict[str, Any] | None) -> dict[str, Any] | None:
    """AppMap's `returnValue` of a function action (None when the call never returned)."""
    if ret is None:
        return None
    raises = bool(ret.get("exceptions"))
    value = ret.get("return_value")
    if not value and not raises:
        return {"returnValueType": {"name": "void"}, "raisesException": False}
    out: dict[str, Any] = {}
    if isinstance(value, dict) and value:
        cls = value.get("class")
        rtype: dict[str, Any] = {"name": openapi_type(cls) or cls}
        props = value.get("properties")
        if isinstance(props, list):
            rtype["properties"] = sorted(
                f"{_js(p.get('name'))}:{_js(p.get('class'))}" for p in props if isinstance(p, dict)
            )
        out["returnValueType"] = rtype
    out["raisesException"] = raises
    return out
