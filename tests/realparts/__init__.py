"""Real parts the tests start themselves: PostgreSQL, AppMap's validator, headless Chromium.

Every helper here skips with the reason when its part is missing, except on CI (CI=true), where a
missing real part fails the run: scripts/test installs them there.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def on_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def need(what: str, why: str) -> NoReturn:
    """A real part is missing: fail on CI (scripts/test installs it there), skip elsewhere."""
    message = f"{what} is not available: {why}"
    if on_ci():
        pytest.fail(f"{message} (CI=true: scripts/test should have installed it)", pytrace=False)
    pytest.skip(message)
