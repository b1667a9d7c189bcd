"""Headless Chromium (Debian's chromium package) for web-page tests."""

from __future__ import annotations

import shutil

from tests.realparts import need

# Flags the workplace's probe uses: without the background-networking ones Chromium keeps trying
# hosts the closed network refuses.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium() -> str:
    """The browser's path; skips (fails on CI) without it."""
    found = find_chromium()
    if found is None:
        need("chromium", "headless browser tests need Debian's chromium package")
    return found
