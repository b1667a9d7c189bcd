"""Starlette and FastAPI: `Starlette.__call__` (FastAPI's `__call__` ends there too) goes through
the ASGI recording middleware. The route template is read from `scope["route"]` after routing
(see `asgi._route_from_scope`); the 500 and the exception come from Starlette's
`ServerErrorMiddleware`, which sends the error response and then re-raises.
"""

from __future__ import annotations

from typing import Any

from tracetool.agent.integrations._common import add_framework
from tracetool.agent.integrations._patch import replace_method
from tracetool.agent.integrations.asgi import wrap_asgi


def install() -> None:
    from starlette import applications

    def make(original: Any) -> Any:
        async def __call__(self: Any, scope: Any, receive: Any, send: Any) -> None:
            async def run(s: Any, r: Any, w: Any) -> None:
                await original(self, s, r, w)

            await wrap_asgi(self, scope, receive, send, run)

        return __call__

    if replace_method(applications.Starlette, "__call__", make):
        add_framework("starlette", "starlette")


def install_fastapi() -> None:
    add_framework("fastapi", "fastapi")
