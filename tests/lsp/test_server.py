"""The language server as a real process over stdio, driven by pytest-lsp's client (pygls 2.x).

The project and its recordings come from the real agent (see conftest.py): "list items" builds a
Store, lists its 12 names with one query each (an N+1 pattern) and sees `check(-1)` raise;
"checkout" builds a Store, totals three carts through the `@logged` wrapper and checks 2.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.lsp.conftest import STORE, Project, Servers, line_of, open_document, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

P50 = r" · p50 (\d+\.\d+ m?s|<0\.001 ms)"
STORE_FQID = "function:shop/store/Store"


def ident(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def lenses_of(client: LanguageClient, uri: str) -> dict[tuple[int, int], types.CodeLens]:
    found = await client.text_document_code_lens_async(types.CodeLensParams(ident(uri)))
    return {(lens.range.start.line, lens.range.start.character): lens for lens in found or []}


async def hover_at(client: LanguageClient, uri: str, line: int, char: int) -> types.Hover | None:
    return await client.text_document_hover_async(
        types.HoverParams(ident(uri), types.Position(line, char))
    )


async def command(client: LanguageClient, name: str, *args: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(args))
    )


async def test_code_lenses_above_recorded_functions(recorded: Project, servers: Servers) -> None:
    client = await servers.start(recorded)
    uri = open_document(client, recorded.store)
    lenses = await lenses_of(client, uri)
    expected = {
        # the nested wrapper's code object starts at its decorator line
        (line_of(STORE, "@functools.wraps(fn)"), 4): "3× in 1 recording",
        (line_of(STORE, "def __init__"), 4): "2× in 2 recordings",
        (line_of(STORE, "def names"), 4): "1× in 1 recording",
        (line_of(STORE, "@logged"), 4): "3× in 1 recording",
        (line_of(STORE, "@staticmethod"), 4): "2× in 2 recordings",
    }
    assert sorted(lenses) == sorted(expected)
    for position, calls in expected.items():
        lens = lenses[position]
        assert lens.command is not None
        assert re.fullmatch(rf"▶ called {calls}{P50}", lens.command.title), lens.command.title
        assert lens.command.command == "tracetool.showRecordings"
        assert lens.command.arguments is not None
        assert lens.command.arguments[0]["uri"] == uri
    names = lenses[(line_of(STORE, "def names"), 4)].command
    assert names is not None and names.arguments is not None
    assert list(names.arguments) == [{"uri": uri, "fqid": f"{STORE_FQID}#names"}]
    check = lenses[(line_of(STORE, "@staticmethod"), 4)].command
    assert check is not None and check.arguments[0]["fqid"] == f"{STORE_FQID}.check"
    # never_called has no lens; nor has a file outside the recorded package's index
    assert line_of(STORE, "def never_called") not in {line for line, _ in lenses}
    other = recorded.root / "run.py"
    assert await lenses_of(client, open_document(client, other)) == {}
    assert client.messages == []  # an index exists: nothing to tell the user


async def test_lenses_and_diagnostics_follow_edits(recorded: Project, servers: Servers) -> None:
    """Lines inserted above the code since it was recorded: lenses move with the functions."""
    client = await servers.start(recorded)
    edited = "import os\n\n\n" + STORE.replace("def names(self):", "def names(self):  # edited")
    uri = open_document(client, recorded.store, edited)
    lenses = await lenses_of(client, uri)
    assert (line_of(edited, "def names"), 4) in lenses
    assert (line_of(edited, "@staticmethod"), 4) in lenses
    assert len(lenses) == 5

    def n_plus_one_line() -> int | None:
        found = [d for d in client.diagnostics.get(uri, []) if d.code == "n-plus-one"]
        return found[0].range.start.line if found else None

    assert await wait_until(n_plus_one_line) == line_of(edited, "def names")
    # the exception line moved too, but it no longer matches the recorded location exactly:
    # the diagnostic goes to the function's name instead of a line that may be different code
    [exception] = [d for d in client.diagnostics[uri] if d.code == "exception"]
    assert exception.range.start.line == line_of(edited, "def check")

    def change(version: int, text: str) -> None:
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    # diagnostics are recomputed shortly after edits
    change(2, "\n" + edited)
    assert await wait_until(lambda: n_plus_one_line() == line_of(edited, "def names") + 1)
    # a text that does not parse (mid-edit) keeps the last outline that did
    change(3, "\n" + edited + "def (")
    moved = {(line + 1, col) for line, col in lenses}
    assert sorted(await lenses_of(client, uri)) == sorted(moved)


async def test_hover_on_recorded_function(recorded: Project, servers: Servers) -> None:
    client = await servers.start(recorded)
    uri = open_document(client, recorded.store)
    line = line_of(STORE, "def names")
    hover = await hover_at(client, uri, line, 9)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    text = hover.contents.value
    assert text.startswith("**tracetool** · `shop/store/Store#names`")
    assert "called **1×** in **1 recording** · total " in text
    assert re.search(r"· self \d+\.\d+ ms · p50 \d+\.\d+ ms · max \d+\.\d+ ms", text)
    link = "[list items](command:tracetool.openRecording?"
    assert f"**Top recordings**\n\n- {link}" in text  # opens the recording viewer
    assert "code/list_items.trace.json" in unquote(text)
    assert "**SQL issued**\n\n- `SELECT name FROM items WHERE id = ?` — 12× · " in text
    assert "Exceptions" not in text
    assert hover.range == types.Range(types.Position(line, 8), types.Position(line, 13))

    check = await hover_at(client, uri, line_of(STORE, "@staticmethod"), 6)
    assert check is not None and isinstance(check.contents, types.MarkupContent)
    assert "called **2×** in **2 recordings**" in check.contents.value
    assert "- [checkout](command:tracetool.openRecording?" in check.contents.value
    assert "- [list items](command:tracetool.openRecording?" in check.contents.value
    raise_line = line_of(STORE, "raise ValueError") + 1
    assert (
        f"**Exceptions**\n\n- `builtins.ValueError` at `shop/store.py:{raise_line}` — 1× in"
        " 1 recording: negative quantity \\-1"
    ) in check.contents.value

    # inside a body, on a function without recordings, on a blank line: no hover
    assert await hover_at(client, uri, line + 2, 10) is None
    assert await hover_at(client, uri, line_of(STORE, "def never_called"), 5) is None
    assert await hover_at(client, uri, 1, 0) is None


async def test_diagnostics(recorded: Project, servers: Servers) -> None:
    client = await servers.start(recorded)
    uri = open_document(client, recorded.store)
    await client.wait_for_notification("textDocument/publishDiagnostics")
    found = sorted(client.diagnostics[uri], key=lambda d: d.range.start.line)
    assert [d.code for d in found] == ["n-plus-one", "exception"]
    assert {d.severity for d in found} == {types.DiagnosticSeverity.Information}
    assert {d.source for d in found} == {"tracetool"}
    n_plus_one, exception = found
    names = line_of(STORE, "def names")
    assert n_plus_one.range == types.Range(types.Position(names, 8), types.Position(names, 13))
    assert n_plus_one.message == (
        "N+1 query: SELECT name FROM items WHERE id = ? ran 12× within one recording "
        "(code/list_items.trace.json)"
    )
    raised = line_of(STORE, "raise ValueError")
    text = STORE.splitlines()[raised]
    assert exception.range == types.Range(
        types.Position(raised, text.index("raise")), types.Position(raised, len(text))
    )
    assert exception.message == (
        "builtins.ValueError raised here (1× in 1 recording): negative quantity -1"
    )


async def test_diagnostic_options(recorded: Project, servers: Servers) -> None:
    """A higher N+1 threshold and exceptions turned off: nothing to report."""
    client = await servers.start(recorded, nPlusOneThreshold=13, exceptionDiagnostics=False)
    uri = open_document(client, recorded.store)
    await client.wait_for_notification("textDocument/publishDiagnostics")
    assert list(client.diagnostics[uri]) == []


async def test_show_recordings_command(recorded: Project, servers: Servers) -> None:
    client = await servers.start(recorded)
    uri = open_document(client, recorded.store)
    result = await command(
        client, "tracetool.showRecordings", {"uri": uri, "fqid": f"{STORE_FQID}.check"}
    )
    assert result["function"] == f"{STORE_FQID}.check"
    assert result["location"] == f"shop/store.py:{line_of(STORE, '@staticmethod') + 1}"
    assert result["count"] == 2
    assert sorted(r["name"] for r in result["recordings"]) == ["checkout", "list items"]
    assert {r["recording"] for r in result["recordings"]} == {
        "code/checkout.trace.json",
        "code/list_items.trace.json",
    }
    assert all(r["count"] == 1 for r in result["recordings"])
    # without a uri: the workspace's only project; the fqid alone as a string works too
    again = await command(client, "tracetool.showRecordings", f"{STORE_FQID}.check")
    assert again == result

    with pytest.raises(JsonRpcException, match="no such recorded function"):
        await command(client, "tracetool.showRecordings", {"uri": uri, "fqid": "function:nope"})


async def test_function_detail_command(recorded: Project, servers: Servers) -> None:
    client = await servers.start(recorded)
    detail = await command(client, "tracetool.functionDetail", f"{STORE_FQID}#names")
    assert detail["count"] == 1 and detail["recordings"] == 1
    assert detail["queries"][0]["sql"] == "SELECT name FROM items WHERE id = ?"
    assert detail["queries"][0]["count"] == 12
    assert [r["name"] for r in detail["top_recordings"]] == ["list items"]


async def test_sequence_diagram_command(recorded: Project, servers: Servers) -> None:
    client = await servers.start(recorded)
    result = await command(client, "tracetool.sequenceDiagram", {"recording": "list items"})
    assert result["recording"] == "code/list_items.trace.json"
    assert result["name"] == "list items"
    assert result["format"] == "plantuml"
    plantuml = result["diagram"]
    assert plantuml.startswith("@startuml\n") and plantuml.rstrip().endswith("@enduml")
    assert "names" in plantuml and "SELECT name FROM items WHERE id = ?" in plantuml
    assert "Loop 12 times" in plantuml

    as_json = await command(client, "tracetool.sequenceDiagram", "code/checkout.trace.json", "json")
    assert as_json["format"] == "json"
    assert {"actors", "rootActions"} <= set(as_json["diagram"])

    with pytest.raises(JsonRpcException, match="no such recording"):
        await command(client, "tracetool.sequenceDiagram", {"recording": "nothing like it"})
    as_svg = await command(client, "tracetool.sequenceDiagram", "list items", "svg")
    assert as_svg["diagram"].startswith("<svg") and ">Database</text>" in as_svg["diagram"]
    with pytest.raises(JsonRpcException, match="unknown diagram format 'png'"):
        await command(client, "tracetool.sequenceDiagram", "list items", "png")


def lens_title(lenses: dict[tuple[int, int], types.CodeLens], at: tuple[int, int]) -> str:
    command = lenses[at].command
    assert command is not None
    return command.title


def index_now(project: Project, path: Path) -> None:
    """Have the running daemon (found by its discovery file) index `path` at once."""
    project.run(
        "-m",
        "tracetool",
        "rpc-client",
        "index.files",
        json.dumps({"paths": [str(path)], "wait": True}),
    )


async def test_unindexed_project_indexed_by_the_daemon_then_polled(
    unindexed: Project, servers: Servers
) -> None:
    """No `tracetool index` ran: the daemon the server starts indexes the recordings, and a new
    recording reaches the lenses through the poll of its index.status."""
    checkout = unindexed.root / "tmp" / "trace" / "code" / "checkout.trace.json"
    aside = checkout.read_bytes()
    checkout.unlink()
    client = await servers.start(unindexed)
    uri = open_document(client, unindexed.store)
    init = (line_of(STORE, "def __init__"), 4)
    lenses = await lenses_of(client, uri)
    assert lens_title(lenses, init).startswith("▶ called 1× in 1 recording ·")
    assert client.messages == []  # nothing to tell: the daemon indexed the project
    checkout.write_bytes(aside)
    await wait_until(lambda: client.lens_refreshes)  # type: ignore[attr-defined]
    await wait_until(lambda: client.diagnostics.get(uri))
    for _ in range(100):
        lenses = await lenses_of(client, uri)
        if lens_title(lenses, init).startswith("▶ called 2×"):
            break
        await asyncio.sleep(0.1)
    assert lens_title(lenses, init).startswith("▶ called 2× in 2 recordings ·")


async def test_watched_files_refresh_without_polling(unindexed: Project, servers: Servers) -> None:
    """Polling off: a re-index is noticed on workspace/didChangeWatchedFiles."""
    checkout = unindexed.root / "tmp" / "trace" / "code" / "checkout.trace.json"
    aside = checkout.read_bytes()
    checkout.unlink()
    client = await servers.start(unindexed, pollInterval=0)  # its daemon indexes the rest
    uri = open_document(client, unindexed.store)
    init = (line_of(STORE, "def __init__"), 4)

    def title(lenses: dict[tuple[int, int], types.CodeLens]) -> str:
        command = lenses[init].command
        assert command is not None
        return command.title

    assert title(await lenses_of(client, uri)).startswith("▶ called 1× in 1 recording ·")
    checkout.write_bytes(aside)
    index_now(unindexed, checkout)
    # answers are cached until the server learns that the index changed
    assert title(await lenses_of(client, uri)).startswith("▶ called 1× in 1 recording ·")
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(
                    uri=(unindexed.root / "trace.yml").as_uri(), type=types.FileChangeType.Changed
                )
            ]
        )
    )
    await wait_until(lambda: client.lens_refreshes)  # type: ignore[attr-defined]
    assert title(await lenses_of(client, uri)).startswith("▶ called 2× in 2 recordings ·")
    # the server asked to be told about trace.yml changes
    registrations = client.registrations  # type: ignore[attr-defined]
    assert [r.method for r in registrations] == ["workspace/didChangeWatchedFiles"]


async def test_refresh_command(recorded: Project, servers: Servers) -> None:
    client = await servers.start(recorded)
    result = await command(client, "tracetool.refresh")
    [project] = result["projects"]
    assert project["root"] == str(recorded.root)
    assert project["indexed"] is True
    assert project["query_db"] == str(recorded.query_db())


async def test_bad_trace_yml_is_reported_once(unindexed: Project, servers: Servers) -> None:
    (unindexed.root / "trace.yml").write_text("name: shop\npackages: 5\n")
    client = await servers.start(unindexed)
    messages = await wait_until(lambda: client.messages)
    assert messages[0].type == types.MessageType.Error
    assert messages[0].message.startswith("tracetool: ")
    assert "packages" in messages[0].message
    uri = open_document(client, unindexed.store)
    assert await lenses_of(client, uri) == {}
    assert len(client.messages) == 1
