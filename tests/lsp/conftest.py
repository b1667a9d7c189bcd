"""Fixtures for the language server's tests: a real recorded project and a real server process.

`recorded` (once per session) builds a tiny project in a temporary directory — trace.yml, a
package `shop` — records a script with the real agent (`tracetool.agent.record` in a subprocess
with TRACETOOL=true) and runs `tracetool index` with HOME pointing into the temporary directory,
so query.db lands in `<tmp>/home/.trace/data/…`. `unindexed` copies the same project and
recordings elsewhere without indexing them.

`start_server(project, **options)` starts `python -m tracetool_daemon.lsp` as a subprocess with
pytest-lsp's client (pygls 2.x), initializes it for the project (VS Code's capabilities) and
returns the client; the fixture `servers` shuts every started server down.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

STORE = textwrap.dedent(
    '''\
    """A tiny store, recorded by the language server tests."""

    import functools
    import sqlite3


    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)

        return wrapper


    class Store:
        def __init__(self):
            self.db = sqlite3.connect(":memory:")
            self.db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)")
            rows = [(f"item {i}",) for i in range(12)]
            self.db.executemany("INSERT INTO items (name) VALUES (?)", rows)

        def names(self):
            out = []
            for i in range(1, 13):
                row = self.db.execute("SELECT name FROM items WHERE id = ?", (i,)).fetchone()
                out.append(row[0])
            return out

        @logged
        def total(self, prices):
            return sum(prices)

        @staticmethod
        def check(quantity):
            if quantity < 0:
                raise ValueError(f"negative quantity {quantity}")
            return quantity


    def never_called():
        return None
    '''
)

SCRIPT = textwrap.dedent(
    """\
    from tracetool import agent
    from shop.store import Store

    with agent.record("list items"):
        store = Store()
        store.names()
        try:
            Store.check(-1)
        except ValueError:
            pass

    with agent.record("checkout"):
        store = Store()
        for prices in ([1, 2], [3], [4, 5, 6]):
            store.total(prices)
        Store.check(2)
    """
)


def line_of(text: str, needle: str) -> int:
    """0-based line of the first line containing `needle`."""
    for number, line in enumerate(text.splitlines()):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in text")


@dataclass(frozen=True)
class Project:
    root: Path
    home: Path

    @property
    def store(self) -> Path:
        return self.root / "shop" / "store.py"

    @property
    def store_uri(self) -> str:
        return self.store.as_uri()

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETOOL")}
        env["HOME"] = str(self.home)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["TRACETOOL_INDEX_WORKERS"] = "0"  # a daemon a server starts parses in-process
        return env

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, *args],
            cwd=self.root,
            env={**self.env(), **extra},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        return result

    def index(self) -> None:
        self.run("-m", "tracetool", "index")

    def query_db(self) -> Path:
        found = list((self.home / ".trace" / "data").glob("*/query.db"))
        assert len(found) == 1, found
        return found[0]


def make_project(root: Path) -> Project:
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "store.py").write_text(STORE)
    (root / "trace.yml").write_text("name: shop\npackages:\n  - path: shop\n")
    (root / "home").mkdir()
    return Project(root=root, home=root / "home")


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """The recorded project, with one daemon serving it for the session: the servers find it
    by its discovery file (as in VS Code, where the extension started it) instead of each
    starting and stopping their own."""
    from tests.daemon.conftest import DaemonProcess, daemon_env

    project = make_project(tmp_path_factory.mktemp("recorded"))
    (project.root / "run.py").write_text(SCRIPT)
    project.run("run.py", TRACETOOL="true")
    recordings = sorted((project.root / "tmp" / "trace").rglob("*.trace.json"))
    assert [p.name for p in recordings] == ["checkout.trace.json", "list_items.trace.json"]
    project.index()
    daemon = DaemonProcess(["rpc", "-d", str(project.root)], project.root, daemon_env(project.home))
    try:
        daemon.read_ready()
        yield project
    finally:
        daemon.stop()


@pytest.fixture
def unindexed(recorded: Project, tmp_path: Path) -> Project:
    """The recorded project (source and recordings) in a new place, without an index."""
    project = make_project(tmp_path / "copy")
    shutil.copytree(recorded.root / "tmp", project.root / "tmp")
    return project


async def wait_until(condition: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Poll `condition` until it returns something truthy, failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        await asyncio.sleep(0.05)


class Servers:
    def __init__(self) -> None:
        self.clients: list[LanguageClient] = []

    async def start(self, project: Project, **options: Any) -> LanguageClient:
        client = make_test_lsp_client()
        client.lens_refreshes = 0  # type: ignore[attr-defined]

        @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def lens_refresh(ls: LanguageClient, params: None) -> None:
            ls.lens_refreshes += 1  # type: ignore[attr-defined]

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(ls: LanguageClient, params: types.RegistrationParams) -> None:
            ls.registrations = params.registrations  # type: ignore[attr-defined]

        await client.start_io(
            sys.executable, "-m", "tracetool_daemon.lsp", env=project.env(), cwd=str(project.root)
        )
        self.clients.append(client)
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                root_uri=project.root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=project.root.as_uri(), name="shop")],
                initialization_options={"pollInterval": 0.1, **options},
            )
        )
        return client

    async def close(self) -> None:
        for client in self.clients:
            await client.shutdown_session()
            await client.stop()


@pytest_asyncio.fixture
async def servers() -> AsyncIterator[Servers]:
    started = Servers()
    yield started
    await started.close()


def open_document(client: LanguageClient, path: Path, text: str | None = None) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri,
                language_id="python",
                version=1,
                text=path.read_text() if text is None else text,
            )
        )
    )
    return uri
