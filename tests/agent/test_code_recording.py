"""Code recording: every kind of function, nesting, values, classMap, and what must not change."""

from __future__ import annotations

import asyncio
import inspect
import os
import pickle
import sys
import threading
import traceback
from typing import Any, Callable

import pytest

from tracetool.agent import instrument
from tracetool.agent.recorder import get_recorder

from .conftest import calls, flat, names, returns_by_call, tree

SHOP = '''
from __future__ import annotations

import functools
from tracetool.agent import labels

REGISTRY = {}


def route(path):
    def register(func):
        REGISTRY[path] = func
        return func
    return register


def logged(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


class Product:
    """A product."""

    count = 0

    def __init__(self, name, cents=100):
        self.name = name
        self.cents = cents

    def __repr__(self):
        return f"Product({self.name!r})"

    @property
    def price(self):
        return self.cents / 100

    @classmethod
    def create(cls, name):
        return cls(name)

    @staticmethod
    def tax(amount, *, rate=0.5):
        return amount * rate

    def total(self, *items, **options):
        return self.price + sum(items)


@route("/products/<id>")
def show(id):
    return {"id": id}


@logged
def greet(name):
    return "hi " + name


def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def make_adder(k):
    def add(x):
        return x + k
    return add


def fail(message):
    raise ValueError(message)


def fail_with_cause():
    try:
        fail("inner")
    except ValueError as exc:
        raise RuntimeError("outer") from exc


def catches():
    try:
        fail("caught")
    except ValueError:
        return "recovered"


def numbers(n):
    for i in range(n):
        yield i * 10


def consume():
    out = []
    for value in numbers(2):
        out.append(fact(1))
    return out


async def fetch(i):
    await asyncio_sleep()
    return i * 2


async def asyncio_sleep():
    import asyncio
    await asyncio.sleep(0)


async def gather_all():
    import asyncio
    return await asyncio.gather(fetch(1), fetch(2))


async def ticks():
    await asyncio_sleep()
    yield "a"
    await asyncio_sleep()
    yield "b"


async def collect():
    return [t async for t in ticks()]


@labels("security", "audit")
def login(user):
    return True


def bad_repr_param(obj):
    return None


class BadRepr:
    def __repr__(self):
        raise RuntimeError("nope")
'''


def record(func: Callable[[], Any]) -> dict:
    scope = get_recorder().start_scoped("test")
    try:
        func()
    finally:
        recording = scope.stop()
    return recording.to_dict()


@pytest.fixture
def shop(project: Any) -> Any:
    project.write("shop", SHOP)
    project.configure(
        """
        name: demo
        packages:
          - path: PKG
        labels:
          money: ["PKG.shop.Product.price", "PKG.shop.Product.tax*"]
        safe_repr: [PKG.shop.Product, PKG.shop.BadRepr]  # (opt-ins: their repr() is shown)
        """
    )
    return project.load("shop")


def test_mechanism_matches_the_interpreter(shop: Any) -> None:
    forced = os.environ.get("TRACETOOL_INSTRUMENTATION")
    expected = "sys.monitoring" if sys.version_info >= (3, 12) else "rewrite"
    if forced:
        expected = "rewrite" if forced == "rewrite" else "sys.monitoring"
    assert instrument.mechanism() == expected


def test_function_call_and_return_fields(shop: Any, project: Any) -> None:
    doc = record(lambda: shop.fact(1))
    call, ret = doc["events"]
    assert call == {
        "id": 1,
        "event": "call",
        "thread_id": 1,
        "defined_class": f"{project.pkg}.shop",
        "method_id": "fact",
        "path": f"{project.pkg}/shop.py",
        "lineno": inspect.getsourcelines(shop.fact)[1],
        "static": True,
        "parameters": [
            {"name": "n", "class": "builtins.int", "value": "1", "object_id": id(1), "kind": "req"}
        ],
    }
    assert ret["parent_id"] == 1 and ret["thread_id"] == 1
    assert ret["return_value"] == {"class": "builtins.int", "value": "1", "object_id": id(1)}
    assert ret["elapsed"] >= 0 and ret["elapsed_instrumentation"] > 0


def test_methods_properties_classmethods_staticmethods(shop: Any, project: Any) -> None:
    def run() -> None:
        p = shop.Product.create("tea")
        assert p.price == 1.0
        assert shop.Product.tax(4) == 2.0
        assert p.total(1, 2, fast=True) == 4.0

    doc = record(run)
    assert names(doc) == [
        "shop.Product.create",
        "shop.Product#__init__",
        "shop.Product#price",
        "shop.Product.tax",
        "shop.Product#total",
        "shop.Product#price",
    ]
    by_name = {c["method_id"]: c for c in calls(doc)}
    create = by_name["create"]
    assert create["static"] is True
    assert create["receiver"]["class"] == "builtins.type"
    assert create["receiver"]["value"] == f"<class '{project.pkg}.shop.Product'>"
    assert [p["name"] for p in create["parameters"]] == ["name"]
    assert "receiver" not in by_name["tax"]
    assert [(p["name"], p["kind"]) for p in by_name["tax"]["parameters"]] == [
        ("amount", "req"),
        ("rate", "keyreq"),
    ]
    price = by_name["price"]
    assert price["static"] is False
    assert price["receiver"] == {
        "class": f"{project.pkg}.shop.Product",
        "value": "Product('tea')",
        "object_id": price["receiver"]["object_id"],
    }
    total = by_name["total"]
    assert [(p["name"], p["kind"], p["value"]) for p in total["parameters"]] == [
        ("items", "rest", "(1, 2)"),
        ("options", "keyrest", "{'fast': True}"),
    ]
    assert tree(doc)[0] == ["shop.Product.create", [["shop.Product#__init__", []]]]


def test_decorated_registered_and_closures(shop: Any) -> None:
    def run() -> None:
        assert shop.REGISTRY["/products/<id>"](7) == {"id": 7}
        assert shop.greet("bo") == "hi bo"
        assert shop.make_adder(1)(2) == 3

    doc = record(run)
    assert tree(doc) == [
        ["shop.show", []],
        ["shop.wrapper", [["shop.greet", []]]],
        ["shop.make_adder", []],
        ["shop.add", []],
    ]
    show = calls(doc)[0]
    assert show["lineno"] == inspect.getsourcelines(shop.show)[1]


def test_recursion_nests(shop: Any) -> None:
    doc = record(lambda: shop.fact(30))
    depths = [d for d, _ in flat(doc)]
    assert depths == list(range(30))
    rets = returns_by_call(doc)
    first = calls(doc)[0]
    assert rets[first["id"]]["return_value"]["value"] == str(
        pytest.importorskip("math").factorial(30)
    )


def test_exceptions_are_recorded_with_location_and_cause(shop: Any, project: Any) -> None:
    def run() -> None:
        with pytest.raises(RuntimeError):
            shop.fail_with_cause()
        assert shop.catches() == "recovered"

    doc = record(run)
    assert tree(doc) == [
        ["shop.fail_with_cause", [["shop.fail", []]]],
        ["shop.catches", [["shop.fail", []]]],
    ]
    rets = returns_by_call(doc)
    c = calls(doc)
    outer = rets[c[0]["id"]]
    assert "return_value" not in outer
    raise_line = inspect.getsourcelines(shop.fail_with_cause)[1] + 4
    fail_line = inspect.getsourcelines(shop.fail)[1] + 1
    assert outer["exceptions"] == [
        {
            "class": "builtins.RuntimeError",
            "message": "outer",
            "object_id": outer["exceptions"][0]["object_id"],
            "path": f"{project.pkg}/shop.py",
            "lineno": raise_line,
        },
        {
            "class": "builtins.ValueError",
            "message": "inner",
            "object_id": outer["exceptions"][1]["object_id"],
            "path": f"{project.pkg}/shop.py",
            "lineno": fail_line,
        },
    ]
    assert rets[c[1]["id"]]["exceptions"][0]["message"] == "inner"
    assert rets[c[2]["id"]]["return_value"]["value"] == "'recovered'"
    assert rets[c[3]["id"]]["exceptions"][0]["message"] == "caught"


def test_generator_activations_do_not_swallow_the_consumer(shop: Any) -> None:
    doc = record(shop.consume)
    # each item is one activation of numbers(); the consumer's fact() calls are its siblings
    assert tree(doc) == [
        [
            "shop.consume",
            [
                ["shop.numbers", []],
                ["shop.fact", []],
                ["shop.numbers", []],
                ["shop.fact", []],
                ["shop.numbers", []],
            ],
        ]
    ]
    rets = returns_by_call(doc)
    values = [
        rets[c["id"]]["return_value"]["value"] for c in calls(doc) if c["method_id"] == "numbers"
    ]
    assert values == ["0", "10", "None"]


def test_coroutines_span_their_awaits_and_tasks_nest_under_their_creator(shop: Any) -> None:
    # gather() runs each fetch in its own task; the document nests the tasks under the call
    # that created them (contextvars), serialized in one lane
    doc = record(lambda: asyncio.run(shop.gather_all()))
    assert tree(doc) == [
        [
            "shop.gather_all",
            [
                ["shop.fetch", [["shop.asyncio_sleep", []]]],
                ["shop.fetch", [["shop.asyncio_sleep", []]]],
            ],
        ]
    ]
    assert len({e["thread_id"] for e in doc["events"]}) == 1
    rets = returns_by_call(doc)
    gather = calls(doc)[0]
    assert rets[gather["id"]]["return_value"]["value"] == "[2, 4]"


def test_async_generator_values_not_awaits_split_activations(shop: Any) -> None:
    doc = record(lambda: asyncio.run(shop.collect()))
    assert tree(doc) == [
        [
            "shop.collect",
            [
                ["shop.ticks", [["shop.asyncio_sleep", []]]],
                ["shop.ticks", [["shop.asyncio_sleep", []]]],
                ["shop.ticks", []],
            ],
        ]
    ]
    rets = returns_by_call(doc)
    values = [
        rets[c["id"]]["return_value"]["value"] for c in calls(doc) if c["method_id"] == "ticks"
    ]
    assert values == ["'a'", "'b'", "None"]


def test_threads_record_on_their_own_lane(shop: Any) -> None:
    recorder = get_recorder()
    assert recorder.start()
    t = threading.Thread(target=shop.fact, args=(2,))
    t.start()
    t.join()
    shop.fact(1)
    doc = recorder.stop()
    assert [c["thread_id"] for c in calls(doc)] == [1, 1, 2]
    assert tree(doc) == [["shop.fact", [["shop.fact", []]]], ["shop.fact", []]]


def test_idle_calls_are_not_recorded(shop: Any) -> None:
    shop.fact(3)
    doc = record(lambda: None)
    assert doc["events"] == []
    assert doc["classMap"] == []


def test_bad_repr_never_breaks_the_call(shop: Any) -> None:
    doc = record(lambda: shop.bad_repr_param(shop.BadRepr()))
    (param,) = calls(doc)[0]["parameters"]
    assert "repr failed (RuntimeError)" in param["value"]


def test_agent_repr_of_receiver_is_not_recorded(shop: Any) -> None:
    doc = record(lambda: shop.Product("x").price)
    assert names(doc) == ["shop.Product#__init__", "shop.Product#price"]  # no __repr__ calls


def test_app_calls_of_repr_are_recorded(shop: Any) -> None:
    p = shop.Product("x")
    doc = record(lambda: repr(p))
    assert names(doc) == ["shop.Product#__repr__"]


def test_class_map_and_labels(shop: Any, project: Any) -> None:
    def run() -> None:
        p = shop.Product.create("a")
        assert p.price == 1.0
        shop.Product.tax(1)
        shop.login("u")

    doc = record(run)
    pkg = project.pkg
    path = f"{pkg}/shop.py"

    def loc(func: Any) -> str:
        return f"{path}:{inspect.getsourcelines(func)[1]}"

    product = [
        ("__init__", shop.Product.__init__, False, None),
        ("price", shop.Product.price.fget, False, ["money"]),
        ("create", shop.Product.create, True, None),
        ("tax", shop.Product.tax, True, ["money"]),
    ]

    def fn(name: str, func: Any, static: bool, labels: Any) -> dict:
        out = {"name": name, "type": "function", "location": loc(func), "static": static}
        if labels:
            out["labels"] = labels
        return out

    # module functions hang under a class named after the module; classes under the module as
    # a package (AppMap's Python layout); functions in source order
    assert doc["classMap"] == [
        {
            "name": pkg,
            "type": "package",
            "children": [
                {
                    "name": "shop",
                    "type": "class",
                    "children": [fn("login", shop.login, True, ["security", "audit"])],
                },
                {
                    "name": "shop",
                    "type": "package",
                    "children": [
                        {
                            "name": "Product",
                            "type": "class",
                            "children": [fn(*item) for item in product],
                        }
                    ],
                },
            ],
        }
    ]
    # events and classMap correlate by path:lineno
    locations = {f"{c['path']}:{c['lineno']}" for c in calls(doc)}
    assert loc(shop.login) in locations and loc(shop.Product.create) in locations


def test_identity_signature_repr_pickle_and_tracebacks_unchanged(shop: Any) -> None:
    assert shop.REGISTRY["/products/<id>"] is shop.show
    assert str(inspect.signature(shop.Product.tax)) == "(amount, *, rate=0.5)"
    assert str(inspect.signature(shop.Product.total)) == "(self, *items, **options)"
    assert str(inspect.signature(shop.greet)) == "(name)"
    assert repr(shop.fact).startswith("<function fact at 0x")
    assert shop.greet.__wrapped__.__name__ == "greet"
    assert shop.Product.__doc__ == "A product."
    assert pickle.loads(pickle.dumps(shop.fact)) is shop.fact
    assert pickle.loads(pickle.dumps(shop.Product.create)) == shop.Product.create
    product = pickle.loads(pickle.dumps(shop.Product("tea", 5)))
    assert (product.name, product.cents) == ("tea", 5)

    def run() -> list:
        try:
            shop.fail_with_cause()
        except RuntimeError as exc:
            return traceback.extract_tb(exc.__traceback__)
        raise AssertionError("no exception")

    frames = None

    def capture() -> None:
        nonlocal frames
        frames = run()

    record(capture)
    assert frames is not None
    own = [(f.name, f.lineno, f.line) for f in frames if f.filename == shop.__file__]
    start = inspect.getsourcelines(shop.fail_with_cause)[1]
    assert own == [("fail_with_cause", start + 4, 'raise RuntimeError("outer") from exc')]
    assert all("tracetool" not in f.filename for f in frames)


def test_event_cap_with_a_million_calls(
    shop: Any, project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACETOOL_MAX_EVENTS", "1000")
    fact = shop.fact

    def run() -> None:
        for _ in range(1_000_000):
            fact(1)

    doc = record(run)
    assert len(doc["events"]) == 1000
    assert doc["metadata"]["truncated"]["dropped_calls"] == 1_000_000 - 500
    assert doc["metadata"]["truncated"]["max_events"] == 1000
