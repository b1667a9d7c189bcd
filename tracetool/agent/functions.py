"""Recorded functions: what the agent knows about each one, and the classMap built from them.

A `FunctionInfo` is created once per instrumented function (per code object) by either backend
and is referenced directly by the events recorded for it. Naming follows AppMap's Python agent:
- `defined_class` is the dotted class path for methods (`shop.models.Product`, nested classes
  `shop.models.Outer.Inner`), the module path for module-level functions (`shop.views`);
  functions nested in functions belong to their innermost enclosing class, else to the module;
- `static` is False only for instance methods (including properties); module functions, nested
  functions, staticmethods and classmethods are static. Instance methods and classmethods have a
  `receiver` (self / cls), which is not listed among `parameters`;
- `path` is relative to the project root (absolute when outside it), `lineno` is
  `co_firstlineno` (the first decorator line for decorated functions) and the classMap
  `location` is `path:lineno`, so events and classMap correlate exactly.

The classMap: module path components become packages; a module's functions hang under a class
node named after the module, a class's methods under the class (AppMap's Python layout).
Labels come from trace.yml (`labels: {label: [patterns]}`, fnmatch patterns against
`defined_class.method_id`) and from the `labels(...)` decorator (`label_function`).
"""

from __future__ import annotations

import fnmatch
import os
import threading
from collections.abc import Iterable
from types import CodeType
from typing import Any

import orjson

CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08
CO_GENERATOR = 0x20
CO_COROUTINE = 0x80
CO_ASYNC_GENERATOR = 0x200

PLAIN, GENERATOR, COROUTINE, ASYNC_GENERATOR = "function", "generator", "coroutine", "asyncgen"

# (co_filename, co_firstlineno, co_name) -> labels given by the decorator
_decorator_labels: dict[tuple[str, int, str], tuple[str, ...]] = {}
_lock = threading.Lock()
# every FunctionInfo ever created, by fid: events store the int, which keeps their tuples free
# of GC-tracked objects (the collector then skips them)
REGISTRY: list[FunctionInfo] = []


def code_kind(code: CodeType) -> str:
    flags = code.co_flags
    if flags & CO_ASYNC_GENERATOR:
        return ASYNC_GENERATOR
    if flags & CO_COROUTINE:
        return COROUTINE
    if flags & CO_GENERATOR:
        return GENERATOR
    return PLAIN


def code_key(code: CodeType) -> tuple[str, int, str]:
    return (code.co_filename, code.co_firstlineno, code.co_name)


def label_function(func: Any, names: Iterable[str]) -> None:
    """Attach labels to `func` (called by the `labels` decorator; cheap, works when inert)."""
    code = getattr(func, "__code__", None)
    if code is None:
        return
    key = code_key(code)
    with _lock:
        _decorator_labels[key] = tuple(dict.fromkeys((*_decorator_labels.get(key, ()), *names)))


def decorator_labels(code_or_key: CodeType | tuple[str, int, str]) -> tuple[str, ...]:
    key = code_or_key if isinstance(code_or_key, tuple) else code_key(code_or_key)
    return _decorator_labels.get(key, ())


def argument_names(code: CodeType) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(names, kinds) of a code object's parameters in signature order."""
    names = code.co_varnames
    npos = code.co_argcount
    nkw = code.co_kwonlyargcount
    out_names = list(names[:npos])
    kinds = ["req"] * npos
    i = npos + nkw
    if code.co_flags & CO_VARARGS:
        out_names.append(names[i])
        kinds.append("rest")
        i += 1
    out_names.extend(names[npos : npos + nkw])
    kinds.extend(["keyreq"] * nkw)
    if code.co_flags & CO_VARKEYWORDS:
        out_names.append(names[i])
        kinds.append("keyrest")
    return tuple(out_names), tuple(kinds)


def split_qualname(qualname: str) -> tuple[tuple[str, ...], bool]:
    """(enclosing classes, is_method) of a qualified name such as `A.m.<locals>.g`."""
    parts = qualname.split(".")
    classes: list[str] = []
    scopes = parts[:-1]
    is_method = False
    for i, part in enumerate(scopes):
        if part == "<locals>":
            continue
        if i + 1 < len(scopes) and scopes[i + 1] == "<locals>":
            continue  # a function scope
        classes.append(part)
    if scopes and scopes[-1] != "<locals>":
        is_method = True
    return tuple(classes), is_method


class FunctionInfo:
    """Static facts of one recorded function (see module doc)."""

    __slots__ = (
        "arg_names",
        "classes",
        "code",
        "defined_class",
        "fid",
        "filename",
        "is_method",
        "kind",
        "kinds",
        "labels",
        "lineno",
        "method_id",
        "module",
        "package",
        "param_heads",
        "path",
        "receiver",
        "receiver_name",
        "shallow",
        "static",
    )

    def __init__(
        self,
        *,
        module: str,
        qualname: str,
        name: str,
        path: str,
        lineno: int,
        arg_names: tuple[str, ...],
        kinds: tuple[str, ...],
        kind: str = PLAIN,
        package: str = "",
        shallow: bool = False,
        code: CodeType | None = None,
        decorator: str | None = None,
        filename: str = "",
    ) -> None:
        with _lock:
            self.fid = len(REGISTRY)  # events refer to functions by this index
            REGISTRY.append(self)
        self.module = module
        self.filename = filename or (code.co_filename if code is not None else path)
        self.classes, self.is_method = split_qualname(qualname)
        self.defined_class = ".".join((module, *self.classes))
        self.method_id = name
        self.path = path
        self.lineno = lineno
        self.kind = kind
        self.package = package
        self.shallow = shallow
        self.code = code
        self.labels: tuple[str, ...] | None = None
        self.arg_names = arg_names
        self.kinds = kinds
        self.param_heads: tuple[bytes, ...] = ()
        self.static = True
        self.receiver = False
        self.receiver_name = ""
        if self.is_method:
            self.set_decorator(decorator)
        else:
            self._set_heads()

    def set_decorator(self, decorator: str | None) -> None:
        """Method flavour from its decorator: None (instance), staticmethod or classmethod."""
        if not self.is_method:
            return
        has_receiver = decorator != "staticmethod" and bool(self.arg_names)
        if has_receiver and self.kinds[0] != "req":  # def m(*args): no named receiver
            has_receiver = False
        if has_receiver and not self.receiver:
            self.receiver_name = self.arg_names[0]
            self.arg_names, self.kinds = self.arg_names[1:], self.kinds[1:]
        elif not has_receiver and self.receiver and self.code is not None:
            self.arg_names, self.kinds = argument_names(self.code)
        self.receiver = has_receiver
        self.static = decorator in ("staticmethod", "classmethod")
        self._set_heads()

    def _set_heads(self) -> None:
        """`{"name":…,"kind":…,` of each parameter: the JSON each captured value follows."""
        self.param_heads = tuple(
            b'{"name":' + orjson.dumps(n) + b',"kind":' + orjson.dumps(k) + b","
            for n, k in zip(self.arg_names, self.kinds)
        )

    @property
    def location(self) -> str:
        return f"{self.path}:{self.lineno}"

    def __repr__(self) -> str:
        sep = "." if self.static else "#"
        return f"<FunctionInfo {self.defined_class}{sep}{self.method_id} {self.location}>"


def relative_path(filename: str, root: str) -> str:
    """`filename` relative to the project root, with `/` separators (absolute if outside)."""
    try:
        rel = os.path.relpath(filename, root)
    except ValueError:  # another drive on Windows
        return filename.replace(os.sep, "/")
    if rel.startswith(".."):
        return filename.replace(os.sep, "/")
    return rel.replace(os.sep, "/")


def info_for_code(
    code: CodeType, module: str, root: str, package: str = "", shallow: bool = False
) -> FunctionInfo:
    """A FunctionInfo from a code object alone (qualname from `co_qualname` where it exists)."""
    names, kinds = argument_names(code)
    return FunctionInfo(
        module=module,
        qualname=getattr(code, "co_qualname", code.co_name),
        name=code.co_name,
        path=relative_path(code.co_filename, root),
        lineno=code.co_firstlineno,
        arg_names=names,
        kinds=kinds,
        kind=code_kind(code),
        package=package,
        shallow=shallow,
        code=code,
    )


def labels_for(info: FunctionInfo, config_labels: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Labels of a function: trace.yml patterns plus decorator labels (cached on the info)."""
    if info.labels is not None:
        return info.labels
    full = f"{info.defined_class}.{info.method_id}"
    found = [
        label
        for label, patterns in config_labels.items()
        if any(fnmatch.fnmatchcase(full, p) for p in patterns)
    ]
    found.extend(decorator_labels((info.filename, info.lineno, info.method_id)))
    info.labels = tuple(dict.fromkeys(found))
    return info.labels


def build_class_map(
    infos: Iterable[FunctionInfo], config_labels: dict[str, tuple[str, ...]] | None = None
) -> list[dict[str, Any]]:
    """The AppMap classMap tree of the given functions (see module doc)."""
    roots: list[dict[str, Any]] = []
    index: dict[tuple[Any, ...], dict[str, Any]] = {}

    def child(parent_key: tuple[Any, ...], siblings: list, name: str, kind: str) -> tuple:
        key = (*parent_key, kind, name)
        node = index.get(key)
        if node is None:
            node = {"name": name, "type": kind, "children": []}
            index[key] = node
            siblings.append(node)
        return key

    for info in sorted(infos, key=lambda i: (i.defined_class, i.path, i.lineno, i.method_id)):
        parts = info.module.split(".")
        key: tuple[Any, ...] = ()
        siblings = roots
        owners = [(p, "package") for p in parts[:-1]]
        if info.classes:
            owners.append((parts[-1], "package"))
            owners.extend((c, "class") for c in info.classes)
        elif len(parts) == 1 or info.path.endswith("__init__.py"):
            # a package's __init__ (the app-factory `create_app`) or a top-level module: the
            # functions sit in a class named like it *inside* its package node — never a
            # class-typed root, never a second node beside the package of its submodules
            owners.append((parts[-1], "package"))
            owners.append((parts[-1], "class"))
        else:
            owners.append((parts[-1], "class"))
        for name, kind in owners:
            key = child(key, siblings, name, kind)
            siblings = index[key]["children"]
        fn: dict[str, Any] = {
            "name": info.method_id,
            "type": "function",
            "location": info.location,
            "static": info.static,
        }
        labels = labels_for(info, config_labels or {})
        if labels:
            fn["labels"] = list(labels)
        siblings.append(fn)
    return roots
