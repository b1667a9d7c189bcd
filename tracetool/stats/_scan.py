"""`_collect._nested_sums` of a whole recording's bytes by the optional C accelerator.

`scanned_sums(raw)` is the fast path of stats' per-recording pass for a file read whole: simdjson
(`tracetool.trace.extract.is_recording`) validates the bytes — it is stricter than the reading
rules of `tracetool.trace.checks`: it refuses numbers past a double or 64 bits, lone surrogates,
invalid UTF-8 — and `tracetool._speedups.nested_sums` (C, `tracetool/_speedups.c`) scans the
validated bytes for what `EventHead`s would hold, pairs and sums in the same order as
`_nested_sums`. Either declines (None) anything that is not the plain common case, and the caller
runs the pure-Python path, which decides (and words) everything else.

Why C (DESIGN prefers well-kept libraries): msgspec's decoding of the heads, orjson and simdjson
were each measured; none extracts fields without building objects and pairs in the same pass,
and the Python pairing loop cost as much as the decoding. The module is optional: a build
without a compiler, or `TRACETOOL_NO_SPEEDUPS=1`, runs the pure-Python path alone.

The C groups calls by the exact values their key is made of, so two of its groups may be one
key here (`true` and `1` are equal in Python): that is checked, and declined.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Optional

import msgspec

from tracetool.trace.checks import MAX_DEPTH
from tracetool.trace.extract import is_recording
from tracetool.trace.stream import UNSET, EventHead

_HEAD = msgspec.json.Decoder(EventHead)
_ANY = msgspec.json.Decoder()
_TAG_OTHER = 2


def _load() -> Optional[Callable[..., Any]]:
    if os.environ.get("TRACETOOL_NO_SPEEDUPS", "") not in ("", "0"):
        return None
    try:
        from tracetool import _speedups  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _speedups.nested_sums  # type: ignore[no-any-return]


_NESTED_SUMS = _load()


def available() -> bool:
    """Whether the accelerator is built and not switched off."""
    return _NESTED_SUMS is not None


def scanned_sums(
    raw: bytes, other_key: Callable[[EventHead], Any]
) -> Optional[tuple[dict[Any, list[Any]], list[Any]]]:
    """(`_nested_sums` of the recording, its classMap) from its bytes, or None for the caller's
    own path. A sample call is its event's text (a memoryview) or its `EventHead` (`head`);
    `other_key` keys a call that is not a plain function or SQL call (`_collect._other_key`)."""
    nested_sums = _NESTED_SUMS
    if nested_sums is None or is_recording(raw) is not True:
        return None
    found = nested_sums(raw, MAX_DEPTH, UNSET)
    if found is None:
        return None
    groups, span = found
    view = memoryview(raw)
    raw_sums: dict[Any, list[Any]] = {}
    for tag, key, calls, seconds, start, end in groups:
        sample: Any = view[start:end]
        if tag == _TAG_OTHER:
            sample = _HEAD.decode(sample)
            key = other_key(sample)
        if key in raw_sums:
            return None  # (two groups of the scan are one key: the pure-Python path sums them)
        raw_sums[key] = [calls, seconds, sample]
    class_map = _ANY.decode(view[span[0] : span[1]]) if span is not None else []
    return raw_sums, class_map if isinstance(class_map, list) else []


def head(sample: Any) -> EventHead:
    """The `EventHead` of a sample call of `scanned_sums`."""
    return sample if isinstance(sample, EventHead) else _HEAD.decode(sample)


def head_dict(sample: Any) -> dict[str, Any]:
    return head(sample).to_dict()
