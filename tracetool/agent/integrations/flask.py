"""Flask: every app's WSGI entry (`Flask.__call__`) goes through the recording middleware, so
the test client and any server are covered. The route template comes from `request.url_rule`
(signal `request_started`; `/products/<int:id>` → `/products/{id}`), and exceptions Flask turns
into a 500 itself come from `got_request_exception`.
"""

from __future__ import annotations

from typing import Any

from tracetool.agent.integrations._common import add_framework
from tracetool.agent.integrations._patch import patch_method
from tracetool.agent.integrations.http_server import current_request
from tracetool.agent.integrations.wsgi import wrap_call


def install() -> None:
    import flask
    from flask import signals

    def call(original: Any, self: Any, environ: Any, start_response: Any) -> Any:
        return wrap_call(self, environ, start_response, lambda e, s: original(self, e, s))

    if patch_method(flask.Flask, "__call__", call):
        signals.request_started.connect(_request_started, weak=False)
        signals.got_request_exception.connect(_request_exception, weak=False)
        add_framework("flask", "flask")


def _request_started(sender: Any, **extra: Any) -> None:
    request = current_request.get()
    if request is None:
        return
    from flask import request as flask_request

    rule = getattr(flask_request, "url_rule", None)
    if rule is not None:
        request.set_route(rule.rule)


def _request_exception(sender: Any, exception: BaseException, **extra: Any) -> None:
    request = current_request.get()
    if request is not None:
        request.add_exception(exception)
