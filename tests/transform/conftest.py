"""Fixtures for trim/sanitize tests: writing documents, running the CLI in-process."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest

from tracetool.cli import main

# tracetool.sql arrives from the sql helper's branch; tests that parameterize SQL wait for it.
needs_sql = pytest.mark.skipif(
    importlib.util.find_spec("tracetool.sql") is None,
    reason="tracetool.sql not merged yet (sanitize rule 6 needs sql.parameterize)",
)


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return orjson.loads(self.out)


@pytest.fixture
def tt(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """Run `tracetool ARGS…` in-process through the real entry point (error path included)."""

    def run(*args: Any) -> Run:
        capsys.readouterr()
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


def write_doc(path: Path, doc: dict[str, Any], *, indent: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    option = orjson.OPT_INDENT_2 if indent else 0
    path.write_bytes(orjson.dumps(doc, option=option))
    return path


def read_doc(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(path.read_bytes())
    return data


def param(name: str, value: Any, cls: str = "str", **extra: Any) -> dict[str, Any]:
    return {"name": name, "class": cls, "value": value, "object_id": 7, **extra}
