"""`tracetool restore`: rebuild the recordings (and analysis) of a revision from archives.

Contract (spec "restore"):

- Archives are found in `<archive-dir>/full/<revision>.tar` and
  `<archive-dir>/incremental/<revision>.tar` (default `.trace/archive`), and with
  `--github-repo` also among the repository's build artifacts (`tracetool.archive.hosting`).
- The state of REV comes from the newest revision in `git rev-list REV` (REV first, then its
  ancestors, newest first) that has a full archive, or an incremental one whose chain of bases
  (each incremental names the revision it was made against) ends in a full archive. The chain
  is applied oldest first — history order, not AppMap's alphabetical order of SHAs — deleting
  what each incremental lists as deleted. Outside git, only REV itself is looked up.
- `--exact` fails unless the state restored is REV's own (its name or its commit SHA).
- Every file is checked against the manifest's sha256 while it is extracted; a mismatch or an
  unsafe member fails the restore. The output directory must not exist; work happens in a
  sibling directory renamed into place at the end, so a failed restore leaves nothing behind
  (the staging directory of a restore that was killed is removed by the next restore there).
- The output holds the recordings, their analysis and a manifest describing the whole state
  (`tracetool.archive.manifest`), with `applied` listing the archives used.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tracetool.archive import git
from tracetool.archive.hosting import HostingStore
from tracetool.archive.manifest import MANIFEST_NAME, Manifest, revision_filename, safe_relpath
from tracetool.archive.tarball import extract_members, open_archive, read_manifest_of
from tracetool.errors import NotFoundError, UsageError
from tracetool.trace.atomic import atomic_write_bytes, process_alive

DEFAULT_ARCHIVE_DIR = Path(".trace") / "archive"
DEFAULT_WORK_DIR = Path(".trace") / "work"
TYPES = ("full", "incremental")


@dataclass(frozen=True)
class RestoreOptions:
    revision: str | None = None
    output_dir: Path | None = None
    archive_dir: Path = DEFAULT_ARCHIVE_DIR
    github_repo: str | None = None
    exact: bool = False


@dataclass(frozen=True)
class Applied:
    type: str
    revision: str
    path: Path
    extracted: int
    deleted: int


@dataclass(frozen=True)
class RestoreResult:
    requested: str
    revision: str  # the revision whose state was restored
    output_dir: Path
    applied: tuple[Applied, ...]
    files: int
    warnings: tuple[str, ...]


class _Sources:
    """Where each (type, revision file name) archive can be had: a local file or an artifact."""

    def __init__(self, archive_dir: Path, remote: HostingStore | None) -> None:
        self.archive_dir = archive_dir
        self.remote = remote
        self.local: dict[tuple[str, str], Path] = {}
        for type_ in TYPES:
            folder = archive_dir / type_
            if folder.is_dir():
                for path in folder.glob("*.tar"):
                    self.local[(type_, path.name[: -len(".tar")])] = path
        self._remote_keys: set[tuple[str, str]] = set()
        if remote is not None:
            self._remote_keys = {(t, revision_filename(r)) for (t, r) in remote.artifacts()}
        self._manifests: dict[tuple[str, str], Manifest] = {}

    def has(self, type_: str, key: str) -> bool:
        return (type_, key) in self.local or (type_, key) in self._remote_keys

    def path(self, type_: str, key: str) -> Path:
        found = self.local.get((type_, key))
        if found is None:
            assert self.remote is not None
            revision = next(
                r
                for (t, r) in self.remote.artifacts()
                if t == type_ and revision_filename(r) == key
            )
            found = self.local[(type_, key)] = self.remote.fetch(type_, revision, f"{key}.tar")
        return found

    def manifest(self, type_: str, key: str) -> Manifest:
        if (type_, key) not in self._manifests:
            self._manifests[(type_, key)] = read_manifest_of(self.path(type_, key))
        return self._manifests[(type_, key)]


def _chain(sources: _Sources, key: str, warnings: list[str]) -> list[tuple[str, str]] | None:
    """Archives that rebuild the state stored under `key`, oldest first (module doc)."""
    chain: list[tuple[str, str]] = []
    seen: set[str] = set()
    while True:
        if sources.has("full", key):
            chain.append(("full", key))
            return chain[::-1]
        if not sources.has("incremental", key) or key in seen:
            return None
        seen.add(key)
        chain.append(("incremental", key))
        base = sources.manifest("incremental", key).base_revision
        if not base:
            warnings.append(f"incremental archive {key} names no base revision; skipped")
            return None
        base_key = revision_filename(base)
        if not (sources.has("full", base_key) or sources.has("incremental", base_key)):
            warnings.append(
                f"incremental archive {key} needs the archive of its base {base}, which is "
                f"not available; skipped"
            )
            return None
        key = base_key


def restore(options: RestoreOptions) -> RestoreResult:
    """Restore one revision (module doc)."""
    revision = options.revision or git.current_revision()
    requested_key = revision_filename(revision)
    out = options.output_dir or DEFAULT_WORK_DIR / requested_key
    if out.exists():
        raise UsageError(f"output directory {out} already exists; remove it or pass --output-dir")
    remote = HostingStore(options.github_repo, options.archive_dir) if options.github_repo else None
    if remote is None and not options.archive_dir.is_dir():
        raise NotFoundError(f"no archive directory {options.archive_dir} (run tracetool archive)")
    sources = _Sources(options.archive_dir, remote)
    sha = git.resolve(revision)
    own = {requested_key} | ({revision_filename(sha)} if sha else set())
    warnings: list[str] = []
    chain: list[tuple[str, str]] | None = None
    candidates = git.ancestry(revision)
    for candidate in candidates:
        key = revision_filename(candidate)
        if options.exact and key not in own:
            break
        chain = _chain(sources, key, warnings)
        if chain is not None:
            break
    where = f"{options.archive_dir}" + (f" or {options.github_repo}" if options.github_repo else "")
    if chain is None:
        if options.exact:
            raise NotFoundError(f"no archive of exactly revision {revision} in {where} (--exact)")
        raise NotFoundError(
            f"no archive of revision {revision} or of its {len(candidates) - 1} ancestors "
            f"in {where}"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_orphan_staging(out.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.restoring-{os.getpid()}-", dir=out.parent))
    try:
        applied, state, last = _apply(sources, chain, staging, warnings)
        data: dict[str, Any] = dict(last.data)
        data.pop("members", None)
        data.pop("deleted", None)
        data["files"] = dict(sorted(state.items()))
        data["requestedRevision"] = revision
        data["restoredAt"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        data["applied"] = [
            {"type": a.type, "revision": a.revision, "archive": str(a.path)} for a in applied
        ]
        atomic_write_bytes(staging / MANIFEST_NAME, Manifest(data).to_bytes())
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return RestoreResult(
        requested=revision,
        revision=last.revision,
        output_dir=out,
        applied=tuple(applied),
        files=len(state),
        warnings=tuple(warnings),
    )


def _apply(
    sources: _Sources, chain: list[tuple[str, str]], dest: Path, warnings: list[str]
) -> tuple[list[Applied], dict[str, dict[str, Any]], Manifest]:
    applied: list[Applied] = []
    state: dict[str, dict[str, Any]] = {}
    last: Manifest | None = None
    for type_, key in chain:
        path = sources.path(type_, key)
        tar, manifest = open_archive(path)
        with tar:
            if manifest.type != type_:
                warnings.append(f"{path}: manifest says {manifest.type}, stored as {type_}")
            for name in manifest.deleted if type_ == "incremental" else ():
                _remove(dest, safe_relpath(name))
                state.pop(name, None)
            done = extract_members(path, tar, manifest, dest)
        for name in done:
            state[name] = manifest.files[name]
        if set(state) != set(manifest.files):
            warnings.append(
                f"{path}: the restored files differ from the state its manifest describes "
                f"(it was made against another base); {len(set(manifest.files) - set(state))} "
                f"missing, {len(set(state) - set(manifest.files))} extra"
            )
        applied.append(Applied(type_, manifest.revision, path, len(done), len(manifest.deleted)))
        last = manifest
    assert last is not None
    return applied, state, last


_STAGING = re.compile(r"\..+\.restoring-(?P<pid>[0-9]+)-[a-z0-9_]{8}")


def _remove_orphan_staging(parent: Path) -> None:
    """Staging directories of restores that were killed (their process is gone)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        match = _STAGING.fullmatch(name)
        if match is None:
            continue
        pid = int(match.group("pid"))
        if pid != os.getpid() and not process_alive(pid):
            shutil.rmtree(parent / name, ignore_errors=True)


def _remove(root: Path, name: str) -> None:
    target = root / name
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
    parent = target.parent
    while parent != root:
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent
