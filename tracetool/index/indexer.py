"""`index_directory`: bring query.db and the sidecars up to date with a recordings directory.

One run:
1. takes the writer lock beside query.db (another writer → `IndexBusyError` after a wait);
2. opens query.db (created, migrated or rebuilt, see `tracetool.index.schema`);
3. scans trace_dir (`find_trace_files`: `*.trace.json` and `*.appmap.json`) and compares each
   file's size and mtime_ns with the database: equal and with a sidecar → untouched;
4. hands the rest to `tracetool.index.worker.process` — in a process pool when there is enough
   work, inline otherwise — passing the content hashes that would make a file "the same": its
   own old hash (a touched or restored file is not parsed again) and those of vanished files of
   the same size (a rename moves the database row and the sidecar instead of re-indexing);
5. writes results as they arrive, in the parent only, in batched transactions;
6. deletes what vanished, forgets unused code objects and recounts the ones the run touched
   (`Writer.finish_code_objects`), builds the secondary indexes after a cold load, and records
   the run in `meta`.

The SQL analyses of earlier runs (`tracetool.index.sqlcache`, beside query.db) seed the run, and
forked workers with it; the ones the workers make anew are added and saved at the end.

Skipped files (malformed, partial, too large) are reported in `IndexResult.skipped`, one reason
each, and do not stop the run; a skipped file that was indexed before keeps its previous rows
until it can be read again. The caller decides whether skips are fatal (`--strict`).
"""

from __future__ import annotations

import gc
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from queue import SimpleQueue

from tracetool import __version__
from tracetool.errors import NotFoundError
from tracetool.index import schema, sidecar
from tracetool.index.lock import WriterLock
from tracetool.index.source import Source, detect
from tracetool.index.sqlcache import SqlCache
from tracetool.index.worker import Indexed, Result, Same, Skipped, Task, process, warm_up
from tracetool.index.writer import Known, Writer
from tracetool.paths import query_db_path
from tracetool.trace import TRACE_SUFFIXES, find_trace_files
from tracetool.trace.document import SKIP_DIRS
from tracetool.trace.reader import describe, diagnose, not_regular

# Parsing a JSON document into Python objects costs several times its size in memory.
MEMORY_PER_BYTE = 8
# Below this much work a process pool costs more than it saves.
POOL_MIN_FILES = 4
POOL_MIN_BYTES = 4_000_000


def default_query_db(trace_dir: Path | str) -> Path:
    """`~/.trace/data/<sha>/query.db`, `<sha>` from the resolved recordings directory
    (`tracetool.paths`: the one layout shared with the daemon's discovery file)."""
    return query_db_path(trace_dir)


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def default_max_bytes(workers: int) -> int:
    """Largest recording indexed: what fits in memory with every worker busy at once."""
    available = _available_memory()
    if available is None:
        return 512 * 1024 * 1024
    return max(64 * 1024 * 1024, available // ((workers + 1) * MEMORY_PER_BYTE))


@dataclass(frozen=True)
class IndexOptions:
    query_db: Path | None = None  # default: default_query_db(trace_dir)
    workers: int | None = None  # default: CPU count (1 = inline)
    # Skip recordings larger than this; default: default_max_bytes(workers) for recordings
    # read whole (a bigger one is read event by event, in memory that does not grow with it).
    max_bytes: int | None = None
    lock_timeout: float = 10.0
    # False when the caller already holds the WriterLock (a long-running watcher keeps it).
    lock: bool = True
    log_assistant: bool = False  # accepted for the assistant; no effect on indexing yet
    commit_seconds: float = 1.0  # readers see progress at least this often (the daemon: less)
    # A concurrent.futures executor (process pool) kept warm by a long-lived caller (the
    # daemon) runs the per-file work instead of a pool started for this run.
    executor: Executor | None = field(default=None, compare=False)
    # where the recordings come from (--source-* flags); default: detected (index.source)
    source: dict[str, str | None] | None = None


@dataclass(frozen=True)
class Skip:
    path: str  # relative to trace_dir
    reason: str


@dataclass(frozen=True)
class IndexResult:
    trace_dir: Path
    query_db: Path
    found: int = 0
    unchanged: int = 0
    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    touched: tuple[str, ...] = ()  # same content, new mtime: database row refreshed only
    renamed: tuple[tuple[str, str], ...] = ()
    deleted: tuple[str, ...] = ()
    skipped: tuple[Skip, ...] = ()
    rebuilt: bool = False  # query.db was created or rebuilt from scratch
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.renamed or self.deleted)


Progress = Callable[[int, int], None]  # (done, total)
FileReport = Callable[[str, str], None]  # (relpath, outcome: added/updated/...)


@dataclass
class _Run:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)


def _relpath(path: Path, root: Path) -> str:
    text, prefix = str(path), str(root).rstrip(os.sep) + os.sep
    if text.startswith(prefix):  # what the scan finds: no pathlib work per file
        return text[len(prefix) :].replace(os.sep, "/")
    return path.relative_to(root).as_posix() if path != root else path.name


def _inline(tasks: list[Task], workers: int) -> bool:
    """Whether `_run_tasks` runs `tasks` in this process (too little work for a pool)."""
    if workers <= 1 or len(tasks) < POOL_MIN_FILES:
        return True
    return sum(t.size for t in tasks) < POOL_MIN_BYTES


def _run_tasks(
    tasks: list[Task], workers: int, executor: Executor | None = None
) -> Iterator[Result]:
    if executor is not None:
        yield from _completed(executor, tasks)
        return
    if _inline(tasks, workers):
        for task in tasks:
            yield process(task)
        return
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor

    # fork is cheapest and safe while this process has no other threads; spawn otherwise.
    methods = multiprocessing.get_all_start_methods()
    method = "fork" if "fork" in methods and threading.active_count() == 1 else "spawn"
    ctx = multiprocessing.get_context(method)
    frozen = method == "fork"
    if frozen:
        warm_up(tokenizer=False)
        # What the workers inherit is never garbage: out of the collector's reach, their
        # collections do not walk it (nor copy its pages on write to bump its GC state).
        gc.freeze()
    # A concurrent.futures pool, not multiprocessing.Pool: the latter's worker-handler thread
    # wakes whenever a result is waiting in its pipe and spins while the results (~50 KB each)
    # are read, ~1 s of the parent's CPU per 1000 recordings, competing with the writer for the
    # GIL. Its workers live for the whole run (no max_tasks_per_child: 3.11 refuses it with
    # fork); a worker's memory is bounded by the biggest recording it reads whole.
    try:
        with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx) as pool:
            yield from _completed(pool, tasks)
    finally:
        if frozen:
            gc.unfreeze()


def _completed(executor: Executor, tasks: list[Task]) -> Iterator[Result]:
    """`process` of every task on `executor`, in completion order: the order in which the
    executor finished them, so each worker's results come in the order it returned them (a
    worker names a code object row it sent before by None, `worker._sent_once`; `as_completed`
    would yield the futures already done when it starts in any order). A result is not kept
    here once yielded (the caller writes it and lets it go)."""
    done: SimpleQueue[Future[Result]] = SimpleQueue()
    pending: set[Future[Result]] = set()
    try:
        for task in tasks:
            future = executor.submit(process, task)
            pending.add(future)
            future.add_done_callback(done.put)  # (called at once if already done)
        while pending:
            future = done.get()
            pending.discard(future)
            yield future.result()
            del future
    finally:
        for future in pending:
            future.cancel()


def index_directory(
    trace_dir: Path | str,
    options: IndexOptions = IndexOptions(),
    *,
    progress: Progress | None = None,
    report: FileReport | None = None,
) -> IndexResult:
    """Index every recording below `trace_dir` into query.db (see module doc)."""
    return _index(trace_dir, options, None, progress, report)


def index_paths(
    trace_dir: Path | str,
    paths: Iterable[Path | str],
    options: IndexOptions = IndexOptions(),
    *,
    removed_dirs: Iterable[Path | str] = (),
    report: FileReport | None = None,
) -> IndexResult:
    """Bring query.db up to date for these files only (the daemon's live updates).

    Each path below `trace_dir` is looked at like `index_directory` looks at every file: present
    → indexed when new or changed, absent → forgotten; recordings below `removed_dirs` count as
    absent. A file that vanished in the same call and reappears under a new name with the same
    content is renamed, not parsed again. Paths outside `trace_dir`, non-recordings and files in
    ignored folders are left alone. No scan of the tree, no checkpoint: cheap enough per batch.
    """
    return _index(trace_dir, options, _Scope(tuple(paths), tuple(removed_dirs)), None, report)


@dataclass(frozen=True)
class _Scope:
    paths: tuple[Path | str, ...]
    removed_dirs: tuple[Path | str, ...]


def _index(
    trace_dir: Path | str,
    options: IndexOptions,
    scope: _Scope | None,
    progress: Progress | None,
    report: FileReport | None,
) -> IndexResult:
    started = time.monotonic()
    root = Path(trace_dir).expanduser().resolve()
    if not root.is_dir():
        raise NotFoundError(
            f"{root}: no such recordings directory (record something first, or pass --trace-dir)"
        )
    query_db = (options.query_db or default_query_db(root)).expanduser().absolute()
    workers = options.workers or os.cpu_count() or 1
    max_bytes = options.max_bytes or default_max_bytes(workers)
    hard_limit = options.max_bytes is not None
    lock = WriterLock(query_db, timeout=options.lock_timeout) if options.lock else nullcontext()
    with lock:
        conn, fresh = schema.open_writer(query_db)
        try:
            if fresh:
                import shutil

                shutil.rmtree(sidecar.sidecar_root(query_db), ignore_errors=True)
            writer = Writer(
                conn,
                batch_seconds=options.commit_seconds,
                source=_source(root, query_db, options.source or {}),
            )
            run = _Run()
            analyses = SqlCache.load(query_db)
            with analyses.seeded():
                found, unchanged = _update(
                    root,
                    query_db,
                    writer,
                    fresh,
                    workers,
                    (max_bytes, hard_limit),
                    run,
                    progress,
                    report,
                    scope,
                    options.executor,
                    analyses,
                )
            analyses.save()
            if fresh:
                writer.commit()
                # (the worker processes are gone: their cores help sort the index keys)
                schema.create_indexes(conn, threads=min(workers, 4) if workers > 1 else 0)
            if fresh or run.added or run.updated or run.deleted:
                # (after a cold load's indexes: counting by code object needs one)
                writer.finish_code_objects(everything=fresh)
            writer.set_meta(trace_dir=str(root), tool_version=__version__, indexed_at=time.time())
            writer.commit()
            if fresh:
                conn.execute("ANALYZE")
            elif scope is None:
                conn.execute("PRAGMA optimize")
            if scope is None:  # a live update leaves checkpoints to SQLite (readers keep going)
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.close()
    return IndexResult(
        trace_dir=root,
        query_db=query_db,
        found=found,
        unchanged=unchanged,
        added=tuple(run.added),
        updated=tuple(run.updated),
        touched=tuple(run.touched),
        renamed=tuple(run.renamed),
        deleted=tuple(run.deleted),
        skipped=tuple(run.skipped),
        rebuilt=fresh,
        seconds=time.monotonic() - started,
    )


_SOURCES: dict[tuple[object, ...], Source] = {}


def _source(root: Path, query_db: Path, given: dict[str, str | None]) -> Source:
    """The run's source, detected once per process and directory (the daemon indexes often).
    Only a shared database (tracetool.store) separates writers by origin."""
    from tracetool import store

    shared = store.url_for(query_db) is not None
    key = (root, shared, *sorted(given.items()))
    if key not in _SOURCES:
        found = detect(root, **given)
        _SOURCES[key] = found if shared else Source(**{**found.__dict__, "origin": ""})
    return _SOURCES[key]


def _update(
    root: Path,
    query_db: Path,
    writer: Writer,
    fresh: bool,
    workers: int,
    limit: tuple[int, bool],  # Task.max_bytes, Task.hard_limit
    run: _Run,
    progress: Progress | None,
    report: FileReport | None,
    scope: _Scope | None = None,
    executor: Executor | None = None,
    analyses: SqlCache | None = None,
) -> tuple[int, int]:
    known = writer.known()
    on_disk: dict[str, tuple[Path, int, int]] = {}
    unusable: list[tuple[Path, str]] = []
    if scope is None:
        candidates = find_trace_files(root, unusable)
    else:
        candidates = _in_scope(root, scope, known)
    for path, reason in unusable:
        run.skipped.append(Skip(_relpath(path, root), reason))
    for path in candidates:
        try:
            st = os.stat(str(path))  # (Path.stat makes its text again on every call)
        except OSError:
            continue  # vanished between listing and stat
        if not stat.S_ISREG(st.st_mode):  # a FIFO is never opened: reading it would block
            run.skipped.append(Skip(_relpath(path, root), str(not_regular("", st.st_mode))[2:]))
            continue
        on_disk[_relpath(path, root)] = (path, st.st_size, st.st_mtime_ns)

    if scope is None:
        missing = {rel: k for rel, k in known.items() if rel not in on_disk}
    else:
        looked_at = {_relpath(p, root) for p in candidates}
        missing = {rel: known[rel] for rel in looked_at if rel in known and rel not in on_disk}
    by_size: dict[int, list[str]] = {}
    for k in missing.values():
        by_size.setdefault(k.size, []).append(k.sha256)

    tasks: list[Task] = []
    unchanged = 0
    run_id = os.urandom(8).hex()  # (Task.run: what a worker has sent is per run)
    side_root = str(sidecar.sidecar_root(query_db))
    sides = {rel: sidecar.sidecar_file(side_root, rel) for rel in on_disk}
    sidecars = _files_in({sides[rel].rpartition("/")[0] for rel in on_disk if rel in known})
    for rel, (path, size, mtime_ns) in on_disk.items():
        side = sides[rel]
        old = known.get(rel)
        if old is not None:
            has_sidecar = side in sidecars
            if (old.size, old.mtime_ns) == (size, mtime_ns) and has_sidecar:
                unchanged += 1
                continue
            hashes: tuple[str, ...] = (old.sha256,) if has_sidecar else ()
        else:
            hashes = tuple(by_size.get(size, ()))
        tasks.append(Task(str(path), rel, size, mtime_ns, side, limit[0], hashes, limit[1], run_id))
    tasks.sort(key=lambda t: -t.size)  # biggest first: the pool finishes evenly
    if tasks and analyses is not None and (executor is not None or not _inline(tasks, workers)):
        # before a pool forks: its workers inherit what was read (inline, the cache looks the
        # first statements up without parsing the file, `SqlCache.get`)
        analyses.read()

    total = len(tasks)
    if progress is not None:
        progress(0, total)
    for done, result in enumerate(_run_tasks(tasks, workers, executor), start=1):
        if analyses is not None and isinstance(result, Indexed):
            analyses.add(result.sql)
        _apply(result, query_db, writer, fresh, known, missing, run, report, root)
        writer.maybe_commit()
        if progress is not None:
            progress(done, total)

    for rel, k in sorted(missing.items()):
        writer.delete(k.id)
        sidecar.remove(sidecar.sidecar_path(query_db, rel))
        run.deleted.append(rel)
        if report is not None:
            report(rel, "deleted")
    return len(on_disk), unchanged


def _files_in(folders: Iterable[str]) -> set[str]:
    """The paths (`folder/name`) of the regular files (or links to one) in `folders`: one
    directory listing per folder instead of a stat per file (`os.path.isfile` of each)."""
    found: set[str] = set()
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        if entry.is_file():
                            found.add(f"{folder}/{entry.name}")
                    except OSError:
                        continue
        except OSError:  # a missing folder holds no sidecar
            continue
    return found


def _in_scope(root: Path, scope: _Scope, known: dict[str, Known]) -> list[Path]:
    """The files `index_paths` looks at: the given recordings below root, and the known
    recordings below the removed directories."""
    out: dict[Path, None] = {}
    for given in scope.paths:
        path = Path(given)
        path = Path(os.path.realpath(path.parent)) / path.name  # the file itself may be gone
        try:
            parts = path.relative_to(root).parts
        except ValueError:
            continue
        name = parts[-1] if parts else ""
        if not name.endswith(TRACE_SUFFIXES) or name.startswith("."):
            continue
        if any(part in SKIP_DIRS for part in parts[:-1]):
            continue
        out[path] = None
    for removed in scope.removed_dirs:
        try:
            prefix = Path(removed).relative_to(root).as_posix()
        except ValueError:
            continue
        for rel in known:
            if prefix in ("", ".") or rel.startswith(prefix + "/"):
                out[root / rel] = None
    return list(out)


def _apply(
    result: Result,
    query_db: Path,
    writer: Writer,
    fresh: bool,
    known: dict[str, Known],
    missing: dict[str, Known],
    run: _Run,
    report: FileReport | None,
    root: Path | None = None,
) -> None:
    rel = result.relpath
    old = known.get(rel)
    outcome: str
    if isinstance(result, Indexed):
        try:
            writer.put(result, replace_id=old.id if old else None, fresh=fresh)
        except Exception as exc:  # a value the database refuses: skip this recording only
            sidecar.remove(sidecar.sidecar_path(query_db, rel))
            defect = diagnose(root / rel) if root is not None else None
            run.skipped.append(Skip(rel, defect or describe(exc)))
            if report is not None:
                report(rel, "skipped")
            return
        (run.updated if old else run.added).append(rel)
        outcome = "updated" if old else "added"
    elif isinstance(result, Same):
        if old is not None:
            writer.touch(old.id, result.size, result.mtime_ns)
            run.touched.append(rel)
            outcome = "touched"
        else:
            source = _take_same(missing, result)
            if source is None:  # cannot happen: the hash came from `missing`
                return
            src_rel, src = source
            writer.rename(src.id, rel, result.size, result.mtime_ns)
            sidecar.move(
                sidecar.sidecar_path(query_db, src_rel), sidecar.sidecar_path(query_db, rel), rel
            )
            run.renamed.append((src_rel, rel))
            outcome = f"renamed from {src_rel}"
    else:
        assert isinstance(result, Skipped)
        if result.reason == "deleted while indexing":
            if old is not None:
                missing[rel] = old
            return
        run.skipped.append(Skip(rel, result.reason))
        outcome = "skipped"
    if report is not None:
        report(rel, outcome)


def _take_same(missing: dict[str, Known], result: Same) -> tuple[str, Known] | None:
    for rel, k in sorted(missing.items()):
        if k.sha256 == result.sha256 and k.size == result.size:
            del missing[rel]
            return rel, k
    return None
