"""Which code gets recorded, and hooking it: the import hook and the scan of loaded modules.

`install(config)` (once per process) picks the mechanism — `sys.monitoring` on Python 3.12+
(`tracetool.agent.monitor`), source rewriting before (`tracetool.agent.rewrite`);
`TRACETOOL_INSTRUMENTATION=monitoring|rewrite` overrides — then:
1. puts a finder first on `sys.meta_path`: a module covered by trace.yml's `packages` (and not
   excluded) that would load from a `.py` file gets a loader that hands its code to the mechanism
   (`get_code`, so `python -m pkg.mod` through runpy is covered too);
2. instruments configured modules that were imported before: their functions are found through
   the garbage collector (so closures and functions held only by registries are covered) and
   switched on in place.
`exclude` entries may name sub-modules, classes or single functions (`shop.models.Secret`,
`shop.views.health`). The agent's own modules are never instrumented.
`mechanism()` says which mechanism is active (None before `install`).
"""

from __future__ import annotations

import ast
import builtins
import gc
import importlib.machinery
import os
import sys
import threading
from types import CodeType, FunctionType, ModuleType
from typing import Any

from tracetool.agent.functions import FunctionInfo, info_for_code, relative_path
from tracetool.agent.recorder import get_recorder
from tracetool.config import Config, PackageSpec

MONITORING, REWRITE = "sys.monitoring", "rewrite"
_SKIP_PREFIXES = ("tracetool", "pytest_tracetool")
CO_OPTIMIZED = 0x01

_lock = threading.RLock()
_manager: _Manager | None = None


def mechanism() -> str | None:
    return None if _manager is None else _manager.mechanism


def choose_mechanism() -> str:
    wanted = os.environ.get("TRACETOOL_INSTRUMENTATION", "").strip().lower()
    if wanted in ("rewrite", "ast"):
        return REWRITE
    if wanted in ("monitoring", "sys.monitoring") and hasattr(sys, "monitoring"):
        return MONITORING
    return MONITORING if sys.version_info >= (3, 12) else REWRITE


def install(config: Config) -> None:
    """Instrument trace.yml's packages now and at every later import.

    Called again with another configuration, later imports follow the new one and configured
    modules already imported are instrumented now; what is instrumented stays instrumented.
    """
    global _manager
    with _lock:
        if _manager is not None:
            if config is not _manager.config:
                _manager.config = config
                _manager.root = str(config.root)
                _manager.instrument_loaded()
            return
        manager = _Manager(config, choose_mechanism())
        sys.meta_path.insert(0, _Finder(manager))
        _manager = manager
        manager.instrument_loaded()


def manager() -> _Manager | None:
    return _manager


def _is_function_code(code: CodeType) -> bool:
    return bool(code.co_flags & CO_OPTIMIZED) and not code.co_name.startswith("<")


def walk_code(code: CodeType) -> list[CodeType]:
    """`code` and every code object nested in it."""
    out = []
    todo = [code]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(c for c in current.co_consts if isinstance(c, CodeType))
    return out


class _Manager:
    def __init__(self, config: Config, mechanism: str) -> None:
        self.config = config
        self.root = str(config.root)
        self.mechanism = mechanism
        self.recorder = get_recorder()
        self.done_files: set[str] = set()
        self.backend: Any
        if mechanism == MONITORING:
            from tracetool.agent.monitor import MonitoringBackend

            self.backend = MonitoringBackend(self.recorder)
        else:
            from tracetool.agent.rewrite import Hooks

            self.hooks = Hooks(self.recorder)
            self.recorder.add_listener(self.hooks)
            builtins.__tracetool__ = self.hooks  # type: ignore[attr-defined]

    # -- what is configured ---------------------------------------------------------------
    def package_for(self, module: str) -> PackageSpec | None:
        if module.startswith(_SKIP_PREFIXES) and module.split(".")[0] in _SKIP_PREFIXES:
            return None
        for spec in self.config.packages:
            if spec.covers(module):
                return spec
        return None

    @staticmethod
    def _excluded(pkg: PackageSpec, info: FunctionInfo) -> bool:
        if not pkg.exclude:
            return False
        names = (info.defined_class, f"{info.defined_class}.{info.method_id}")
        for ex in pkg.exclude:
            full = ex if ex.startswith(pkg.path) else f"{pkg.path}.{ex}"
            if any(n == full or n.startswith(full + ".") for n in names):
                return True
        return False

    # -- sys.monitoring -------------------------------------------------------------------------
    def register_code(self, code: CodeType, module: str, pkg: PackageSpec) -> None:
        for nested in walk_code(code):
            if not _is_function_code(nested) or self.backend.info_for(nested) is not None:
                continue
            info = info_for_code(nested, module, self.root, pkg.path, pkg.shallow)
            if not self._excluded(pkg, info):
                self.backend.register(nested, info)

    def classify(self, module: ModuleType) -> None:
        """staticmethod/classmethod flavours, known only once the class bodies ran."""
        seen: set[int] = set()
        todo = [v for v in vars(module).values() if isinstance(v, type)]
        while todo:
            cls = todo.pop()
            if id(cls) in seen or getattr(cls, "__module__", None) != module.__name__:
                continue
            seen.add(id(cls))
            for attr in list(vars(cls).values()):
                if isinstance(attr, type):
                    todo.append(attr)
                    continue
                kind = None
                if isinstance(attr, staticmethod):
                    kind = "staticmethod"
                elif isinstance(attr, classmethod):
                    kind = "classmethod"
                func = getattr(attr, "__func__", None)
                code = getattr(func, "__code__", None)
                if kind and code is not None:
                    info = self.backend.info_for(code)
                    if info is not None:
                        info.set_decorator(kind)

    # -- rewriting ------------------------------------------------------------------------------
    def rewrite(self, source: bytes, filename: str, module: str, pkg: PackageSpec) -> CodeType:
        """The instrumented code of a module (from the rewrite cache when it is fresh)."""
        from tracetool.agent import rewrite_cache
        from tracetool.agent.rewrite import rewrite_module

        path = relative_path(filename, self.root)

        def register(qualname, name, lineno, names, kinds, decorator, kind) -> int:  # type: ignore[no-untyped-def]
            info = FunctionInfo(
                module=module,
                qualname=qualname,
                name=name,
                path=path,
                lineno=lineno,
                arg_names=names,
                kinds=kinds,
                kind=kind,
                package=pkg.path,
                shallow=pkg.shallow,
                decorator=decorator,
                filename=filename,
            )
            return -1 if self._excluded(pkg, info) else info.fid

        key = (module, pkg.path, tuple(pkg.exclude))
        cached = rewrite_cache.load(filename, key)
        if cached is not None:
            specs, code = cached
            fids = [register(*spec) for spec in specs]
            if -1 not in fids:
                return rewrite_cache.bind(code, fids)
        tree = ast.parse(source, filename=filename)  # the module's own syntax errors surface here
        try:
            code, specs, fids = rewrite_module(source, filename, register, tree)
        except Exception as exc:  # our rewrite failed: run the module as written, unrecorded
            print(f"tracetool: {module} not instrumented ({exc})", file=sys.stderr)
            return compile(source, filename, "exec", dont_inherit=True)
        rewrite_cache.store(filename, key, specs, code)
        return rewrite_cache.bind(code, fids)

    # -- modules imported before activation ---------------------------------------------------
    def instrument_loaded(self) -> None:
        targets: dict[str, tuple[ModuleType, PackageSpec]] = {}
        for name, module in list(sys.modules.items()):
            pkg = self.package_for(name)
            filename = getattr(module, "__file__", None)
            if pkg is None or not filename or not filename.endswith(".py"):
                continue
            if filename in self.done_files:
                continue
            targets[filename] = (module, pkg)
        if not targets:
            return
        functions: dict[str, list[FunctionType]] = {}
        for obj in gc.get_objects():
            if type(obj) is FunctionType:
                filename = obj.__code__.co_filename
                if filename in targets:
                    functions.setdefault(filename, []).append(obj)
        for filename, (module, pkg) in targets.items():
            self.done_files.add(filename)
            try:
                self._instrument_existing(module, pkg, filename, functions.get(filename, []))
            except Exception as exc:  # a module we cannot read is simply not recorded
                print(f"tracetool: {module.__name__} not instrumented ({exc})", file=sys.stderr)

    def _instrument_existing(
        self, module: ModuleType, pkg: PackageSpec, filename: str, funcs: list[FunctionType]
    ) -> None:
        if self.mechanism == MONITORING:
            for func in funcs:
                self.register_code(func.__code__, module.__name__, pkg)
            self.classify(module)
            return
        with open(filename, "rb") as handle:
            source = handle.read()
        code = self.rewrite(source, filename, module.__name__, pkg)
        fresh = {(c.co_name, c.co_firstlineno): c for c in walk_code(code)}
        for func in funcs:
            old = func.__code__
            new = fresh.get((old.co_name, old.co_firstlineno))
            if new is not None and new.co_freevars == old.co_freevars and new is not old:
                func.__code__ = new


class _Loader(importlib.machinery.SourceFileLoader):
    """A source loader whose code goes through the active mechanism."""

    def __init__(self, fullname: str, path: str, manager: _Manager, pkg: PackageSpec) -> None:
        super().__init__(fullname, path)
        self._manager = manager
        self._pkg = pkg

    def get_code(self, fullname: str) -> CodeType:  # type: ignore[override]
        manager = self._manager
        if manager.mechanism == MONITORING:
            code = super().get_code(fullname)
            if code is not None:
                manager.register_code(code, fullname, self._pkg)
            return code  # type: ignore[return-value]
        path = self.get_filename(fullname)
        return manager.rewrite(self.get_data(path), path, fullname, self._pkg)

    def exec_module(self, module: ModuleType) -> None:
        self._manager.done_files.add(self.path)
        super().exec_module(module)
        if self._manager.mechanism == MONITORING:
            try:
                self._manager.classify(module)
            except Exception:
                pass


class _Finder:
    """First on sys.meta_path: gives configured source modules the instrumenting loader."""

    def __init__(self, manager: _Manager) -> None:
        self._manager = manager
        self._local = threading.local()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        pkg = self._manager.package_for(fullname)
        if pkg is None or getattr(self._local, "busy", False):
            return None
        self._local.busy = True
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._local.busy = False
        if (
            spec is None
            or type(spec.loader) is not importlib.machinery.SourceFileLoader
            or not spec.origin
        ):
            return spec
        spec.loader = _Loader(fullname, spec.origin, self._manager, pkg)
        return spec

    def invalidate_caches(self) -> None:
        pass
