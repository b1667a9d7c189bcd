"""A bytecode cache for rewritten modules (Python 3.9–3.11), so restarts do not re-parse them.

Rewriting a module costs a parse and a compile from the tree (several times a plain `.pyc`
load), on every start of the app. The rewritten code is cached beside the normal bytecode as
`__pycache__/<module>.<tag>.opt-tracetool<VERSION>.pyc` — a name no other tool reads — holding
the code with placeholder constants `("__tracetool_fid__", i)` where function ids go, and the
static facts of each function; loading re-registers the functions and `bind`s the placeholders
to their ids. The entry is valid for the source's size and mtime, the interpreter's magic
number, this file format's VERSION and the module's configuration (name, package, exclude).
A cache that cannot be read or written is simply not used (`sys.dont_write_bytecode` honoured).
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import sys
from types import CodeType
from typing import Any

VERSION = 1  # bump whenever rewrite.py's output changes
MARKER = "__tracetool_fid__"

Spec = tuple  # (qualname, name, lineno, names, kinds, decorator, kind): what `register` takes


def placeholder(index: int) -> tuple[str, int]:
    return (MARKER, index)


def bind(code: CodeType, fids: list[int]) -> CodeType:
    """`code` (and its nested code) with every placeholder replaced by its function id."""
    consts = []
    changed = False
    for const in code.co_consts:
        if type(const) is tuple and len(const) == 2 and const[0] == MARKER:
            const = fids[const[1]]
            changed = True
        elif isinstance(const, CodeType):
            bound = bind(const, fids)
            changed = changed or bound is not const
            const = bound
        consts.append(const)
    return code.replace(co_consts=tuple(consts)) if changed else code


def _path(source_path: str) -> str | None:
    try:
        return importlib.util.cache_from_source(source_path, optimization=f"tracetool{VERSION}")
    except (NotImplementedError, ValueError):
        return None


def _stamp(source_path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(source_path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def load(source_path: str, key: Any) -> tuple[list[Spec], CodeType] | None:
    """(specs, unbound code) from the cache, or None when absent or stale."""
    path = _path(source_path)
    stamp = _stamp(source_path)
    if path is None or stamp is None:
        return None
    try:
        with open(path, "rb") as handle:
            magic, version, cached_stamp, cached_key, specs, code = marshal.loads(handle.read())
    except Exception:  # absent, unreadable, truncated, or another format
        return None
    if (magic, version, cached_stamp, cached_key) != (
        importlib.util.MAGIC_NUMBER,
        VERSION,
        stamp,
        key,
    ):
        return None
    return list(specs), code


def store(source_path: str, key: Any, specs: list[Spec], code: CodeType) -> None:
    """Cache the rewritten module (atomically; silently skipped when that is not possible)."""
    if sys.dont_write_bytecode:
        return
    path = _path(source_path)
    stamp = _stamp(source_path)
    if path is None or stamp is None:
        return
    try:
        payload = marshal.dumps(
            (importlib.util.MAGIC_NUMBER, VERSION, stamp, key, tuple(specs), code)
        )
        from tracetool.trace.atomic import atomic_write_bytes

        atomic_write_bytes(path, payload, fsync=False)  # a cache: no fsync
    except Exception:
        pass
