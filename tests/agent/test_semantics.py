"""Instrumented code behaves exactly like the original, recorded or not (tricky constructs)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tracetool.agent.recorder import get_recorder

from .conftest import names

TRICKY = '''
import asyncio

COUNTER = 0


def uses_global():
    global COUNTER
    COUNTER += 1
    return COUNTER


def uses_nonlocal():
    total = 0
    def bump(k):
        nonlocal total
        total += k
        return total
    bump(2)
    return bump(3)


def finally_overrides():
    try:
        return "try"
    finally:
        pass


def finally_runs_after_return(log):
    try:
        return len(log)
    finally:
        log.append("finally")


def loop_with_else(n):
    for i in range(n):
        if i == 5:
            break
    else:
        return "no break"
    return "break"


def walrus_and_comprehensions(xs):
    return [y for x in xs if (y := x * 2) > 2], {x: x for x in xs}, sum(x for x in xs)


def lambdas():
    return sorted([3, 1, 2], key=lambda v: -v)


def delegating():
    yield from range(2)
    got = yield "ready"
    yield got


def gen_with_return():
    yield 1
    return "done"


def outer_gen():
    result = yield from gen_with_return()
    yield result


async def agen_with_bare_return(stop):
    yield 1
    if stop:
        return
    yield 2


async def async_stuff():
    items = [x async for x in agen_with_bare_return(True)]
    async with Ctx() as c:
        await asyncio.sleep(0)
    return items, c


class Ctx:
    async def __aenter__(self):
        return "entered"

    async def __aexit__(self, *exc):
        return False


def raises_in_finally():
    try:
        return 1
    finally:
        raise KeyError("late")


def catches_base(flag):
    try:
        if flag:
            raise SystemExit(3)
    except SystemExit as exc:
        return exc.code
    return 0


class Base:
    def hello(self):
        return "base"


class Child(Base):
    def hello(self):
        return "child+" + super().hello()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)


def only_docstring():
    """Nothing else."""


def locals_view(a, b=2):
    return sorted(k for k in locals() if not k.startswith("__tracetool"))
'''


def exercise(m: Any) -> list:
    out: list = []
    out.append(m.uses_global())
    out.append(m.uses_nonlocal())
    out.append(m.finally_overrides())
    log: list = []
    out.append((m.finally_runs_after_return(log), log))
    out.append((m.loop_with_else(3), m.loop_with_else(9)))
    out.append(m.walrus_and_comprehensions([1, 2, 3]))
    out.append(m.lambdas())
    gen = m.delegating()
    out.append([next(gen), next(gen), next(gen), gen.send("sent")])
    out.append(list(m.outer_gen()))
    out.append(asyncio.run(m.async_stuff()))
    with pytest.raises(KeyError):
        m.raises_in_finally()
    out.append((m.catches_base(True), m.catches_base(False)))
    out.append(m.Child().hello())
    out.append((m.only_docstring(), m.only_docstring.__doc__))
    out.append(m.locals_view(1))
    return out


def test_same_results_idle_and_recording(project: Any) -> None:
    project.write("tricky", TRICKY)
    project.configure()
    m = project.load("tricky")
    idle = exercise(m)
    scope = get_recorder().start_scoped("t")
    try:
        recorded = exercise(m)
    finally:
        doc = scope.stop().to_dict()
    idle[0] = recorded[0] = "counter"  # a global counter: differs by design
    assert recorded == idle
    assert idle[-1] == ["a", "b"]
    called = set(names(doc))
    for expected in (
        "tricky.uses_global",
        "tricky.bump",
        "tricky.delegating",
        "tricky.outer_gen",
        "tricky.agen_with_bare_return",
        "tricky.Ctx#__aenter__",
        "tricky.Child#hello",
        "tricky.Base#hello",
        "tricky.raises_in_finally",
    ):
        assert expected in called
    rets = {e["parent_id"]: e for e in doc["events"] if e["event"] == "return"}
    late = next(e for e in doc["events"] if e.get("method_id") == "raises_in_finally")
    assert rets[late["id"]]["exceptions"][0]["class"] == "builtins.KeyError"
