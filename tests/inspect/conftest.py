"""The recordings the indexed-inspect tests search: a few corpus files of three agents, copied
into a trace directory (`traces`, with HOME in the temp dir so the index lands there)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import CORPUS

RUBY = CORPUS / "packages/cli/tests/unit/fixtures/ruby"
MODELS = CORPUS / "packages/models/tests/unit/fixtures"

FILES = {
    "ruby/revoke_api_key.appmap.json": RUBY / "revoke_api_key.appmap.json",
    "ruby/user_page_scenario.appmap.json": RUBY / "user_page_scenario.appmap.json",
    "models/list_microposts_compact.appmap.json": MODELS / "list_microposts_compact.appmap.json",
    "models/checkout_update_payment.appmap.json": MODELS / "checkout_update_payment.appmap.json",
    "java/petclinic.appmap.json": MODELS
    / "org_springframework_samples_petclinic_web_VisitControllerTests_testShowVisits.appmap.json",
}


@pytest.fixture
def traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = tmp_path / "traces"
    for rel, src in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, root / rel)
    return root
