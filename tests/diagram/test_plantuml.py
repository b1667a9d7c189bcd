"""PlantUML output: byte-equal to AppMap's goldens, and valid for the real `plantuml -syntax`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.diagram.conftest import APP, REVOKE, REVOKE_UML, app
from tracetool.diagram import DiagramOptions, build_diagram
from tracetool.diagram.diff import diff
from tracetool.diagram.plantuml import THEME, chunks, js_number, render
from tracetool.filters import decode
from tracetool.trace import load


@pytest.mark.parametrize(
    "name", ["show_user", "list_users", "list_users_prefetch", "user_not_found"]
)
def test_matches_appmap_golden(name: str) -> None:
    expected = (APP / f"{name}.sequence.uml").read_text()
    assert render(build_diagram(load(app(name)))) == expected


def test_plain_variant_matches_golden() -> None:
    expected = (APP / "show_user.plain.sequence.uml").read_text()
    got = render(build_diagram(load(app("show_user"))), markup=False, notes=False)
    assert got == expected


def test_filtered_rpc_golden_with_notes_and_no_loops() -> None:
    diagram = build_diagram(
        load(REVOKE), DiagramOptions(loops=False), decode({"hideExternal": True})
    )
    assert render(diagram, markup=False) == REVOKE_UML.read_text()


def test_js_number_formatting() -> None:
    assert [js_number(x) for x in (1.349, 0.0944, 163.2, 12345.6, 0.00000012)] == [
        "1.35",
        "0.0944",
        "163",
        "12300",
        "1.2e-7",
    ]


PLANTUML = shutil.which("plantuml")


def _syntax(text: str, tmp_path: Path) -> str:
    # the AppMap theme is fetched from the network; the syntax check must not need it
    body = "\n".join(line for line in text.splitlines() if line != THEME)
    out = subprocess.run(
        [PLANTUML or "plantuml", "-syntax"],
        input=body,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return out.stdout


@pytest.mark.skipif(PLANTUML is None, reason="plantuml not installed (apt-get install plantuml)")
def test_plantuml_accepts_diagrams_and_diffs(tmp_path: Path) -> None:
    texts = [
        render(build_diagram(load(REVOKE))),
        render(build_diagram(load(app("list_users")))),
        render(build_diagram(load(REVOKE), DiagramOptions(expand=("package:app/models",)))),
        render(
            diff(build_diagram(load(app("user_not_found"))), build_diagram(load(app("show_user"))))
            or build_diagram(load(REVOKE))
        ),
    ]
    for text in texts:
        assert _syntax(text, tmp_path).splitlines()[0] == "SEQUENCE", text[:200]


@pytest.mark.skipif(PLANTUML is None, reason="plantuml not installed (apt-get install plantuml)")
def test_plantuml_rejects_garbage(tmp_path: Path) -> None:
    assert "ERROR" in _syntax("@startuml\nA->B: x\nnot plantuml at all\n@enduml", tmp_path)


@pytest.mark.parametrize("per_chunk", [1, 3, 8192])
def test_chunks_join_to_the_document(per_chunk: int) -> None:
    diagram = build_diagram(load(app("list_users")))
    expected = (APP / "list_users.sequence.uml").read_text()
    assert "".join(chunks(diagram, lines_per_chunk=per_chunk)) == expected
