"""Monkey-patching with a record of what was patched, so every patch is applied once and can be
undone (tests). `patch_method(owner, name, wrapper)` replaces `owner.name` by a function calling
`wrapper(original, *args, **kwargs)`; the replacement keeps the original's name, docstring and
signature metadata (`functools.wraps`) and stays a plain function, so it binds like the original.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

_MARK = "__tracetool_original__"
_patched: list[tuple[Any, str, Any]] = []


def is_patched(owner: Any, name: str) -> bool:
    current = inspect.getattr_static(owner, name, None)
    return hasattr(getattr(current, "__func__", current), _MARK)


def patch_method(owner: Any, name: str, wrapper: Callable[..., Any]) -> bool:
    """Patch `owner.name` (class or module attribute). Returns False if already patched."""
    if is_patched(owner, name):
        return False
    original_static = inspect.getattr_static(owner, name)
    original = getattr(owner, name)
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def patched_async(*args: Any, **kwargs: Any) -> Any:
            return await wrapper(original, *args, **kwargs)

        replacement: Any = patched_async
    else:

        @functools.wraps(original)
        def patched(*args: Any, **kwargs: Any) -> Any:
            return wrapper(original, *args, **kwargs)

        replacement = patched
    setattr(replacement, _MARK, original_static)
    if isinstance(original_static, staticmethod):
        replacement = staticmethod(replacement)
    elif isinstance(original_static, classmethod):
        raise TypeError(f"cannot patch classmethod {owner!r}.{name}")
    setattr(owner, name, replacement)
    _patched.append((owner, name, original_static))
    return True


def replace_method(owner: Any, name: str, make: Callable[[Any], Any]) -> bool:
    """Like `patch_method`, but `make(original)` builds the replacement itself — for a
    coroutine method that must keep its exact parameters, so that a call with missing
    arguments fails at once as the original does (uvicorn tells an app from an app factory by
    calling it without arguments). Returns False if already patched."""
    if is_patched(owner, name):
        return False
    original_static = inspect.getattr_static(owner, name)
    replacement = functools.wraps(getattr(owner, name))(make(getattr(owner, name)))
    setattr(replacement, _MARK, original_static)
    setattr(owner, name, replacement)
    _patched.append((owner, name, original_static))
    return True


def unpatch_all() -> None:
    """Undo every patch (newest first). For tests."""
    while _patched:
        owner, name, original = _patched.pop()
        setattr(owner, name, original)
