"""`tracetool index` re-indexing a few recordings pays for what it uses only: pins the imports
and import-time work it was spared (issue #18: the one-file re-index is mostly fixed costs).

Each check runs in a fresh interpreter (an import made by another test would hide a regression).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.index.shop import make_shop

# What an index run must not import: the stats command's body, the diagram commands' service,
# renderers and diff (the digest hook needs tracetool.diagram.builder only), trace.yml's
# machinery when --trace-dir is given.
NOT_IMPORTED = (
    "tracetool.stats._api",
    "tracetool.trace.slim",
    "tracetool.filters.state",
    "tracetool.diagram.service",
    "tracetool.diagram.plantuml",
    "tracetool.diagram.diff",
    "tracetool.config",
)

_RUN = """
import json, sys
from tracetool.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
import tracetool.routes, tracetool.sql, tracetool.lazyre
modules = sorted(sys.modules)
lazy = [
    name for module in (tracetool.routes, tracetool.sql)
    for name, value in vars(module).items()
    if isinstance(value, tracetool.lazyre.LazyPattern) and "compiled" in vars(value)
]
print(json.dumps({"code": code, "modules": modules, "compiled": lazy}))
"""


def _index(trace_dir: Path, db: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _RUN, "index", "--trace-dir", str(trace_dir), "--query-db", str(db)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(out.stdout.splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("lazy")
    trace_dir = make_shop(root / "recordings")
    db = root / "q.db"
    assert _index(trace_dir, db)["code"] == 0  # the cold index
    return trace_dir, db


@pytest.mark.parametrize("changed", [False, True])
def test_a_reindex_imports_nothing_it_does_not_use(shop: tuple[Path, Path], changed: bool) -> None:
    trace_dir, db = shop
    if changed:
        recording = next(trace_dir.rglob("*.json"))
        recording.write_bytes(recording.read_bytes() + b"\n")
        later = time.time() + 5
        os.utime(recording, (later, later))
    result = _index(trace_dir, db)
    assert result["code"] == 0
    modules = set(result["modules"])  # type: ignore[arg-type]
    if changed:  # (the recording was indexed again: the worker and the digest hook ran)
        assert {"tracetool.index.worker", "tracetool.diagram.builder"} <= modules
    assert not modules & set(NOT_IMPORTED)
    if not changed:  # no recording read: no SQL analyzed, no route named, no pattern compiled
        assert result["compiled"] == []


def test_a_one_shot_index_ends_at_once_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """`python -m tracetool index` ends without the interpreter's teardown (`end_at_once`):
    its output is all there, and the database and its lock are released (the next run
    neither waits nor finds a WAL left)."""
    trace_dir = make_shop(tmp_path / "recordings")
    db = tmp_path / "q.db"
    command = [sys.executable, "-m", "tracetool", "index", "--trace-dir", str(trace_dir)]
    for _ in range(2):
        out = subprocess.run(
            [*command, "--query-db", str(db), "--json"], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["found"] > 0
        assert not db.with_name(db.name + "-wal").exists()


def test_the_package_names_still_resolve_on_first_use() -> None:
    code = (
        "import sys, tracetool.stats as s, tracetool.diagram as d\n"
        "assert 'tracetool.stats._api' not in sys.modules\n"
        "assert 'tracetool.diagram.service' not in sys.modules\n"
        "from tracetool.diagram.service import BoundDigests\n"
        "assert d.BoundDigests is BoundDigests\n"
        "assert s.directory_stats.__module__ == 'tracetool.stats._api'\n"
        "from tracetool.stats import recording_stats, RecordingStats\n"
        "from tracetool.diagram import write_diagrams, Diagram, DiagramOptions\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lazy_patterns_behave_as_compiled_ones() -> None:
    import re

    from tracetool.lazyre import LazyPattern, lazy

    pattern = lazy(r"(?P<word>[a-z]+)(\d*)", re.I)
    assert isinstance(pattern, LazyPattern) and "compiled" not in vars(pattern)
    real = re.compile(r"(?P<word>[a-z]+)(\d*)", re.I)
    for text in ("abc12 DEF", "", "12 x3"):
        assert pattern.sub("-", text) == real.sub("-", text)
        assert pattern.findall(text) == real.findall(text)
        assert bool(pattern.fullmatch(text)) == bool(real.fullmatch(text))
        assert pattern.split(text) == real.split(text)
    assert (pattern.pattern, pattern.flags, pattern.groups) == (real.pattern, real.flags, 2)
    assert pattern.groupindex == real.groupindex
    assert vars(pattern)["compiled"] is real  # (re's own cache hands back the same object)
    assert lazy(rb"\\u").search(b"a\\u") is not None


def test_a_profiled_one_shot_index_still_writes_its_profile(tmp_path: Path) -> None:
    """Under a profiler the run exits normally (cProfile writes its data at exit)."""
    trace_dir = make_shop(tmp_path / "recordings")
    profile = tmp_path / "index.prof"
    command = ["index", "--trace-dir", str(trace_dir), "--query-db", str(tmp_path / "q.db")]
    subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "tracetool", *command],
        capture_output=True,
        check=True,
        timeout=120,
    )
    assert profile.stat().st_size > 0
