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


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    need("chromium", "headless browser tests need Debian's chromium package")
