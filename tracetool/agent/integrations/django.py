"""Django: the WSGI and ASGI handlers (`WSGIHandler.__call__`, `ASGIHandler.__call__`) and the
test client's handler go through the recording middleware. The route template comes from
`BaseHandler.resolve_request` (the `ResolverMatch.route`, e.g. `orders/<int:pk>/` →
`/orders/{pk}/`; regex routes `(?P<pk>…)` → `{pk}`); exceptions Django turns into a 500 come from
the `got_request_exception` signal.
"""

from __future__ import annotations

import sys
from typing import Any

from tracetool.agent.integrations._common import add_framework, header_dict
from tracetool.agent.integrations._patch import patch_method, replace_method
from tracetool.agent.integrations.http_server import current_request


def install_wsgi() -> None:
    from django.core.handlers import wsgi

    from tracetool.agent.integrations.wsgi import wrap_call

    def call(original: Any, self: Any, environ: Any, start_response: Any) -> Any:
        return wrap_call(self, environ, start_response, lambda e, s: original(self, e, s))

    patch_method(wsgi.WSGIHandler, "__call__", call)
    add_framework("django", "django")


def install_asgi() -> None:
    from django.core.handlers import asgi as django_asgi

    from tracetool.agent.integrations.asgi import wrap_asgi

    def make(original: Any) -> Any:
        # exact parameters: uvicorn calls an app without arguments to tell it from a factory
        async def __call__(self: Any, scope: Any, receive: Any, send: Any) -> None:
            async def run(s: Any, r: Any, w: Any) -> None:
                await original(self, s, r, w)

            await wrap_asgi(self, scope, receive, send, run)

        return __call__

    replace_method(django_asgi.ASGIHandler, "__call__", make)
    add_framework("django", "django")


def install_routes() -> None:
    from django.core import signals
    from django.core.handlers import base

    def resolve_request(original: Any, self: Any, request: Any) -> Any:
        match = original(self, request)
        current = current_request.get()
        if current is not None:
            route = getattr(match, "route", None)
            kwargs = getattr(match, "kwargs", None)
            current.set_route(
                "/" + str(route).lstrip("^/") if route is not None else None,
                kwargs if isinstance(kwargs, dict) else None,
            )
        return match

    if patch_method(base.BaseHandler, "resolve_request", resolve_request):
        signals.got_request_exception.connect(_request_exception, weak=False)


def install_test_client() -> None:
    """`django.test.Client` calls `ClientHandler(environ)` (no WSGI `start_response`)."""
    from django.test import client

    from tracetool.agent.integrations.wsgi import begin_environ

    def call(original: Any, self: Any, environ: Any) -> Any:
        if current_request.get() is not None:
            return original(self, environ)
        request = begin_environ(environ)
        try:
            response = original(self, environ)
        except BaseException as exc:
            request.finish(None, None, exc)
            raise
        request.finish(response.status_code, header_dict(response.items()))
        return response

    patch_method(client.ClientHandler, "__call__", call)
    add_framework("django", "django")


def _request_exception(sender: Any, request: Any = None, **extra: Any) -> None:
    current = current_request.get()
    exc = sys.exc_info()[1]
    if current is not None and exc is not None:
        current.add_exception(exc)
