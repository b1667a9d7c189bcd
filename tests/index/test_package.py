"""`tracetool.index` imports its names on first use; `extract` stays the function."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_reading_the_index_does_not_import_the_indexer() -> None:
    out = _run(
        "import sys, tracetool.index.schema\n"
        "print(sorted(m for m in sys.modules if m.startswith('tracetool.index.')))"
    )
    assert out == "['tracetool.index.schema']"


def test_extract_is_the_function_whichever_is_imported_first() -> None:
    out = _run(
        "import types, tracetool.index.worker, tracetool.index as package\n"
        "from tracetool.index import extract\n"
        "from tracetool.index.extract import extract as function\n"
        "print(extract is function is package.extract, isinstance(extract, types.FunctionType))"
    )
    assert out == "True True"


def test_every_public_name_resolves() -> None:
    import tracetool.index as package

    package.import_all()
    for name in package.__all__:
        assert getattr(package, name) is not None, name
    assert package.read_sidecar.__module__ == "tracetool.index.sidecar"


def test_a_small_job_does_not_import_multiprocessing() -> None:
    out = _run(
        "import sys\n"
        "from pathlib import Path\n"
        "from tracetool.workers import map_batches\n"
        "print(list(map_batches(len, [(Path('a'), 1)])), 'multiprocessing' in sys.modules)"
    )
    assert out == "[1] False"
