"""`sanitize`: replace every captured value with a token, so no secret or personal data remains.

Contract (spec `sanitize` rules 1–11, `metadata.sanitized`, Errors):
- The document is normalized first, event by event (`rawdoc.RawDocument.normalized_events`:
  event updates merged, ids re-indexed, unreturned calls balanced). As part of normalization,
  like AppMap's, credentials in `metadata.git.repository` (`https://user:pw@host/…`) are dropped.
- Each captured field (`captured` names them all) is rewritten by its kind:
  VALUE, MESSAGE, HEADER → its token (`tokens.Tokenizer`); ROUTED_PATH (a server request with a
  route template) → a token for the whole concrete path; PATH (no route template) →
  `routes.normalize_path`; URL → `routes.normalize_url`; SQL → `sql.parameterize` when reliable,
  else a `<sql:vN>` token for the whole statement. Values on the allowlist stay verbatim.
  Nothing else is modified.
- Fail closed: whatever its shape, no captured string survives. A list or object where a string
  belongs (a parameter's `value`, a header, a message…) becomes one token for the whole, so the
  field keeps its type; OTHER and ENTRY (`captured`: a field of an unexpected shape, an unknown
  key) are masked string by string, object keys included; a path or URL that is no string is
  masked like a value; text in `sql_query` that is not SQL is never "reliable" (`sql`).
- `metadata.sanitized = {version, allow, tokens, digest}`: `allow` is the sorted list of values
  allowed by every run so far (the built-in list not included), `tokens` the number of tokens in
  the file, `digest` a digest of the written document without the marker.
- Re-application: a file whose marker has this version, the same allowed values and a matching
  digest is skipped. A marker whose digest does not match (the file was edited since, or a marker
  was copied onto a recording that still holds values) is not trusted: the file is sanitized
  again, with a warning. With other options it is sanitized again too. That can only tighten:
  existing tokens are kept as they are (numbering continues after the highest), values allowed
  by the earlier run but not by this one are masked now, and a value allowed now that an earlier
  run did not allow was masked then and stays masked — with a warning.
- `sanitize(doc, options)` is the pure in-memory form; `sanitize_bytes` rewrites a document's
  bytes event by event (`rawdoc`); `sanitize_big` rewrites a recording over `STREAM_THRESHOLD` a
  block of events at a time from its file, to the same bytes, when normalization only renumbers
  it (most recordings: `sanitize_big`); memory then holds a block and the token table, not the
  file. `sanitize_files` runs them over many files (the CLI): one that cannot be read or is not
  a trace document is skipped with a warning and reported with status "error".
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import orjson

from tracetool import __version__
from tracetool.routes import normalize_path, normalize_url, without_credentials
from tracetool.trace import TraceDocument, atomic_write_stream, gc_paused, rawdoc
from tracetool.trace.atomic import scratch_beside
from tracetool.trace.stream import file_size
from tracetool.transform import captured, files, streamed
from tracetool.transform.streamed import FileChunks
from tracetool.transform.tokens import Tokenizer

SANITIZED = "sanitized"
# Kinds masked by token (strings inside structures too, object keys included: OTHER and ENTRY
# are captured data of an unexpected shape, masked whole — sanitize fails closed).
_TOKENIZED = frozenset(
    (
        captured.VALUE,
        captured.MESSAGE,
        captured.HEADER,
        captured.ROUTED_PATH,
        captured.OTHER,
        captured.ENTRY,
    )
)
_TOKEN_NUMBER = re.compile(rb"<(?:[a-z0-9]+:)?v([0-9]+)>")


@dataclass(frozen=True)
class SanitizeOptions:
    """`allow`: values kept verbatim in addition to the built-in allowlist."""

    allow: frozenset[str] = frozenset()


@dataclass(frozen=True)
class SanitizeReport:
    status: str  # "sanitized" or "skipped"
    values_tokenized: int  # distinct values replaced by a new token in this run
    bytes_before: int
    bytes_after: int
    counts: dict[str, int] = field(default_factory=dict)  # sql/path/url rewrites by outcome
    allow: tuple[str, ...] = ()  # the values recorded as allowed by every run
    warnings: tuple[str, ...] = ()


# Kinds whose structured values keep their skeleton (every string in them, keys included, masked
# one by one); a structured value in a place that holds a string (a parameter's `value`, a
# header, a message, a path, SQL) becomes one token, so the field keeps its string type.
_LEAF_BY_LEAF = frozenset((captured.OTHER, captured.ENTRY))


def _whole(tok: Tokenizer, value: list | dict) -> str:
    """One token for a whole structured value (equal structures, equal tokens)."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except (orjson.JSONEncodeError, TypeError):  # nested too deep for orjson: one of its own
        return tok.token(f"\x00structured value {id(value)}")
    return tok.token("\x00" + text.decode())


@lru_cache(maxsize=8192)
def _parameterize(sql: str, database_type: str | None) -> tuple[str, bool]:
    from tracetool.sql import parameterize  # sqlglot: imported only when SQL is met

    try:
        return parameterize(sql, database_type)
    except Exception:  # a statement the SQL module chokes on is masked whole, never leaked
        return sql, False


class _Masker:
    """The rewrite callback (module doc), counting what it did."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tok = tokenizer
        self.counts = {
            "sql_parameterized": 0,
            "sql_tokenized": 0,
            "paths_normalized": 0,
            "urls_normalized": 0,
        }

    def __call__(self, kind: str, value: Any, context: Any) -> Any:
        tok = self.tok
        if kind in _TOKENIZED:
            if value.__class__ is str:  # the hot path
                known = tok.memo.get(value)
                return known if known is not None else tok.mask_new(value)
            if kind not in _LEAF_BY_LEAF and isinstance(value, (list, dict)):
                return _whole(tok, value)
            return tok.mask(value)
        if not isinstance(value, str):
            return _whole(tok, value) if isinstance(value, (list, dict)) else tok.mask(value)
        if tok.is_kept(value):
            return value
        if kind == captured.SQL:
            text, reliable = _parameterize(value, context if isinstance(context, str) else None)
            if reliable:
                self.counts["sql_parameterized"] += 1
                return text
            self.counts["sql_tokenized"] += 1
            return tok.token(value, "sql")
        if kind == captured.PATH:
            self.counts["paths_normalized"] += 1
            return normalize_path(value)
        if kind == captured.URL:
            self.counts["urls_normalized"] += 1
            return normalize_url(value)
        return tok.mask(value)  # a kind added to `captured` later: mask, never leak


def _strip_git_credentials(metadata: dict[str, Any]) -> None:
    git = metadata.get("git")
    if isinstance(git, dict) and isinstance(git.get("repository"), str):
        git["repository"] = without_credentials(git["repository"])


def _digest(doc: rawdoc.RawDocument, values: dict[str, Any]) -> str:
    """A digest of the document as `values` would write it (the marker's `digest`)."""
    h = hashlib.blake2b(digest_size=16)
    for part in doc.parts(values):
        h.update(part)
    return h.hexdigest()


def _intact(doc: rawdoc.RawDocument, marker: dict[str, Any], events: Any = None) -> bool:
    """Whether the document is byte for byte what sanitize wrote with `marker` (a marker that was
    copied onto another document, or a file edited since, does not match its digest); `events`:
    the events array's pieces when `doc` holds an empty one (a big recording)."""
    recorded = marker.get("digest")
    if not isinstance(recorded, str):
        return False
    metadata = {k: v for k, v in doc.metadata.items() if k != SANITIZED}
    values: dict[str, Any] = {"metadata": metadata}
    if events is not None:
        values["events"] = rawdoc.Chunks(events)
    return hmac.compare_digest(_digest(doc, values), recorded)


def _allowed_before(marker: Any) -> set[str]:
    values = marker.get("allow") if isinstance(marker, dict) else None
    return {v for v in values if isinstance(v, str)} if isinstance(values, list) else set()


def sanitize_bytes(
    raw: bytes, options: SanitizeOptions = SanitizeOptions(), source: str = "<memory>"
) -> tuple[bytes | None, SanitizeReport]:
    """Sanitize a document given as bytes; returns (None, report) when the file is skipped."""
    with gc_paused():  # millions of short-lived acyclic containers: the cyclic GC only costs
        return _sanitize_bytes(raw, options, source)


def _start(
    metadata: dict[str, Any],
    options: SanitizeOptions,
    source: str,
    intact: Callable[[dict[str, Any]], bool],
    numbers: Callable[[], Iterable[bytes]],
) -> tuple[Tokenizer, set[str], list[str]] | None:
    """The tokenizer, the allowed values and the warnings for a document with `metadata`, or
    None to skip it (module doc: re-application). `intact(marker)`: whether the document is as
    sanitize left it; `numbers()`: the numbers of the tokens it holds."""
    marker = metadata.get("sanitized")
    allow = set(options.allow)
    warnings: list[str] = []
    if not isinstance(marker, dict):
        return Tokenizer(allow), allow, warnings
    before = _allowed_before(marker)
    if marker.get("version") == __version__ and before == allow:
        if intact(marker):
            return None
        warnings.append(
            f"{source}: marked sanitized, but not as sanitize left it (edited, or the marker "
            "was copied); sanitized again"
        )
    newly = sorted(allow - before)
    if newly:
        listed = ", ".join(repr(v) for v in newly[:10]) + (" …" if len(newly) > 10 else "")
        warnings.append(
            f"{source}: an earlier sanitize run did not allow {listed}; "
            "where such a value occurred it was masked and stays masked"
        )
    allow &= before
    start = max((int(n) for n in numbers()), default=0)
    return Tokenizer(allow, start=start, keep_tokens=True), allow, warnings


def _mask_metadata(metadata: dict[str, Any], masker: _Masker) -> None:
    _strip_git_credentials(metadata)
    captured.rewrite_metadata(metadata, masker)


def _mark(
    doc: rawdoc.RawDocument, values: dict[str, Any], allow: set[str], tokenizer: Tokenizer
) -> tuple[str, ...]:
    """Put the marker (module doc) in `values["metadata"]`; the allowed values it records."""
    metadata = values["metadata"]
    recorded = tuple(sorted(allow))
    metadata.pop(SANITIZED, None)
    digest = _digest(doc, values)
    metadata[SANITIZED] = {
        "version": __version__,
        "allow": list(recorded),
        "tokens": tokenizer.count,
        "digest": digest,
    }
    return recorded


def _sanitize_bytes(
    raw: bytes, options: SanitizeOptions, source: str
) -> tuple[bytes | None, SanitizeReport]:
    doc = rawdoc.split(raw, source)
    started = _start(
        doc.metadata,
        options,
        source,
        lambda marker: _intact(doc, marker),
        lambda: _TOKEN_NUMBER.findall(raw),
    )
    if started is None:
        allowed = tuple(sorted(options.allow))
        return None, SanitizeReport("skipped", 0, len(raw), len(raw), allow=allowed)
    tokenizer, allow, warnings = started
    masker = _Masker(tokenizer)
    values: dict[str, Any] = {"eventUpdates": None}  # merged into events by normalization
    for key in (*doc.top, "metadata"):
        if key == "metadata" and key not in values:
            _mask_metadata(doc.metadata, masker)
            values["metadata"] = doc.metadata
        elif key == "events" and key not in values and doc.events_array is not None:
            writer = rawdoc.ArrayWriter(source)
            writer.add_all(doc.normalized_events(), partial(captured.rewrite_event, fn=masker))
            values["events"] = writer.done()
    recorded = _mark(doc, values, allow, tokenizer)
    warnings.extend(doc.warnings)
    out = doc.assemble(values)
    report = SanitizeReport(
        SANITIZED,
        tokenizer.new,
        len(raw),
        len(out),
        dict(masker.counts),
        recorded,
        tuple(warnings),
    )
    return out, report


def sanitize_big(
    path: Path,
    output: Path,
    options: SanitizeOptions = SanitizeOptions(),
    threshold: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> SanitizeReport | None:
    """Sanitize a recording over `threshold` bytes (default `STREAM_THRESHOLD`) a block of events
    at a time into `output` (atomically; `output` may be `path`), with memory that does not
    grow with it; the report, or None to sanitize it whole (`tracetool.transform.streamed`).

    Only a recording that normalization merely renumbers is streamed (`rawdoc.Renumbering`,
    with call ids rising): one with eventUpdates, returns that do not close the innermost
    call, or calls left open is sanitized whole. The masked events are written to a temporary
    file beside `output` first: the marker in the metadata holds a digest of them."""
    big = streamed.open_big(path, threshold, progress)
    if big is None or big.updates:
        return None
    try:
        with gc_paused():
            return _sanitize_big(big, output, options)
    except streamed.NotPlain:
        return None


def _sanitize_big(
    big: streamed.BigRecording, output: Path, options: SanitizeOptions
) -> SanitizeReport | None:
    source = big.source

    def intact(marker: dict[str, Any]) -> bool:
        for _ in big.blocks(parse=False):
            pass
        assert big.document is not None
        return _intact(big.document, marker, big.array_chunks())

    started = _start(big.metadata, options, source, intact, lambda: _token_numbers(big.path))
    size = big.stamp[0]
    if started is None:
        return SanitizeReport("skipped", 0, size, size, allow=tuple(sorted(options.allow)))
    tokenizer, allow, warnings = started
    masker = _Masker(tokenizer)
    metadata = big.metadata
    first = "metadata" in big.before.top
    if first:
        _mask_metadata(metadata, masker)
    renumbering = rawdoc.Renumbering()
    writer = rawdoc.ArrayWriter(source)
    each = partial(captured.rewrite_event, fn=masker)

    def renumbered(events: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        apply = renumbering.apply
        for event in events:
            if not apply(event):
                raise streamed.NotPlain  # (normalization would change more than ids)
            yield event

    def blocks() -> Iterator[list[Any]]:
        for _, events in big.blocks():
            writer.add_all(renumbered(events), each)
            yield writer.pieces()

    with scratch_beside(output) as (scratch, name):
        streamed.write_array(scratch, blocks())
        scratch.flush()
        document = big.document
        assert document is not None
        if renumbering.open() or document.event_updates():
            raise streamed.NotPlain
        if not first:
            _mask_metadata(metadata, masker)
        values: dict[str, Any] = {"eventUpdates": None, "metadata": metadata}
        values["events"] = rawdoc.Chunks(FileChunks(name))
        recorded = _mark(document, values, allow, tokenizer)
        atomic_write_stream(output, document.parts(values))
    return SanitizeReport(
        SANITIZED,
        tokenizer.new,
        size,
        file_size(output),
        dict(masker.counts),
        recorded,
        tuple(warnings),
    )


def _token_numbers(path: Path) -> Iterator[bytes]:
    """`_TOKEN_NUMBER.findall` over a file read a few MB at a time (a token across two reads
    is found whole: each read is searched with what follows the last `<` of the one before)."""
    carry = b""
    for piece in FileChunks(path):
        buf = carry + piece
        yield from _TOKEN_NUMBER.findall(buf)
        cut = buf.rfind(b"<", max(0, len(buf) - _TOKEN_SPAN))
        carry = buf[cut:] if cut >= 0 else b""


_TOKEN_SPAN = 4096  # the longest token found across two reads


def sanitize(
    doc: TraceDocument, options: SanitizeOptions = SanitizeOptions()
) -> tuple[TraceDocument, SanitizeReport]:
    """Pure form: a new sanitized document (the input is not modified) and the report."""
    result, report = files.on_document(doc, lambda raw, src: sanitize_bytes(raw, options, src))
    return result, report


def sanitize_files(
    inputs: Sequence[str | Path],
    options: SanitizeOptions = SanitizeOptions(),
    output_dir: str | Path | None = None,
    *,
    recursive: bool = False,
    progress: files.Progress | None = None,
) -> list[files.FileReport]:
    """Sanitize many files (in place, or into `output_dir`); one report per file;
    `progress(done, total)` as the input bytes are done."""
    pairs = files.plan(inputs, output_dir, recursive)

    def transform(raw: bytes, source: str) -> tuple[bytes | None, dict[str, Any], list[str]]:
        out, report = sanitize_bytes(raw, options, source)
        details: dict[str, Any] = {"values_tokenized": report.values_tokenized, **report.counts}
        return out, details, list(report.warnings)

    def big(
        path: Path, output: Path, step: Callable[[int], None]
    ) -> tuple[str, int, dict[str, Any], list[str]] | None:
        report = sanitize_big(path, output, options, progress=step)
        if report is None:
            return None
        details: dict[str, Any] = {"values_tokenized": report.values_tokenized, **report.counts}
        return report.status, report.bytes_after, details, list(report.warnings)

    return files.run(pairs, transform, SANITIZED, big, progress)
