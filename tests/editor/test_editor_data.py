"""The editor data in the core and over the daemon: the interactive SVG renderer, the recording
view, recording groups, and the `appmap.*` / `source.*` methods against a real daemon."""

from __future__ import annotations

import re
from typing import Any
from xml.etree import ElementTree

from tests.daemon.conftest import DaemonProcess
from tests.lsp.conftest import Project
from tracetool.diagram import diagram_of
from tracetool.diagram.svg import render_svg
from tracetool.diagram.view import recording_view
from tracetool.filters import decode

SVG = "{http://www.w3.org/2000/svg}"


def checkout(project: Project) -> Any:
    return project.root / "tmp" / "trace" / "code" / "checkout.trace.json"


def test_svg_renderer_plain_and_interactive(editor_project: Project) -> None:
    diagram = diagram_of(checkout(editor_project))
    plain = render_svg(diagram)
    interactive = render_svg(diagram, interactive=True)
    for text in (plain, interactive):
        root = ElementTree.fromstring(text)  # well-formed XML
        assert root.tag == f"{SVG}svg"
    assert "data-event" not in plain and 'class="actor"' not in plain

    # the same picture: only the hooks differ
    def picture(svg: str) -> list[str]:
        svg = re.sub(r' class="(call|loop)" data-event="\d+"', "", svg)
        return [x for x in svg.splitlines() if x != "</g>" and not x.startswith('<g class="actor"')]

    assert picture(interactive) == picture(plain)
    root = ElementTree.fromstring(interactive)
    calls = [t for t in root.iter(f"{SVG}text") if t.get("class") == "call"]
    labels = {t.text for t in calls}
    assert {"total", "check", "__init__"} <= labels, labels
    assert all(t.get("data-event", "").isdigit() for t in calls)
    actors = {g.get("data-actor") for g in root.iter(f"{SVG}g") if g.get("class") == "actor"}
    assert "database:Database" in actors and any((a or "").startswith("package:") for a in actors)
    listing = render_svg(
        diagram_of(checkout(editor_project).with_name("list_items.trace.json")), interactive=True
    )
    loops = [
        t for t in ElementTree.fromstring(listing).iter(f"{SVG}text") if t.get("class") == "loop"
    ]
    assert [t.text for t in loops] and (loops[0].text or "").startswith("loop 12x")


def test_recording_view_core(editor_project: Project) -> None:
    view = recording_view(
        editor_project.root / "tmp" / "trace" / "pytest" / "orders_fail.trace.json"
    )
    assert view["name"] == "order is refused"
    [exchange] = view["exchanges"]
    assert (exchange["method"], exchange["path"], exchange["status"]) == ("POST", "/orders", 500)
    assert exchange["kind"] == "server"
    assert view["filter"] == "" and view["filterJson"] == {}
    assert view["svg"].startswith("<svg")


def test_groups_over_the_daemon(daemon: DaemonProcess) -> None:
    result = daemon.call("appmap.groups", {})
    groups = {(g["kind"], g["label"]): g for g in result["groups"]}
    assert list(groups) == [
        ("test", "tests/test_orders.py"),
        ("test", "tests/test_users.py"),
        ("other", "code"),
    ]
    [failed] = groups[("test", "tests/test_orders.py")]["recordings"]
    assert (failed["status"], failed["route"], failed["failed"]) == ("failed", "POST /orders", True)
    code = {r["name"]: r for r in groups[("other", "code")]["recordings"]}
    assert code["list items"]["status"] == "exception"  # raised ValueError (and 12 SELECTs)
    assert code["list items"]["n_plus_one"] == 12
    assert code["checkout"]["status"] == "ok"
    assert groups[("other", "code")]["exceptions"] == 1
    # the filter box: name, path, route or test file
    only = daemon.call("appmap.groups", {"text": "ORDERS"})["groups"]
    assert [g["label"] for g in only] == ["tests/test_orders.py"]
    assert daemon.call("appmap.groups", {"text": "no such thing"})["groups"] == []
    assert daemon.call("appmap.groups", {"nPlusOne": 0})["groups"][2]["nPlusOne"] == 0
    error = daemon.rpc("appmap.groups", {"nPlusOne": "x"})["error"]
    assert error["code"] == -32602 and "nPlusOne" in error["message"]


def test_view_over_the_daemon(daemon: DaemonProcess) -> None:
    view = daemon.call("appmap.view", {"appmap": "checkout"})
    assert view["recording"] == "code/checkout.trace.json"
    assert view["file"].endswith("code/checkout.trace.json")
    assert view["loops"] is True and 'class="call"' in view["svg"]
    listing = daemon.call("appmap.view", {"appmap": "list items"})
    assert 'class="loop"' in listing["svg"]
    package = next(a["id"] for a in view["actors"] if a["expandable"])
    functions = [r for r in view["tree"] if r["kind"] == "function"]
    total = next(r for r in functions if r["label"].endswith("#total"))
    assert total["count"] == 3 and re.fullmatch(r"shop/store\.py:\d+", total["location"])
    assert view["exchanges"] == []
    # collapse / expand: loops off, a package expanded, a filter that prune takes
    unfolded = daemon.call(
        "appmap.view",
        {
            "appmap": "list items",
            "diagramOptions": {"loops": False, "expand": [package]},
            "filter": {"hideName": ["function:shop/store/Store.check"]},
        },
    )
    assert 'class="loop"' not in unfolded["svg"] and unfolded["loops"] is False
    assert unfolded["expanded"] == [package]
    assert unfolded["filterJson"] == {"hideName": ["function:shop/store/Store.check"]}
    assert decode(unfolded["filter"], source="test").hide_name == (
        "function:shop/store/Store.check",
    )
    # the encoded state round-trips through the daemon too
    again = daemon.call("appmap.view", {"appmap": "checkout", "filter": unfolded["filter"]})
    assert again["filter"] == unfolded["filter"]
    svg = daemon.call("appmap.sequenceDiagram", {"appmap": "checkout", "format": "svg"})
    assert svg.startswith("<svg") and "data-event" not in svg
    missing = daemon.rpc("appmap.view", {"appmap": "nothing like it"})["error"]
    assert missing["code"] == -32001


def test_source_methods_over_the_daemon(daemon: DaemonProcess, editor_project: Project) -> None:
    rows = daemon.call("source.functions", {"path": str(editor_project.store)})
    names = [r["name"] for r in rows]
    assert "shop/store/Store#names" in names and "shop/store/Store.check" in names
    fqid = next(r["fqid"] for r in rows if r["name"] == "shop/store/Store#names")
    detail = daemon.call("source.function", {"fqid": fqid})
    assert detail["count"] == 1 and detail["queries"][0]["count"] == 12
    assert detail["tests"] == []  # recorded by a script, not by a test
    recordings = daemon.call("source.recordings", {"fqid": fqid})
    assert [r["recording"] for r in recordings] == ["code/list_items.trace.json"]
    findings = daemon.call(
        "source.findings", {"fqids": [r["fqid"] for r in rows], "slowMs": 0.0001}
    )
    assert [r["max_count"] for r in findings["nPlusOne"]] == [12]
    assert [r["class"] for r in findings["exceptions"]] == ["builtins.ValueError"]
    slow = {(r["function"], r["sql"]): r for r in findings["slowQueries"]}
    assert slow[(fqid, "SELECT name FROM items WHERE id = ?")]["count"] == 12
    none = daemon.call("source.findings", {"fqids": [fqid], "nPlusOne": 0, "slowMs": 0})
    assert none == {"exceptions": [], "nPlusOne": [], "slowQueries": []}
    facts = daemon.call("appmap.recording", {"appmap": "list items"})
    assert facts["recording"] == "code/list_items.trace.json" and facts["exceptions"] == 1
    error = daemon.rpc("source.function", {"fqid": "nothing"})["error"]
    assert error["code"] == -32001


def test_tests_reaching_a_function(daemon: DaemonProcess, editor_project: Project) -> None:
    # the two test recordings name app/models.py relative to the project
    rows = daemon.call("source.functions", {"path": str(editor_project.root / "app/models.py")})
    user = next(r for r in rows if r["name"].endswith("User.find"))
    detail = daemon.call("source.function", {"fqid": user["fqid"]})
    assert {(t["name"], t["test_status"]) for t in detail["tests"]} == {
        ("order is refused", "failed"),
        ("shows a user", "succeeded"),
    }
    assert detail["tests"][0]["test_status"] == "failed"  # failed tests first
