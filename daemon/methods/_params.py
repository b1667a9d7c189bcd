"""Parameter checks shared by the methods: each failure is a -32602 naming the parameter."""

from __future__ import annotations

from typing import Any

from tracetool_daemon.registry import ParamError


def opt_str(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ParamError(f"{name} must be a string")
    return value


def req_str(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParamError(f"{name} must be a non-empty string")
    return value


def opt_int(value: Any, name: str, *, minimum: int = 0, maximum: int | None = None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(f"{name} must be an integer")
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and at most {maximum}" if maximum is not None else ""
        raise ParamError(f"{name} must be at least {minimum}{upper}")
    return value


def opt_bool(value: Any, name: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ParamError(f"{name} must be true or false")
    return value


def str_list(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ParamError(f"{name} must be a list of strings")
    return value
