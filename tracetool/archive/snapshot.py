"""One revision's restored data, as `compare` reads it.

A snapshot is a directory of recordings plus, optionally, their analysis, in either layout:

- ours (`tracetool.archive.manifest`): `.analysis/<name>/sequence.json`, `.analysis/<name>/
  index.json`, `.analysis/openapi.yml`, `trace-archive.json`;
- AppMap's (restored by `appmap restore`): `<name>/sequence.json` and `<name>/metadata.json`
  index folders beside the recordings, `openapi.yml` at the top, `appmap_archive.json`.

A stored diagram is used as is, so AppMap data keeps AppMap's digests. Whatever is missing is
computed from the recording with the same code `archive` uses (`tracetool.archive.analysis`),
on demand and once per recording; computed analysis is not written back. `use_stored = False`
ignores stored analysis altogether (compare sets it when base and head were analyzed
differently, since their digests would not be comparable).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tracetool.archive.analysis import (
    AnalysisResult,
    AnalysisTask,
    analyze_file,
    recording_digest,
    run_analysis,
)
from tracetool.archive.compare_filter import CompareFilter
from tracetool.archive.manifest import (
    ANALYSIS_DIR,
    MANIFEST_NAME,
    OPENAPI_PATH,
    diagram_path,
    index_path,
    read_manifest,
    recording_name,
)
from tracetool.errors import TraceFormatError
from tracetool.trace import find_trace_files

APPMAP_MANIFEST = "appmap_archive.json"


@dataclass
class Recording:
    name: str  # relpath without extension
    relpath: str
    path: Path


class Snapshot:
    def __init__(self, root: Path, compare_filter: CompareFilter) -> None:
        self.root = root
        self.filter = compare_filter
        self.manifest = read_manifest(root)
        self.use_stored = True
        self.recordings: dict[str, Recording] = {}
        self.warnings: list[str] = []
        for path in find_trace_files(root):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(f"{ANALYSIS_DIR}/"):
                continue
            name = recording_name(rel)
            if name in self.recordings:
                self.warnings.append(f"{root.name}/{rel}: same name as another recording; ignored")
                continue
            self.recordings[name] = Recording(name, rel, path)
        self._index: dict[str, dict[str, Any]] = {}
        self._computed: dict[str, dict[str, Any]] = {}  # built diagrams not yet handed out
        self._digests: dict[str, str] = {}

    @property
    def layout(self) -> str:
        """`tracetool`, `appmap` (restored by AppMap) or `plain` (recordings only)."""
        if self.manifest is not None:
            return "tracetool"
        return "appmap" if (self.root / APPMAP_MANIFEST).is_file() else "plain"

    def analysis_key(self) -> Any:
        if self.manifest is None or not self.manifest.analysis.get("analyzed"):
            return None
        return self.manifest.analysis.get("key")

    @staticmethod
    def has_data(root: Path) -> bool:
        if not root.is_dir():
            return False
        if (root / MANIFEST_NAME).is_file() or (root / APPMAP_MANIFEST).is_file():
            return True
        return any(True for _ in find_trace_files(root))

    # -- analysis, stored or computed

    def _compute(self, name: str) -> None:
        rec = self.recordings[name]
        self._take(analyze_file(AnalysisTask(str(rec.path), rec.relpath, self.filter.to_json())))

    def _take(self, result: AnalysisResult) -> None:
        rec = self.recordings[recording_name(result.relpath)]
        if result.error is not None:
            raise TraceFormatError(f"{rec.path}: {result.error}")
        self._index.setdefault(rec.name, orjson.loads(result.index))
        self._computed[rec.name] = orjson.loads(result.diagram)

    def _stored(self, name: str, *candidates: str) -> dict[str, Any] | None:
        if not self.use_stored:
            return None
        for rel in candidates:
            path = self.root / rel
            if path.is_file():
                try:
                    data = orjson.loads(path.read_bytes())
                except (OSError, orjson.JSONDecodeError) as exc:
                    self.warnings.append(f"{path}: unreadable ({exc}); recomputed")
                    continue
                if isinstance(data, dict):
                    return data
        return None

    def _diagram_files(self, name: str) -> tuple[str, str]:
        return diagram_path(name), f"{name}/sequence.json"

    def prefetch(self, workers: int | None = None) -> None:
        """Analyze, on a process pool, every recording that lacks stored analysis. A recording
        that cannot be analyzed is dropped from the snapshot with a warning."""
        todo = []
        for name, rec in self.recordings.items():
            stored = self.use_stored and (
                (self.root / index_path(name)).is_file()
                and any((self.root / p).is_file() for p in self._diagram_files(name))
            )
            if not stored and name not in self._index:
                todo.append(AnalysisTask(str(rec.path), rec.relpath, self.filter.to_json()))
        for result in run_analysis(todo, workers):
            name = recording_name(result.relpath)
            if result.error is not None:
                self.warnings.append(f"{self.root.name}/{result.relpath}: ignored: {result.error}")
                del self.recordings[name]
                continue
            self._take(result)
            if self._stored_diagram(name) is None:  # keep only the digest: diagrams are big
                self._digests[name] = _digest(self._computed.pop(name))

    def index(self, name: str) -> dict[str, Any]:
        """The index entry (`tracetool.archive.analysis` module doc) of a recording."""
        if name not in self._index:
            stored = self._stored(name, index_path(name))
            if stored is not None:
                self._index[name] = stored
            else:
                self._compute(name)
        return self._index[name]

    def _stored_diagram(self, name: str) -> dict[str, Any] | None:
        stored = self._stored(name, *self._diagram_files(name))
        return (
            stored if stored is not None and isinstance(stored.get("rootActions"), list) else None
        )

    def diagram(self, name: str) -> dict[str, Any]:
        """The recording's sequence.json object (stored, ours or AppMap's, else built).

        Not cached (diagrams are big): callers keep what they need.
        """
        stored = self._stored_diagram(name)
        if stored is not None:
            return stored
        if name not in self._computed:
            self._compute(name)
        return self._computed.pop(name)

    def digest(self, name: str) -> str:
        if name not in self._digests:
            self._digests[name] = _digest(self.diagram(name))
        return self._digests[name]

    def metadata(self, name: str) -> dict[str, Any]:
        if name in self._index:
            md = self._index[name].get("metadata")
        else:
            appmap = self._stored(name, f"{name}/metadata.json")
            md = appmap if appmap is not None else self.index(name).get("metadata")
        return md if isinstance(md, dict) else {}

    def is_test(self, name: str) -> bool:
        md = self.metadata(name)
        recorder = md.get("recorder")
        kind = recorder.get("type") if isinstance(recorder, dict) else None
        return kind == "tests" or (kind is None and "test_status" in md)

    def openapi_path(self) -> Path | None:
        for rel in (OPENAPI_PATH, "openapi.yml"):
            if (self.root / rel).is_file():
                return self.root / rel
        return None

    def openapi(self) -> dict[str, Any] | None:
        path = self.openapi_path()
        if path is None:
            return None
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
        except (OSError, yaml.YAMLError) as exc:
            self.warnings.append(f"{path}: not readable as YAML ({exc.__class__.__name__})")
            return None
        return data if isinstance(data, dict) else None

    def analysis_paths(self, name: str) -> list[Path]:
        """Derived files and folders of a recording (both layouts), for deletion."""
        return [self.root / ANALYSIS_DIR / name, self.root / name]


def _digest(diagram: dict[str, Any]) -> str:
    return recording_digest([str(a.get("subtreeDigest", "")) for a in diagram["rootActions"]])
