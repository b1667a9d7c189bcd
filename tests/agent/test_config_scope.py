"""What gets instrumented: exclude, shallow, and modules imported before the agent started."""

from __future__ import annotations

from typing import Any

from tracetool.agent.recorder import get_recorder

from .conftest import names, tree


def record(func: Any) -> dict:
    scope = get_recorder().start_scoped("t")
    try:
        func()
    finally:
        recording = scope.stop()
    return recording.to_dict()


def test_exclude_modules_classes_and_functions(project: Any) -> None:
    project.write("keep", "def kept():\n    return 1\n\ndef dropped():\n    return 2\n")
    project.write("secret", "def hidden():\n    return 3\n")
    project.write(
        "models",
        "class Public:\n    def ok(self):\n        return 1\n\n"
        "class Private:\n    def no(self):\n        return 2\n",
    )
    project.configure(
        """
        packages:
          - path: PKG
            exclude: [secret, PKG.models.Private, keep.dropped]
        """
    )
    keep, secret, models = (project.load(n) for n in ("keep", "secret", "models"))
    doc = record(
        lambda: (
            keep.kept(),
            keep.dropped(),
            secret.hidden(),
            models.Public().ok(),
            models.Private().no(),
        )
    )
    assert names(doc) == ["keep.kept", "models.Public#ok"]


def test_shallow_package_records_only_calls_into_it(project: Any) -> None:
    project.write(
        "lib",
        """
        def entry(cb):
            return helper() + cb()

        def helper():
            return inner()

        def inner():
            return 1
        """,
    )
    project.write(
        "app",
        """
        from . import lib

        def callback():
            return lib.helper()

        def main():
            return lib.entry(callback)
        """,
    )
    project.configure(
        """
        packages:
          - path: PKG.app
          - path: PKG.lib
            shallow: true
        """
    )
    app = project.load("app")
    doc = record(app.main)
    # helper/inner called from lib itself are not recorded; lib.helper called back from app is
    assert tree(doc) == [
        ["app.main", [["lib.entry", [["app.callback", [["lib.helper", []]]]]]]],
    ]


def test_modules_imported_before_activation_are_instrumented_in_place(project: Any) -> None:
    project.write(
        "early",
        """
        ROUTES = {}

        def route(path):
            def register(func):
                ROUTES[path] = func
                return func
            return register

        @route("/")
        def index():
            return helper()

        def helper():
            return "ok"

        def make_counter():
            count = [0]
            def bump():
                count[0] += 1
                return count[0]
            return bump

        BUMP = make_counter()

        class Service:
            def run(self):
                return index()
        """,
    )
    early = project.load("early")  # not configured yet: a plain import
    view = early.ROUTES["/"]
    bump = early.BUMP
    original_code = early.helper.__code__
    project.configure()  # now the package is configured: instrumented in place
    assert early.ROUTES["/"] is view is early.index
    doc = record(lambda: (view(), bump(), early.Service().run()))
    assert tree(doc) == [
        ["early.index", [["early.helper", []]]],
        ["early.bump", []],
        ["early.Service#run", [["early.index", [["early.helper", []]]]]],
    ]
    assert bump() == 2  # the closure kept its state
    assert early.helper.__code__.co_firstlineno == original_code.co_firstlineno


def test_library_code_is_not_instrumented(project: Any) -> None:
    project.write(
        "uses_json",
        "import json\n\ndef dump(x):\n    return json.dumps(x)\n",
    )
    project.configure()
    mod = project.load("uses_json")
    doc = record(lambda: mod.dump({"a": 1}))
    assert names(doc) == ["uses_json.dump"]
