"""The extension in a real VS Code (code-server driven by headless Chromium) on the example shop:
the user story of issue 16 end to end.

Packaged by @vscode/vsce and installed into code-server; the shop's tests recorded by the
pytest plugin. Opening the shop shows its recordings in the tracetool view (grouped by test file,
status icons); opening one shows the viewer with our SVG sequence diagram, calls and HTTP; a
click on a call opens its source line, where the language server's code lenses and diagnostics
are shown — all from the one daemon the extension started.

Skips (also on CI, which does not install them) when code-server and vsce are absent:
scripts/install-vscode-parts installs them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.editor.conftest import record_example_shop
from tests.editor.vscode_session import VSCodeSession, parts
from tests.editor.webdriver import ELEMENT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SHOTS = os.environ.get("TRACETOOL_SCREENSHOTS")  # scripts/screenshots sets it


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VSCodeSession]:
    found = parts()
    if isinstance(found, str):
        pytest.skip(found)
    tmp = tmp_path_factory.mktemp("vscode")
    shop = record_example_shop(tmp / "shop", tmp / "home")
    started = VSCodeSession(tmp, shop, tmp / "home")
    yield started
    started.close()


def shot(session: VSCodeSession, name: str) -> None:
    if SHOTS and session.browser is not None:
        session.browser.top()
        session.browser.screenshot(Path(SHOTS) / name)


def test_recordings_tree_viewer_and_source(session: VSCodeSession) -> None:
    b = session.browser
    assert b is not None
    session.open_recordings_view()
    rows = b.wait(
        lambda: [r for r in session.tree_rows() if "places an order" in r], 120, "recordings"
    )
    rows = session.tree_rows()
    assert rows[0].startswith("tests/test_shop_catalog.py 5 ·")
    assert any(r.startswith("tests/test_shop_orders.py 8 ·") for r in rows)
    crash = next(r for r in rows if r.startswith("a crash is a 500"))
    assert "exception" in crash
    # status icons: a warning for recordings with exceptions, a check for clean ones
    icons = b.run(
        "return [...document.querySelectorAll('.pane-body .monaco-list-row')].map(r => "
        "[r.getAttribute('aria-label'), (r.querySelector('.codicon-warning, .codicon-pass, "
        ".codicon-error') || {className: ''}).className])"
    )

    def icon(name: str) -> str:
        return next(cls for label, cls in icons if label.startswith(name))

    assert "codicon-warning" in icon("a crash is a 500")
    assert "codicon-pass" in icon("lists every product")
    shot(session, "recordings-view.png")

    name = "places an order priced by the pricing service"
    session.click_tree_row(name, opens=name)
    session.enter_webview()
    b.find("#sequence svg text.call", 120)
    assert b.text(b.find("header h2")) == "places an order priced by the pricing service"
    labels = [b.text(e) for e in b.find_all("#sequence svg text.call")]
    assert {"POST /orders", "create_order", "place_order", "quote"} <= set(labels)
    shot(session, "viewer-sequence.png")
    session.enter_webview()
    b.click(b.find('button[data-tab="calls"]'))
    calls = [b.text(e) for e in b.find_all("#calls .row")]
    assert any("INSERT INTO orders" in r for r in calls)
    shot(session, "viewer-calls.png")
    session.enter_webview()
    b.click(b.find('button[data-tab="http"]'))
    assert b.text(b.find("#http .exchange")).startswith("POST /orders 201")
    shot(session, "viewer-http.png")

    # a call opens its source line; the language server's lenses are there
    session.enter_webview()
    b.click(b.find('button[data-tab="sequence"]'))
    place = next(e for e in b.find_all("#sequence svg text.call") if b.text(e) == "place_order")
    b.click(place)
    b.top()
    b.wait(
        lambda: b.run(
            "const t = document.querySelector('.tab.active'); return t && t.innerText"
        ).startswith("app.py"),
        60,
        "app.py opened",
    )
    line = b.wait(
        lambda: re.search(
            r"Ln (\d+)",
            b.run(
                "return document.querySelector('#status\\\\.editor\\\\.selection')?.innerText || ''"
            ),
        ),
        30,
        "the cursor line",
    )
    source = (session.project / "shop" / "app.py").read_text().splitlines()
    assert source[int(line.group(1)) - 1].startswith("def place_order(")
    lenses = b.wait(
        lambda: [
            t
            for t in b.run(
                "return [...document.querySelectorAll('.codelens-decoration')]"
                ".map(x => x.textContent)"
            )
            if t.startswith("▶ called")
        ],
        90,
        "code lenses",
    )
    assert any(re.match(r"▶ called \d+× in \d+ recordings? · p50 ", t) for t in lenses)
    shot(session, "source-lenses.png")


def test_tree_follows_new_recordings_and_filters(session: VSCodeSession) -> None:
    """A recording written while VS Code is open appears in the tree (the daemon indexes it,
    the view polls index.status); the filter narrows the tree."""
    import json

    b = session.browser
    assert b is not None
    b.top()
    trace = session.project / "tmp" / "trace" / "pytest"
    source = next(trace.glob("*test_lists_every_product.trace.json"))
    doc = json.loads(source.read_text())
    doc["metadata"]["name"] = "a recording made just now"
    tmp = trace / ".new.tmp"
    tmp.write_text(json.dumps(doc))
    tmp.rename(trace / "tests_test_shop_catalog.py_test_made_just_now.trace.json")
    b.wait(
        lambda: any(r.startswith("a recording made just now") for r in session.tree_rows()),
        90,
        "the new recording in the tree",
    )
    assert any(r.startswith("tests/test_shop_catalog.py 6 ·") for r in session.tree_rows())

    # the view's title buttons show on hover: click it from the page
    button = b.find('.pane-header .action-label[aria-label="Filter Recordings"]', 30)
    b.run("arguments[0].click()", {ELEMENT: button})
    box = b.find(".quick-input-widget input", 30)
    b.send_keys(box, "pricing\n")
    b.wait(
        lambda: (
            [r.split(" ")[0] for r in session.tree_rows()][:1] == ["tests/test_shop_orders.py"]
            and len(session.tree_rows()) == 3
        ),
        60,
        "the filtered tree",
    )
    rows = session.tree_rows()
    assert rows[1].startswith("places an order priced by the pricing service")
    assert rows[2].startswith("pricing service down is a 502")
