"""Integrations: HTTP server frameworks, SQL drivers, HTTP clients and logging, hooked on demand.

`install_all()` arms every integration. An integration is installed the moment the library it
patches is imported by the app (or at once if it already was): a tiny `sys.meta_path` finder
watches for the trigger module names below and runs the installer right after that module has
executed (a package trigger fires once the whole package is initialised, so an installer may use
its public names; a submodule trigger may use only that submodule). Nothing heavy is imported here, and a library the app never imports is never touched.

| trigger module                  | installer                                   | records                  |
|---------------------------------|---------------------------------------------|--------------------------|
| `flask`                         | `flask.install` (patches `Flask.__call__`)  | HTTP server + route      |
| `starlette.applications`        | `fastapi.install` (`Starlette.__call__`)    | HTTP server + route      |
| `django.core.handlers.wsgi/asgi`| `django.install_*` (handler `__call__`)     | HTTP server + route      |
| `django.db.backends.base.base`  | `django_db.install` (execute_wrappers)      | SQL                      |
| `wsgiref.handlers`              | `wsgi.install_wsgiref` (plain WSGI apps)    | HTTP server              |
| `uvicorn.config`                | `asgi.install_uvicorn` (plain ASGI apps)    | HTTP server              |
| `sqlite3`                       | `sqlite3.install` (connect factory)         | SQL                      |
| `sqlalchemy`                    | `sqlalchemy.install` (cursor events)        | SQL                      |
| `psycopg`, `psycopg2`           | `psycopg.install_psycopg{,2}`               | SQL                      |
| `requests`                      | `http_client.install_requests`              | HTTP client              |
| `httpx`, `httpx2`               | `http_client.install_httpx{,2}`             | HTTP client              |
| `urllib.request`                | `http_client.install_urllib`                | HTTP client              |
| `logging`                       | `logging.install` (`Logger.handle`)         | log messages             |
| `contextlib`                    | `generators.install` (generator CMs)        | one call per `with`      |

Every installer is idempotent and failure-tolerant: a library version we cannot hook is reported
once on stderr (`tracetool: the flask integration is off: …`) and on the `tracetool` logger,
and the app runs unrecorded there rather than broken. `failures()` lists those reports;
`self_check()` imports every hooked library the environment has and returns the failures — what
`tracetool install` validates.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, Callable, Optional

_PKG = __name__

# trigger module -> installers ("module:function" inside this package), in install order.
INTEGRATIONS: dict[str, tuple[str, ...]] = {
    "logging": ("logging:install",),
    "contextlib": ("generators:install",),
    "sqlite3": ("sqlite3:install",),
    "urllib.request": ("http_client:install_urllib",),
    "wsgiref.handlers": ("wsgi:install_wsgiref",),
    "flask": ("flask:install",),
    "starlette.applications": ("fastapi:install",),
    "fastapi": ("fastapi:install_fastapi",),
    "django.core.handlers.wsgi": ("django:install_wsgi",),
    "django.core.handlers.asgi": ("django:install_asgi",),
    "django.core.handlers.base": ("django:install_routes",),
    "django.test.client": ("django:install_test_client",),
    "django.db.backends.base.base": ("django_db:install",),
    "uvicorn.config": ("asgi:install_uvicorn",),
    "sqlalchemy": ("sqlalchemy:install",),
    "psycopg": ("psycopg:install_psycopg",),
    "psycopg2": ("psycopg:install_psycopg2",),
    "requests": ("http_client:install_requests",),
    "httpx": ("http_client:install_httpx",),
    "httpx2": ("http_client:install_httpx2",),
}

_lock = threading.RLock()
_pending: dict[str, tuple[str, ...]] = {}
_done: set[str] = set()
_finder: Optional[_PostImportFinder] = None
_failures: list[str] = []


def install_all() -> None:
    """Arm every integration: install now for imported libraries, on import for the rest."""
    global _finder
    # Our own helpers import `logging` (a trigger): load them before anything is armed, so no
    # installer ever runs while they are half-initialised.
    from tracetool.agent.integrations import _common  # noqa: F401

    with _lock:
        for module, installers in INTEGRATIONS.items():
            if module in _done or module in _pending:
                continue
            if module in sys.modules:
                _run(module, installers)
            else:
                _pending[module] = installers
        if _pending and _finder is None:
            _finder = _PostImportFinder()
            sys.meta_path.insert(0, _finder)


def installed() -> frozenset[str]:
    """Trigger modules whose installers have run (for tests and diagnostics)."""
    with _lock:
        return frozenset(_done)


def _run(module: str, installers: Sequence[str]) -> None:
    _done.add(module)
    for ref in installers:
        name, _, func = ref.partition(":")
        try:
            target = importlib.import_module(f"{_PKG}.{name}")
            getattr(target, func)()
        except Exception as exc:  # never break the app because a hook does not fit
            _failed(module, ref, exc)


def _failed(module: str, ref: str, exc: BaseException) -> None:
    """Report a hook that does not fit: once on stderr (pytest and servers keep stderr; a
    logger warning alone is easily swallowed), and on the `tracetool` logger when the app
    configured logging."""
    library = module.split(".")[0]
    line = (
        f"tracetool: the {library} integration is off ({ref} for {module}: "
        f"{type(exc).__name__}: {exc}); {library} is not recorded"
    )
    if line in _failures:
        return
    _failures.append(line)
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:
        pass
    import logging

    if logging.getLogger("tracetool").hasHandlers():  # (else logging's last resort prints it again)
        from tracetool.agent.integrations._common import warn

        warn(line[len("tracetool: ") :])


def failures() -> list[str]:
    """The integration failures reported so far (one line each)."""
    with _lock:
        return list(_failures)


def self_check() -> list[str]:
    """Arm the integrations, import every hooked library this environment has (so each
    installer runs), and return the failures: empty when every integration fits. Libraries that
    are not installed are skipped; a library that fails to import is not the agent's failure."""
    import importlib.util

    install_all()
    for module in INTEGRATIONS:
        top = module.split(".")[0]
        try:
            if importlib.util.find_spec(top) is None:
                continue
            importlib.import_module(module)
        except Exception:
            continue
    return failures()


def _imported(module: str) -> None:
    """Called right after `module` executed: run its installers, drop the finder when idle."""
    global _finder
    with _lock:
        installers = _pending.pop(module, None)
        if installers is None:
            return
        _run(module, installers)
        if not _pending and _finder is not None:
            try:
                sys.meta_path.remove(_finder)
            except ValueError:
                pass
            _finder = None


class _PostImportFinder(MetaPathFinder):
    """Finds nothing itself: for a watched name, it asks the other finders for the real spec and
    chains the spec's loader so the installers run right after the module body executed."""

    def __init__(self) -> None:
        self._busy = threading.local()

    def find_spec(
        self,
        fullname: str,
        path: Optional[Sequence[str]],
        target: Optional[ModuleType] = None,
    ) -> Optional[ModuleSpec]:
        if fullname not in _pending or getattr(self._busy, "name", None) == fullname:
            return None
        self._busy.name = fullname
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.name = None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _ChainedLoader(spec.loader, lambda: _imported(fullname))
        return spec


class _ChainedLoader(Loader):
    """Delegates to the real loader; after `exec_module` runs the callback. The module keeps the
    real loader as `__loader__`/`__spec__.loader` (same trick as wrapt's post-import hooks)."""

    def __init__(self, loader: Any, after: Callable[[], None]) -> None:
        self.loader = loader
        self._after = after

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)

    def create_module(self, spec: ModuleSpec) -> Optional[ModuleType]:
        return self.loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self.loader
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self.loader
        self.loader.exec_module(module)
        self._after()


def uninstall_all() -> None:
    """Undo the patches and forget what was installed (for tests). Event listeners and signal
    receivers stay connected; they are inert without the patches' requests."""
    global _finder
    from tracetool.agent.integrations._patch import unpatch_all

    with _lock:
        unpatch_all()
        _done.clear()
        _pending.clear()
        _failures.clear()
        if _finder is not None:
            try:
                sys.meta_path.remove(_finder)
            except ValueError:
                pass
            _finder = None
