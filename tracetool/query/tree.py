"""`tree`: the call tree of one recording, with timings, repeated siblings folded.

The recording is found through the index (`resolve_recording`) and read from its file, so the
tree is exact even though the database keeps only aggregates. Consecutive siblings whose whole
subtrees are identical (same kinds, labels and HTTP statuses all the way down) fold into one row
with `count` = how many there were and `elapsed_ms` = their total; their children fold the same
way, so a loop of ten `find` calls each running one query shows `find ×10` over `SELECT ×10`.

Rows come in pre-order: `depth`, `kind` (http_server, http_client, sql, function, message,
other), `label` (request `METHOD path`, SQL text, `Class#method`), `count`, `elapsed_ms`,
`event_id` (the first folded call), for HTTP requests `route` and `status`, and for functions
with a recorded source `location` (`path:lineno`, as the agent wrote it). A run's `elapsed_ms`
adds its members' times left to right, the same on every Python.

Two readers, one set of rows:
* a recording up to `STREAM_THRESHOLD` (8 MiB) is read whole (`load_slim`) and its call tree
  built in C; `_facts` (in C too) signs each subtree and `_rows` walks the runs;
* a bigger one is read a block at a time (`open_stream`) and folded as its calls close
  (`_Fold`): a closed call's rows are its own row then its children's runs, each child added
  into the last run when its signature is the same (count and time, row by row: identical
  subtrees have the same rows), and no list of rows is kept past `limit` (a subtree's rows
  past it can never be shown). Memory follows `limit` times the depth of the open calls, the
  SQL names (16 bytes a query) and the reader's block, not the recording, even when the
  recording is one call tree. Once the rows are all made (a new run of roots starts past
  `limit`, and no call closed without a return) the rest is not read. Pairing is
  `CallTreeBuilder`'s; a return that names a call closed without one (only a malformed
  recording has one) would change that call in a whole tree, so such a recording is read
  again whole. Tests check both readers give the same rows (tests/query/test_tree_streamed.py).
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable
from functools import reduce
from operator import add
from pathlib import Path
from typing import Any

from tracetool import accel
from tracetool.errors import NotFoundError, TraceFormatError
from tracetool.filters.apply import call_tree
from tracetool.query.db import recording_file, resolve_recording, round_ms
from tracetool.trace import events as ev
from tracetool.trace import gc_paused_call
from tracetool.trace.checks import field_defect
from tracetool.trace.normalize import apply_event_updates
from tracetool.trace.slim import _TreeEvent, load_slim
from tracetool.trace.stream import STREAM_THRESHOLD, TraceStream, open_stream, run_pass
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
    try:
        return _tree(db, row, path, depth, fold, limit)
    except TypeError:
        # A field of a shape the rows cannot be made of (an array for an id, a path...): the
        # index refuses such a file, so it changed since; named as the index names it.
        defect = _defect(path)
        if defect is None:
            raise
        raise TraceFormatError(f"{path}: {defect}") from None


def _defect(path: Path) -> str | None:
    """The first event field of a recording that readers cannot use (`field_defect`)."""
    for number, event in enumerate(open_stream(path).events(), 1):
        found = field_defect(event, number)
        if found is not None:
            return found
    return None


def _tree(
    db: sqlite3.Connection,
    row: Any,
    path: Path,
    depth: int | None,
    fold: bool,
    limit: int | None,
) -> list[dict[str, Any]]:
    st = path.stat()
    # The index already normalized every SQL call of this very file: its names are reused.
    indexed = (st.st_size, st.st_mtime_ns) == (row["size"], row["mtime_ns"])
    big = st.st_size > STREAM_THRESHOLD
    labels = _SqlLabels(db, row["id"], big) if indexed else _SqlLabels()
    if big:

        def run(stream: TraceStream) -> list[dict[str, Any]] | None:
            folder = _Fold(labels, depth, fold, limit)
            try:
                done = folder.read(stream.event_blocks())
            except TypeError as exc:
                if stream.provisional:  # (the event may be one that eventUpdates after the
                    raise TraceFormatError(str(exc)) from None  # events replace: read again)
                raise
            return folder.result() if done else None

        # (`run_pass`: without the scan for top-level keys when the events come first)
        streamed = run_pass(path, run, header_keys=("version",), fields=_TreeEvent)
        if streamed is not None:
            return streamed  # type: ignore[no-any-return]
        # (a return names a call closed without one: only the whole tree pairs it as a whole
        # read does)
    sql_labels = labels.as_dict()
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
        # (added left to right, as `_Fold` adds a run's members, on every Python: `sum`
        # compensates its float sums from 3.12 on)
        times = [n.elapsed for n in group if n.elapsed is not None]
        out.append(
            {
                "depth": level,
                "kind": kind,
                "label": label,
                "count": len(group),
                "elapsed_ms": round_ms(reduce(add, times) * 1000) if times else None,
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


class _SqlLabels:
    """The index's name of each SQL call of one recording, by event id: sorted arrays of the
    event ids and their code objects' ids (16 bytes a query, where a dict of names would take
    ~100), each code object's name read once, when first asked for."""

    def __init__(self, db: Any = None, recording_id: int | None = None, big: bool = False) -> None:
        self.ids = array("q")
        self.codes = array("q")
        self.other: dict[Any, Any] = {}  # ids that are not 64-bit ints: their code objects
        self.names: dict[Any, str] = {}
        self.db = db
        if db is None:
            return
        # A big recording's million rows are sorted by SQLite, in memory up to its page cache
        # and then in temporary files: with the cache cut down to SQLite's default (2 MB) for
        # the query, memory stays flat (~60 MB less for a 1 GB recording, ~0.2 s more).
        cache = None
        if big and isinstance(db, sqlite3.Connection):
            cache = db.execute("PRAGMA cache_size").fetchone()[0]
            db.execute("PRAGMA cache_size = -2000")
        try:
            self.load(
                self._cursor().execute(
                    "SELECT event_id, code_object_id FROM sql_queries WHERE recording_id = ? "
                    "ORDER BY event_id, id",
                    (recording_id,),
                )
            )
        finally:
            if cache is not None:
                db.execute(f"PRAGMA cache_size = {int(cache)}")

    def _cursor(self) -> Any:
        """Plain tuples where the database is SQLite (a big recording has a million rows,
        handed out as SQLite sorts them)."""
        if isinstance(self.db, sqlite3.Connection):
            cursor = self.db.cursor()
            cursor.row_factory = None
            return cursor
        return self.db

    def load(self, rows: Iterable[tuple[Any, Any]]) -> None:
        """Take (event id, code object id) rows, by event id (the last of a repeated id wins,
        as in a dict of them)."""
        ids, codes, other = self.ids, self.codes, self.other
        for event_id, code in rows:
            if type(event_id) is int and -(2**63) <= event_id < 2**63:
                if ids and event_id == ids[-1]:
                    codes[-1] = code
                    continue
                ids.append(event_id)
                codes.append(code)
            else:
                other[event_id] = code

    def _name(self, code: Any) -> str | None:
        name = self.names.get(code)
        if name is None and self.db is not None:
            found = (
                self._cursor()
                .execute("SELECT name FROM code_objects WHERE id = ?", (code,))
                .fetchone()
            )
            if found is not None:
                name = self.names[code] = found[0]
        return name

    def get(self, key: Any) -> str | None:
        """The name of the call of id `key`, or None (as a dict of them would find it)."""
        if type(key) is not int:
            code = self.other.get(key) if self.other else None
            if code is not None:
                return self._name(code)
            if not isinstance(key, (bool, float)):
                return None
            if not (key.is_integer() if isinstance(key, float) else True):
                return None  # (2.0 and True find 2 and 1; 2.5, inf and nan nothing)
            key = int(key)
        if not -(2**63) <= key < 2**63:
            code = self.other.get(key) if self.other else None
            return None if code is None else self._name(code)
        ids = self.ids
        at = bisect_left(ids, key)
        if at < len(ids) and ids[at] == key:
            return self._name(self.codes[at])
        return None

    def as_dict(self) -> dict[Any, str]:
        """Every name by event id (for the C loop of `_facts`, which reads a dict)."""
        found: dict[Any, str] = {}
        for key, code in (*zip(self.ids, self.codes), *self.other.items()):
            name = self._name(code)
            if name is not None:
                found[key] = name
        return found


class _Call:
    """A call of the fold while it is open (`_Fold.top` stands for the roots): its rows so far,
    its own first (filled when it closes), then its children's; and its children's hash."""

    __slots__ = ("at", "call", "done", "h", "id", "last", "level", "ret", "rows", "thread")

    def __init__(self, call: Any, key: Any, thread: Any, level: int, rows: list[Any]) -> None:
        self.call = call
        self.id = key
        self.ret: Any = None
        self.thread = thread
        self.level = level
        self.rows = rows
        self.h: Any = None  # the hash of its children's signatures, in order
        self.last: Any = None  # the signature of its last run of identical children
        self.at = 0  # where that run's rows start in `rows`
        self.done: Any = None  # a root's (signature, rows) once it closed


class _Fold:
    """The rows of a call tree, made as its calls close: memory follows `limit` and the depth
    of the open calls, not the recording (module doc)."""

    def __init__(
        self, labels: _SqlLabels, depth: int | None, fold: bool, limit: int | None
    ) -> None:
        self.labels = labels
        self.deepest = sys.maxsize if depth is None else depth
        self.fold = fold
        self.cap = sys.maxsize if limit is None else limit
        self.top = _Call(None, None, None, -1, [])
        self.pending: deque[_Call] = deque()  # roots in document order, until their turn
        self.full = False  # every row to show is made: the rest of the recording cannot matter
        self.fn_labels: dict[tuple[Any, ...], str] = {}
        self.fn_info: dict[tuple[Any, ...], tuple[str, str, dict[str, Any]]] = {}
        self.sql_info: dict[str, tuple[str, str, dict[str, Any]]] = {}

    def read(self, blocks: Iterable[list[Any]]) -> bool:
        """Fold the events, paired as `CallTreeBuilder` pairs them; False if a return names a
        call closed without one (`CallPairing.late`, but for any closed call)."""
        stacks: dict[Any, list[_Call]] = {}
        opened: dict[Any, _Call] = {}  # call id -> the last open call of that id
        unreturned: set[Any] = set()
        pending, deepest, close = self.pending, self.deepest, self.close
        for block in blocks:
            for event in block:
                kind = event.get("event")
                if kind == "call":
                    thread = event.get("thread_id")
                    stack = stacks.get(thread)
                    if stack is None:
                        stack = stacks[thread] = []
                    level = len(stack)
                    key = event.get("id")
                    node = _Call(event, key, thread, level, [None] if level <= deepest else [])
                    if not level:
                        pending.append(node)
                    stack.append(node)
                    opened[key] = node
                elif kind == "return":
                    parent_id = event.get("parent_id")
                    if parent_id is None:
                        stack = stacks.get(event.get("thread_id"))
                        if not stack:
                            continue
                        target = stack[-1]
                    else:
                        found = opened.get(parent_id)
                        if found is None:
                            if parent_id in unreturned:
                                return False
                            continue
                        target = found
                        stack = stacks[target.thread]
                    target.ret = event  # (an open call has no return yet)
                    while True:
                        popped = stack.pop()
                        key = popped.id
                        if opened.get(key) is popped:
                            del opened[key]
                        if popped.ret is None:
                            unreturned.add(key)
                        close(popped, stack[-1] if stack else None)
                        if popped is target:
                            break
            if self.full and not unreturned:
                # (a call closed without a return could still get one, late, that only the
                # whole tree pairs: then the rest is read)
                return True
        for stack in stacks.values():  # calls that never returned, innermost first
            while stack:
                popped = stack.pop()
                close(popped, stack[-1] if stack else None)
        return True

    def close(self, node: _Call, parent: _Call | None) -> None:
        call = node.call
        # `_label`'s facts, remembered: a function's by its key, a SQL call's by its index name
        of = ev.kind(call)
        name = self.labels.get(call.get("id")) if of == ev.SQL else None
        if name is not None:
            facts = self.sql_info.get(name)
            if facts is None:
                facts = self.sql_info[name] = (ev.SQL, name, {})
        elif of == ev.FUNCTION:
            where = call.get("path")
            key = (*_function_key(call), where, call.get("lineno") if where else None)
            facts = self.fn_info.get(key)
            if facts is None:
                facts = self.fn_info[key] = _label(node, self.labels, self.fn_labels)  # type: ignore[arg-type]
        else:
            facts = _label(node, self.labels, self.fn_labels)  # type: ignore[arg-type]
        kind, label, extra = facts
        sig = hash((kind, label, extra.get("status"), node.h))
        rows = node.rows
        if rows:
            ret = node.ret
            spent = ret.get("elapsed") if ret else None
            if spent.__class__ is not float:  # (`ev.elapsed`, inline: once a call)
                spent = float(spent) if isinstance(spent, (int, float)) else None
            rows[0] = [node.level, kind, label, extra, 1, spent, node.id]
        if parent is not None:
            parent.h = hash((parent.h, sig))
            self.attach(parent, sig, rows)
            return
        node.done = (sig, rows)
        pending, top = self.pending, self.top
        while pending and pending[0].done is not None:
            sig, rows = pending.popleft().done
            self.attach(top, sig, rows)
            if top.at >= self.cap:
                self.full = True
                pending.clear()
                return

    def attach(self, parent: _Call, sig: int, rows: list[Any]) -> None:
        """Add a closed child's rows to its parent's: into the last run when identical."""
        if self.fold and parent.last == sig:
            base, at = parent.rows, parent.at
            for i in range(min(len(rows), len(base) - at)):
                into, more = base[at + i], rows[i]
                into[4] += more[4]
                spent = more[5]
                if spent is not None:
                    into[5] = spent if into[5] is None else into[5] + spent
            return
        base = parent.rows
        parent.last = sig
        parent.at = len(base)
        room = self.cap - len(base)
        if room > 0 and rows:
            base.extend(rows if len(rows) <= room else rows[:room])

    def result(self) -> list[dict[str, Any]]:
        out = []
        for level, kind, label, extra, count, spent, event_id in self.top.rows[: self.cap]:
            out.append(
                {
                    "depth": level,
                    "kind": kind,
                    "label": label,
                    "count": count,
                    "elapsed_ms": round_ms(spent * 1000) if spent is not None else None,
                    "event_id": event_id,
                    **extra,
                }
            )
        return out
