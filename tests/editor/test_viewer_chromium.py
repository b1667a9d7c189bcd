"""The recording viewer page (editors/vscode/media/viewer.js, the webview's script) in headless
Chromium against a real daemon: the sequence diagram from our SVG renderer, clicks that open
source, loop and package collapse/expand, the filter and its copied state, the call tree and
the HTTP view. The page talks to a host through messages; here the host is media/http-host.js
(through tests/editor/viewer_host.py to the daemon), in VS Code it is the extension."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import DaemonProcess
from tests.editor.viewer_host import viewer_host
from tests.editor.webdriver import ELEMENT, Browser, chromedriver, chromium_binary
from tests.realparts import need
from tracetool.filters import decode

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    if chromium_binary() is None or chromedriver() is None:
        need("chromium and chromedriver", "the viewer page is tested in headless Chromium")
    started = Browser.start(tmp_path_factory.mktemp("chromium"))
    yield started
    started.quit()


@pytest.fixture(scope="module")
def base(daemon: DaemonProcess) -> Iterator[str]:
    with viewer_host(daemon.port) as url:
        yield url


def sent(browser: Browser) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = browser.run("return window.tracetoolSent")
    return out


def wait_data(browser: Browser, before: int) -> None:
    """Until the host answered one more `view` request than `before` and the page drew it."""
    browser.wait(
        lambda: (
            browser.run("return window.tracetoolSent.filter(m => m.type === 'view').length")
            > before
            and browser.run("return document.querySelector('#status').textContent") == ""
        ),
        what="the page was redrawn",
    )


def views(browser: Browser) -> int:
    n: int = browser.run("return window.tracetoolSent.filter(m => m.type === 'view').length")
    return n


def open_page(browser: Browser, base: str, appmap: str) -> None:
    browser.get(f"{base}standalone.html?appmap={appmap}")
    browser.find("body[data-ready=sequence] #sequence svg")


def test_sequence_diagram_clicks(browser: Browser, base: str) -> None:
    open_page(browser, base, "code/list_items.trace.json")
    assert browser.text(browser.find("header h2")) == "list items"
    labels = [browser.text(e) for e in browser.find_all("#sequence svg text.call")]
    assert "names" in labels and "SELECT name FROM items WHERE id = ?" in labels
    # a call opens its source line (the host gets the recorded location)
    names = next(
        e for e in browser.find_all("#sequence svg text.call") if browser.text(e) == "names"
    )
    browser.click(names)
    opened = [m for m in sent(browser) if m["type"] == "openSource"]
    assert opened and opened[-1]["location"].startswith("shop/store.py:")
    assert opened[-1]["label"].endswith("#names")

    # loops: the loop tag collapses them into 12 rows, the toolbar folds them again
    assert len(browser.find_all("#sequence svg text.loop")) == 1
    before = views(browser)
    browser.click(browser.find("#sequence svg text.loop"))
    wait_data(browser, before)
    assert browser.find_all("#sequence svg text.loop") == []
    selects = [
        e
        for e in browser.find_all("#sequence svg text.call")
        if browser.text(e).startswith("SELECT")
    ]
    assert len(selects) == 12
    before = views(browser)
    browser.click(browser.find("#toggle-loops"))
    wait_data(browser, before)
    assert len(browser.find_all("#sequence svg text.loop")) == 1

    # packages: clicking a package actor expands it; its chip collapses it again
    packages = browser.find_all('#sequence svg g.actor[data-actor^="package:"]')
    assert packages
    before = views(browser)
    browser.click(packages[0])
    wait_data(browser, before)
    chip = browser.find("button.chip[data-collapse]")
    expanded = sent(browser)[-1]["params"]["diagramOptions"]["expand"]
    assert expanded and expanded[0].startswith("package:")
    before = views(browser)
    browser.click(chip)
    wait_data(browser, before)
    assert browser.find_all("button.chip") == []
    assert sent(browser)[-1]["params"]["diagramOptions"]["expand"] == []


def test_filter_and_copied_state(browser: Browser, base: str) -> None:
    open_page(browser, base, "code/list_items.trace.json")
    assert browser.text(browser.find("#filter-state")) == "(no filter)"
    labels = [browser.text(e) for e in browser.find_all("#sequence svg text.call")]
    assert "check" in labels
    before = views(browser)
    names = browser.find("#hide-names")
    browser.send_keys(names, "/check/")
    browser.run("arguments[0].blur()", {ELEMENT: names})  # commits the input: one `change`
    wait_data(browser, before)
    labels = [browser.text(e) for e in browser.find_all("#sequence svg text.call")]
    assert "check" not in labels and "names" in labels
    state = browser.text(browser.find("#filter-state"))
    assert decode(state, source="page").hide_name == ("/check/",)
    browser.click(browser.find("#copy-filter"))
    copied = [m for m in sent(browser) if m["type"] == "copy"]
    assert copied[-1]["text"] == state  # what `tracetool prune --filter` takes


def test_call_tree_and_http(browser: Browser, base: str) -> None:
    open_page(browser, base, "pytest/orders_fail.trace.json")
    browser.click(browser.find('button[data-tab="calls"]'))
    browser.find("body[data-ready=calls]")
    rows = [browser.text(e) for e in browser.find_all("#calls .row")]
    assert rows[0].startswith("▾") and "POST /orders" in rows[0] and "500" in rows[0]
    assert any("SQL" in r and "SELECT * FROM users WHERE id = ?" in r for r in rows), rows
    assert all(r.split()[-1] == "ms" for r in rows)  # every row has its time
    assert rows[0].split("\n")[0] == "▾"
    # collapse the request's subtree, then open it again
    browser.click(browser.find("#calls .toggle[data-toggle]"))
    assert len(browser.find_all("#calls .row")) == 1
    browser.click(browser.find("#calls .toggle[data-toggle]"))
    assert len(browser.find_all("#calls .row")) == len(rows)
    # a function row opens its source
    find = next(e for e in browser.find_all("#calls .row.linked") if "User.find" in browser.text(e))
    browser.click(find)
    opened = [m for m in sent(browser) if m["type"] == "openSource"]
    assert opened[-1]["location"] == "app/models.py:20"

    browser.click(browser.find('button[data-tab="http"]'))
    browser.find("body[data-ready=http]")
    [exchange] = browser.find_all("#http .exchange")
    text = browser.text(exchange)
    assert text.startswith("POST /orders 500")
    assert "Request headers" in text and "Response" in text


def test_page_reports_daemon_errors(browser: Browser, base: str) -> None:
    browser.get(f"{base}standalone.html?appmap=nothing-like-it")
    browser.find("body[data-error]")
    assert "nothing-like-it" in browser.text(browser.find("#status"))


def test_webview_html_has_a_strict_policy() -> None:
    """The VS Code webview page: scripts only by nonce, styles and images from the extension."""
    source = (Path(__file__).resolve().parents[2] / "editors/vscode/viewer.js").read_text()
    assert "default-src 'none'" in source and "script-src 'nonce-${n}'" in source
    assert "enableScripts: true" in source
