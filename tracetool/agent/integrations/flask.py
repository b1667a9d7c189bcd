"""Flask: every app's WSGI entry (`Flask.__call__`) goes through the recording middleware, so
the test client and any server are covered. The route template (`/products/<int:id>` →
`/products/{id}`) and the path parameters come from the request when Flask dispatches it
(`Flask.dispatch_request`), and the exceptions Flask turns into a 500 itself from
`Flask.handle_exception` — no signals, so Flask < 2.3 without blinker is covered too.
"""

from __future__ import annotations

from typing import Any

from tracetool.agent.integrations._common import add_framework
from tracetool.agent.integrations._patch import patch_method
from tracetool.agent.integrations.http_server import current_request
from tracetool.agent.integrations.wsgi import wrap_call


def install() -> None:
    import flask

    def call(original: Any, self: Any, environ: Any, start_response: Any) -> Any:
        return wrap_call(self, environ, start_response, lambda e, s: original(self, e, s))

    def dispatch_request(original: Any, self: Any, *args: Any, **kwargs: Any) -> Any:
        _request_started()
        return original(self, *args, **kwargs)

    def handle_exception(original: Any, self: Any, e: BaseException) -> Any:
        request = current_request.get()
        if request is not None:
            request.add_exception(e)
        return original(self, e)

    if patch_method(flask.Flask, "__call__", call):
        patch_method(flask.Flask, "dispatch_request", dispatch_request)
        patch_method(flask.Flask, "handle_exception", handle_exception)
        add_framework("flask", "flask")


def _request_started() -> None:
    request = current_request.get()
    if request is None or request.route is not None:
        return
    try:
        from flask import request as flask_request

        rule = getattr(flask_request, "url_rule", None)
        if rule is not None:
            request.set_route(rule.rule, getattr(flask_request, "view_args", None))
    except Exception:  # outside a request context (a test calling dispatch_request directly)
        pass
