"""Writing and reading archive tars with Python's `tarfile` (no `tar` process).

Writing: the manifest is the first member; then members in sorted order, as regular files with
mode 0644, owner 0 and the manifest's time, so the same state gives the same bytes. Each file
is hashed while it is copied; a file that changed since the manifest was made fails the archive
(`TraceToolError`) instead of storing something the manifest does not describe.

Reading: only regular-file members whose names are safe relative paths listed by the manifest
are extracted, each written beside its target and renamed into place after its sha256 and size
matched the manifest. Links, devices, sparse members, absolute or `..` paths are refused. Before
anything is written, the manifest's sizes must fit in the archive file and on the destination's
disk; before each member is written, its declared size must equal the manifest's and its data
must lie inside the archive file — so a 10 KB archive cannot make restore write gigabytes.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

from tracetool.archive.manifest import MANIFEST_NAME, Manifest, parse_manifest, safe_relpath
from tracetool.errors import TraceFormatError, TraceToolError
from tracetool.trace.atomic import atomic_open, remove_orphans

_CHUNK = 1 << 20


class _HashingReader:
    """A file wrapper that hashes what tarfile reads from it."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self.digest = hashlib.sha256()
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self.digest.update(data)
        self.count += len(data)
        return data


def _info(name: str, size: int, mtime: float) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    info.mtime = int(mtime)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_archive(
    target: Path, manifest: Manifest, members: Iterable[tuple[str, Path]], mtime: float
) -> None:
    """Write `target` atomically: the manifest, then each (member name, source file)."""
    files = manifest.files
    remove_orphans(target.parent)  # temp files of an archive run that was killed
    with (
        atomic_open(target) as raw,
        tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        body = manifest.to_bytes()
        tar.addfile(_info(MANIFEST_NAME, len(body), mtime), io.BytesIO(body))
        for name, source in sorted(members):
            entry = files[name]
            with open(source, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size != entry["size"]:
                    raise TraceToolError(f"{source} changed while it was archived; run again")
                reader = _HashingReader(handle)
                tar.addfile(_info(name, size, mtime), reader)  # type: ignore[arg-type]
            if reader.digest.hexdigest() != entry["sha256"]:
                raise TraceToolError(f"{source} changed while it was archived; run again")


def open_archive(path: Path) -> tuple[tarfile.TarFile, Manifest]:
    """Open an archive and read its manifest (its first member)."""
    try:
        tar = tarfile.open(path, mode="r:")
    except (OSError, tarfile.TarError) as exc:
        raise TraceFormatError(f"{path}: not a readable tar archive ({exc})") from None
    try:
        first = tar.next()
        if first is None or first.name != MANIFEST_NAME or not first.isreg():
            raise TraceFormatError(f"{path}: not a tracetool archive (no {MANIFEST_NAME} first)")
        handle = tar.extractfile(first)
        assert handle is not None
        manifest = parse_manifest(handle.read(), f"{path}:{MANIFEST_NAME}")
    except tarfile.TarError as exc:
        tar.close()
        raise TraceFormatError(f"{path}: corrupt tar archive ({exc})") from None
    except BaseException:
        tar.close()
        raise
    return tar, manifest


def read_manifest_of(path: Path) -> Manifest:
    tar, manifest = open_archive(path)
    tar.close()
    return manifest


def extract_members(
    path: Path,
    tar: tarfile.TarFile,
    manifest: Manifest,
    dest: Path,
    on_file: Callable[[str], None] | None = None,
) -> list[str]:
    """Extract every member the manifest lists into `dest`, verified; returns their names."""
    expected = set(manifest.members)
    files = manifest.files
    archive_size = os.stat(path).st_size
    _check_room(path, dest, [files.get(name) for name in expected])
    done: list[str] = []
    try:
        for position, info in enumerate(tar):
            if position == 0 and info.name == MANIFEST_NAME:
                continue  # read by open_archive
            name = safe_relpath(info.name)
            if not info.isreg():
                raise TraceFormatError(f"{path}: member {name!r} is not a regular file")
            if info.issparse():  # never written by archive: its holes would expand on disk
                raise TraceFormatError(
                    f"{path}: member {name!r} is a sparse file (corrupt or hostile archive)"
                )
            if name not in expected or name not in files:
                raise TraceFormatError(f"{path}: member {name!r} is not listed in its manifest")
            entry = files[name]
            _check_declared(path, name, info, entry, archive_size)
            handle = tar.extractfile(info)
            assert handle is not None
            _write_verified(handle, dest / name, entry, f"{path}: {name}")
            done.append(name)
            if on_file is not None:
                on_file(name)
    except tarfile.TarError as exc:
        raise TraceFormatError(f"{path}: corrupt tar archive ({exc})") from None
    missing = expected - set(done)
    if missing:
        raise TraceFormatError(
            f"{path}: {len(missing)} listed files are missing, e.g. {min(missing)}"
        )
    return done


def _check_declared(
    path: Path, name: str, info: tarfile.TarInfo, entry: dict, archive_size: int
) -> None:
    """Before a byte is written: the member's declared size is the manifest's, and its data is
    really in the archive (a header cannot announce gigabytes the file does not hold)."""
    size = entry.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise TraceFormatError(f"{path}: manifest gives {name!r} no valid size")
    if info.size != size:
        raise TraceFormatError(
            f"{path}: member {name!r} declares {info.size} bytes, its manifest {size} "
            "(corrupt or hostile archive); nothing extracted from it"
        )
    if info.offset_data + info.size > archive_size:
        raise TraceFormatError(
            f"{path}: member {name!r} declares {info.size} bytes the archive does not hold "
            "(corrupt or hostile archive)"
        )


def _check_room(path: Path, dest: Path, entries: list[dict | None]) -> None:
    """The manifest's sizes must fit in the archive itself and on the destination's disk."""
    total = 0
    for entry in entries:
        size = entry.get("size") if isinstance(entry, dict) else None
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            total += size
    if total > os.stat(path).st_size:
        raise TraceFormatError(
            f"{path}: its manifest lists {total} bytes of files but the archive holds "
            f"{os.stat(path).st_size} (corrupt or hostile archive)"
        )
    import shutil

    dest.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(dest).free
    if total > free:
        raise TraceToolError(
            f"no space left on device for {path}: it needs {total} bytes, {dest} has {free} free"
        )


def _write_verified(handle: IO[bytes], target: Path, entry: dict, what: str) -> None:
    digest = hashlib.sha256()
    size = 0
    with atomic_open(target) as out:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
        if digest.hexdigest() != entry.get("sha256") or size != entry.get("size"):
            raise TraceFormatError(f"{what} does not match its manifest hash (corrupt archive)")
