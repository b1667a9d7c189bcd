"""`sequence-diagram` end to end: PNG (no browser), SVG/HTML view, formats, filter, options."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from tests.diagram.conftest import REVOKE, app
from tracetool.cli import cli
from tracetool.diagram import build_diagram
from tracetool.diagram.model import FUNCTION, Action, Actor, Diagram
from tracetool.trace import load

Image = pytest.importorskip("PIL.Image")


def _colors(img: Any) -> int:
    small = img.convert("RGB").resize((min(img.width, 400), min(img.height, 2000)))
    raw = small.tobytes()
    return len({raw[i : i + 3] for i in range(0, len(raw), 3)})


def test_png_is_drawn_and_not_blank(tmp_path: Path) -> None:
    from tracetool.diagram.png import render_png

    out = render_png(build_diagram(load(REVOKE)), tmp_path / "revoke.sequence.png")
    assert out == [tmp_path / "revoke.sequence.png"]
    with Image.open(out[0]) as img:
        assert img.format == "PNG"
        assert img.width >= 600 and img.height >= 600
        assert _colors(img) > 20  # text, arrows, boxes, gray timings, red error status
        # the right margin is background
        assert img.convert("RGB").getpixel((img.width - 2, img.height // 2)) == (255, 255, 255)


def _wide(n: int) -> Diagram:
    """A diagram with n function actions between 4 actors (plus a loop and an exception)."""
    actors = [Actor(f"package:p{i}", f"p{i}", (i + 1) * 1000) for i in range(4)]
    root = Action(FUNCTION, "r")
    root.callee, root.name, root.elapsed = actors[0], "handle", 0.5
    root.return_value = {"returnValueType": {"name": "void"}, "raisesException": False}
    for i in range(n - 1):
        a = Action(FUNCTION, f"d{i}")
        a.caller, a.callee = actors[0], actors[1 + i % 3]
        a.name, a.elapsed, a.static = f"call_{i}", 0.001, i % 2 == 0
        a.return_value = {"raisesException": i % 50 == 0, "returnValueType": {"name": "str"}}
        root.children.append(a)
    return Diagram(actors, [root])


def test_png_of_thousands_of_actions_is_paginated(tmp_path: Path) -> None:
    from tracetool.diagram.png import MAX_PAGE, render_png

    out = render_png(_wide(2000), tmp_path / "big.sequence.png")
    assert len(out) > 1
    assert out[1].name == "big.sequence-2.png"
    for page in out:
        with Image.open(page) as img:
            assert img.height <= MAX_PAGE + 200
            assert _colors(img) > 5


def test_svg_and_html_view(tmp_path: Path) -> None:
    from tracetool.diagram.svg import render_html, render_svg

    svg = render_svg(build_diagram(load(app("list_users"))))
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "loop 5x" in svg and "find_for_user" in svg and "<script" not in svg
    html = render_html(build_diagram(load(REVOKE)), "revoke <test>")
    assert "revoke &lt;test&gt;" in html and "http" not in html.split("<svg", 1)[0].lower().replace(
        "http-equiv", ""
    )


def test_cli_formats_output_dir_and_names(tmp_path: Path) -> None:
    runner = CliRunner()
    for fmt, ext in (("json", "json"), ("plantuml", "uml"), ("png", "png")):
        result = runner.invoke(
            cli, ["sequence-diagram", str(REVOKE), "-f", fmt, "--output-dir", str(tmp_path)]
        )
        assert result.exit_code == 0, result.output
        target = tmp_path / f"revoke_api_key.sequence.{ext}"
        assert target.is_file() and str(target) in result.output
    data = orjson.loads((tmp_path / "revoke_api_key.sequence.json").read_bytes())
    assert len(data["rootActions"]) == 3 and len(data["actors"]) == 5
    assert (tmp_path / "revoke_api_key.sequence.uml").read_text().startswith("@startuml")


def test_cli_draws_an_http_status_given_as_an_object(tmp_path: Path) -> None:
    """A status that is an object (not hashable, so no cache key) is drawn, not a skipped file."""
    call = {"defined_class": "A", "method_id": "f", "path": "app/a.py", "lineno": 1}
    events = [
        {"id": 1, "event": "call", "thread_id": 1,
         "http_server_request": {"request_method": "GET", "path_info": "/x"}},
        {"id": 2, "event": "call", "thread_id": 1, "static": False, **call},
        {"id": 3, "event": "return", "thread_id": 1, "parent_id": 2, "elapsed": 0.25},
        {"id": 4, "event": "return", "thread_id": 1, "parent_id": 1, "elapsed": 0.5,
         "http_server_response": {"status": {"x": 1}}},
    ]  # fmt: skip
    path = tmp_path / "odd.appmap.json"
    function = {"type": "function", "name": "f", "location": "app/a.py:1", "static": False}
    class_map = [{"type": "package", "name": "app", "children": [
        {"type": "class", "name": "A", "children": [function]}]}]  # fmt: skip
    path.write_bytes(
        orjson.dumps({"version": "1.12", "metadata": {}, "classMap": class_map, "events": events})
    )
    for fmt in ("json", "plantuml"):
        result = CliRunner().invoke(
            cli, ["sequence-diagram", str(path), "-f", fmt, "--output-dir", str(tmp_path)]
        )
        assert result.exit_code == 0, result.output
    data = orjson.loads((tmp_path / "odd.sequence.json").read_bytes())
    (request,) = data["rootActions"]
    assert request["route"] == "GET /x" and request["status"] == {"x": 1}
    assert len(request["digest"]) == 64 and len(request["children"]) == 1
    assert "GET /x" in (tmp_path / "odd.sequence.uml").read_text()


def test_cli_filter_loops_expand_exclude(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["sequence-diagram", str(REVOKE), "-f", "json", "--output-dir", str(tmp_path)]
    result = runner.invoke(cli, [*args, "--filter", '{"hideExternal": true, "bogus": 1}'])
    assert result.exit_code == 0, result.output
    assert "unknown key 'bogus'" in result.output  # warnings go to stderr (mixed here)
    data = orjson.loads((tmp_path / "revoke_api_key.sequence.json").read_bytes())
    assert len(data["rootActions"]) == 2
    assert "package:json" not in [a["id"] for a in data["actors"]]

    result = runner.invoke(cli, [*args, "--no-loops"])
    assert result.exit_code == 0
    text = (tmp_path / "revoke_api_key.sequence.json").read_text()
    assert '"nodeType": 1' not in text

    result = runner.invoke(cli, [*args, "--expand", "package:app/models"])
    data = orjson.loads((tmp_path / "revoke_api_key.sequence.json").read_bytes())
    assert "class:app/models/ApiKey" in [a["id"] for a in data["actors"]]

    result = runner.invoke(cli, [*args, "--exclude", "package:json"])
    assert result.exit_code == 0 and "deprecated" in result.output
    data = orjson.loads((tmp_path / "revoke_api_key.sequence.json").read_bytes())
    assert "package:json" not in [a["id"] for a in data["actors"]]


def test_cli_show_browser_writes_and_opens_html(tmp_path: Path, _no_browser: list[str]) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "sequence-diagram",
            str(app("show_user")),
            "-f",
            "plantuml",
            "--show-browser",
            "--output-dir",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    page = tmp_path / "show_user.sequence.html"
    assert page.is_file() and "<svg" in page.read_text()
    assert _no_browser == [page.resolve().as_uri()]


def test_cli_default_png_beside_recording_e2e(tmp_path: Path) -> None:
    copy = tmp_path / "rec.appmap.json"
    copy.write_bytes(REVOKE.read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "tracetool", "sequence-diagram", str(copy)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with Image.open(tmp_path / "rec.sequence.png") as img:
        assert img.width > 300
    missing = subprocess.run(
        [sys.executable, "-m", "tracetool", "sequence-diagram", str(tmp_path / "nope.appmap.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"tracetool: {tmp_path / 'nope.appmap.json'}: no such file"
