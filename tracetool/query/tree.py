"""`tree`: the call tree of one recording, with timings, repeated siblings folded.

The recording is found through the index (`resolve_recording`) and read from its file, so the
tree is exact even though the database keeps only aggregates. Consecutive siblings whose whole
subtrees are identical (same kinds, labels and HTTP statuses all the way down) fold into one row
with `count` = how many there were and `elapsed_ms` = their total; their children fold the same
way, so a loop of ten `find` calls each running one query shows `find ×10` over `SELECT ×10`.

Rows come in pre-order: `depth`, `kind` (http_server, http_client, sql, function, message,
other), `label` (request `METHOD path`, SQL text, `Class#method`), `count`, `elapsed_ms`,
`event_id` (the first folded call), for HTTP requests `route` and `status`, and for functions
with a recorded source `location` (`path:lineno`, as the agent wrote it).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from tracetool import accel
from tracetool.errors import NotFoundError
from tracetool.filters.apply import call_tree
from tracetool.query.db import recording_file, resolve_recording, round_ms
from tracetool.trace import events as ev
from tracetool.trace import gc_paused_call
from tracetool.trace.normalize import apply_event_updates
from tracetool.trace.slim import load_slim
from tracetool.trace.tree import CallNode, preorder

DEFAULT_LIMIT = 1000


_ABSENT = object()


def _function_key(call: dict[str, Any]) -> tuple[Any, ...]:
    """What a function call's label is made of (`ev.function_name`): an absent class or
    method reads differently from a null one."""
    get = call.get
    return (get("defined_class", _ABSENT), get("method_id", _ABSENT), bool(get("static")))


def _label(
    node: CallNode, sql_labels: dict[Any, str], fn_labels: dict[tuple[Any, ...], str]
) -> tuple[str, str, dict[str, Any]]:
    call = node.call
    kind = ev.kind(call)
    extra: dict[str, Any] = {}
    if kind == ev.HTTP_SERVER:
        from tracetool.index.extract import route_template

        label = f"{ev.request_method(call)} {ev.path_info(call)}"
        extra = {"route": route_template(call), "status": ev.status_code(node.ret)}
    elif kind == ev.HTTP_CLIENT:
        label = ev.route(call)
        extra = {"status": ev.status_code(node.ret)}
    elif kind == ev.SQL:
        known = sql_labels.get(call.get("id"))
        if known is not None:
            label = known
        else:
            from tracetool import sql

            label = sql.normalize(ev.sql_text(call), ev.database_type(call))
    elif kind == ev.FUNCTION:
        key = _function_key(call)
        label = fn_labels.get(key) or fn_labels.setdefault(key, ev.function_name(call))
        if call.get("path"):
            line = call.get("lineno")
            extra = {"location": f"{call['path']}:{line}" if line else str(call["path"])}
    else:
        label = str(call.get("method_id") or call.get("defined_class") or kind)
    return kind, label, extra


@gc_paused_call
def tree(
    db: sqlite3.Connection,
    appmap: str,
    *,
    depth: int | None = None,
    fold: bool = True,
    limit: int | None = DEFAULT_LIMIT,
) -> list[dict[str, Any]]:
    """Rows of the call tree of `appmap` (module doc); at most `limit` rows, `depth` levels."""
    row = resolve_recording(db, appmap)
    path = recording_file(db, row)
    if not path.is_file():
        raise NotFoundError(f"{path}: recording file is gone (run `tracetool index` to refresh)")
    st = path.stat()
    sql_labels: dict[Any, str] = {}
    if (st.st_size, st.st_mtime_ns) == (row["size"], row["mtime_ns"]):
        # The index already normalized every SQL call of this very file: reuse it. (Plain
        # tuples where the database is SQLite: a big recording has thousands of rows.)
        cursor: Any = db
        if isinstance(db, sqlite3.Connection):
            cursor = db.cursor()
            cursor.row_factory = None
        sql_labels = dict(
            cursor.execute(
                "SELECT q.event_id, co.name FROM sql_queries q JOIN code_objects co "
                "ON co.id = q.code_object_id WHERE q.recording_id = ?",
                (row["id"],),
            ).fetchall()
        )
    # Only the fields the rows are made of (`load_slim`, with messages: `ev.kind`), a third
    # less to decode and free than the whole document; its hundreds of thousands of containers
    # are built with the cyclic GC paused (`gc_paused_call`).
    doc = load_slim(path, extras=False, messages=True)
    # The tree builder pairs calls and returns itself; only updates must be applied first.
    # Event ids stay the file's, as in the index.
    apply_event_updates(doc)
    calls = call_tree(doc.events)
    rows = _rows(calls.roots, depth, fold, limit, sql_labels)
    calls.release()  # freed now by reference counting, not by a GC pass after the call
    del doc
    return rows


# The loop of `_facts` in C (tracetool/_speedups_diagram.c), or None
_TREE_FACTS = accel.function("tree_facts")


def _facts(
    roots: list[CallNode], sql_labels: dict[Any, str]
) -> tuple[dict[CallNode, tuple[str, str, dict[str, Any]]], dict[CallNode, int]]:
    """Each node's row facts (`_label`) and signature: the hash of its facts (but the
    location) and its children's signatures, equal for identical subtrees. Keyed by the nodes
    themselves (CallNode hashes by identity)."""
    info: dict[CallNode, tuple[str, str, dict[str, Any]]] = {}
    sig: dict[CallNode, int] = {}
    fn_labels: dict[tuple[Any, ...], str] = {}  # recordings repeat the same functions a lot
    # A function call's row facts by what they are made of (its identity and location), and a
    # leaf's signature by its row facts: most calls are leaves of a few functions.
    fn_info: dict[tuple[Any, ...], tuple[str, str, dict[str, Any]]] = {}
    if _TREE_FACTS is not None and roots.__class__ is list:

        def label_of(node: CallNode) -> tuple[str, str, dict[str, Any]]:
            return _label(node, sql_labels, fn_labels)

        made = _TREE_FACTS(roots, sql_labels, fn_info, _ABSENT, label_of, CallNode)
        if made is not NotImplemented:
            return made  # type: ignore[no-any-return]
    leaf_sig: dict[int, int] = {}
    # Children before their parents: a pre-order walked backwards.
    for node in reversed(preorder(roots)):
        call = node.call
        if ev.kind(call) == ev.FUNCTION:
            where = call.get("path")
            key = (*_function_key(call), where, call.get("lineno") if where else None)
            facts = fn_info.get(key)
            if facts is None:
                facts = fn_info[key] = _label(node, sql_labels, fn_labels)
        else:
            facts = _label(node, sql_labels, fn_labels)
        info[node] = facts
        if node.children:
            kind, label, extra = facts
            sig[node] = hash(
                (kind, label, extra.get("status"), tuple([sig[c] for c in node.children]))
            )
        else:
            leaf = leaf_sig.get(id(facts))
            if leaf is None:
                kind, label, extra = facts
                leaf = leaf_sig[id(facts)] = hash((kind, label, extra.get("status"), ()))
            sig[node] = leaf
    return info, sig


def _rows(
    roots: list[CallNode],
    depth: int | None,
    fold: bool,
    limit: int | None,
    sql_labels: dict[Any, str],
) -> list[dict[str, Any]]:
    info, sig = _facts(roots, sql_labels)

    def runs(siblings: list[list[CallNode]]) -> list[list[CallNode]]:
        """Group position-aligned sibling lists into runs of identical subtrees."""
        width = len(siblings[0]) if siblings else 0
        groups: list[list[CallNode]] = []
        i = 0
        while i < width:
            j = i + 1
            if fold:
                while j < width and sig[siblings[0][j]] == sig[siblings[0][i]]:
                    j += 1
            groups.append([nodes[k] for nodes in siblings for k in range(i, j)])
            i = j
        return groups

    out: list[dict[str, Any]] = []
    cap = limit if limit is not None else float("inf")
    stack: list[tuple[list[CallNode], int]] = [(group, 0) for group in reversed(runs([roots]))]
    while stack and len(out) < cap:
        group, level = stack.pop()
        first = group[0]
        kind, label, extra = info[first]
        times = [n.elapsed for n in group if n.elapsed is not None]
        out.append(
            {
                "depth": level,
                "kind": kind,
                "label": label,
                "count": len(group),
                "elapsed_ms": round_ms(sum(times) * 1000) if times else None,
                "event_id": first.id,
                **extra,
            }
        )
        if depth is not None and level + 1 > depth:
            continue
        if first.children:
            child_groups = runs([n.children for n in group])
            stack.extend((g, level + 1) for g in reversed(child_groups))
    return out
