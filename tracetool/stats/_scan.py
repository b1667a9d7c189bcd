"""`_collect._nested_sums` of a whole recording's bytes by the optional C accelerator.

`scanned_sums(raw)` is the fast path of stats' per-recording pass for a file read whole:
`tracetool._speedups.nested_sums` (C, `tracetool/_speedups.c`) scans the bytes for what
`EventHead`s would hold, pairs and sums in the same order as `_nested_sums`, and validates them
in the same pass as strictly as simdjson (`tracetool.trace.extract.is_recording`) did before it
(its "strict" mode: the JSON grammar everywhere, skipped containers too; well-formed UTF-8, no
lone surrogate, no number past 64 bits or a double) — stricter than the reading rules of
`tracetool.trace.checks`. It declines (None) anything that is not the plain common case, and
the caller runs the pure-Python path, which decides (and words) everything else.

Why C (DESIGN prefers well-kept libraries): msgspec's decoding of the heads, orjson and simdjson
were each measured; none extracts fields without building objects and pairs in the same pass,
and the Python pairing loop cost as much as the decoding (on the 300 MB benchmark directory, one
process: msgspec heads 0.68 s, the byte pre-check they need 0.38 s, pairing 0.8 s, naming 0.4 s;
simdjson's check 0.23 s and the C scan ~0.3 s replaced the first three; the scan's own
validation then replaced simdjson's: 1.23 -> 1.05 s CPU). The module is optional: a
build without a compiler, or `TRACETOOL_NO_SPEEDUPS=1`, runs the pure-Python path alone.

The C also names what it can: a function call found in the classMap as `_names` finds it (by
its chain, named once per chain: `Names.chain_names`); an HTTP call is keyed and named here once
per process by the request values the C groups it by (`_OTHERS`). It groups calls by the exact
values their key is made of, so two of its groups may be one key here (`true` and `1` are equal
in Python): that is checked, and declined.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import msgspec

from tracetool import accel
from tracetool.trace.checks import MAX_DEPTH, orjson_ints
from tracetool.trace.stream import UNSET, EventHead

_HEAD = msgspec.json.Decoder(EventHead)
_ANY = msgspec.json.Decoder()
_MOST_CHAINS = 100_000  # (names of chains kept: then they start again)
# (key, sample call, name) of the HTTP calls met so far, by the placeholder key of the C: their
# key and name are made of the values that placeholder holds
_OTHERS: dict[bytes, tuple[Any, EventHead, Optional[str]]] = {}
_MOST_OTHERS = 100_000
_HTTP = (b"S", b"C")


def _decoded(decoder: msgspec.json.Decoder[Any], text: Any) -> Any:
    # (numbers as orjson reads them, as the index reads them: tracetool.trace.checks)
    return orjson_ints(decoder.decode(text), text)


def _load() -> Optional[Callable[..., Any]]:
    return accel.function("nested_sums")  # type: ignore[no-any-return]


_NESTED_SUMS = _load()


def available() -> bool:
    """Whether the accelerator is built and not switched off."""
    return _NESTED_SUMS is not None


def scanned_sums(
    raw: bytes,
    other_key: Callable[[EventHead], Any],
    name_of: Callable[[EventHead], Optional[str]],
    function_names: tuple[dict[bytes, str], Callable[[Any], str]],
    validated: bool = False,
) -> Optional[tuple[dict[Any, list[Any]], Any, memoryview]]:
    """(`_nested_sums` of the recording, its classMap, a view of `raw`) from its bytes, or None
    for the caller's own path; the key of a call named here may be a placeholder (bytes). A sample call is the (start, end) of its event's text in the view
    or its `EventHead` (`head`); `other_key` keys a call that is not a plain function or SQL
    call (`_collect._other_key`), `name_of` names it when its name depends on the event alone
    (an HTTP call), else None: such a call's entry holds its name after its sample, as a function
    call's does when the C finds it in the classMap (`function_names`: the names of the chains
    met so far, and what names a chain, `Names.chain_names`). The
    classMap is a function that decodes it (an array, decoded only if a name needs it: the C
    reads its locations). `validated`: orjson has parsed the bytes (the index), which refuses
    what the C needs refused (invalid UTF-8, lone surrogates, numbers past a double, nesting
    past `MAX_DEPTH`), so the C need not check them again (its strict mode is off)."""
    nested_sums = _NESTED_SUMS
    if nested_sums is None:
        return None
    chains, namer = function_names
    if len(chains) > _MOST_CHAINS:
        chains.clear()
    found = nested_sums(raw, MAX_DEPTH, UNSET, chains, namer, not validated)
    if found is None:
        return None
    raw_sums, others, span = found
    view = memoryview(raw)
    if others:  # the placeholder keys (bytes) of the calls keyed here
        keys: dict[Any, bytes] = {}
        for placeholder in others:
            known = _OTHERS.get(placeholder)
            entry = raw_sums[placeholder]
            if known is None:
                start, end = entry[2]
                sample = _decoded(_HEAD, view[start:end])
                known = (other_key(sample), sample, name_of(sample))
                if placeholder[:1] in _HTTP:  # (named from its request alone: any recording's)
                    if len(_OTHERS) > _MOST_OTHERS:
                        _OTHERS.clear()
                    _OTHERS[placeholder] = known
            # (their keys are 2-tuples: another 2-tuple is the only key they can be equal to)
            if keys.setdefault(known[0], placeholder) is not placeholder:
                return None  # (two groups of the scan are one key: the Python path sums them)
            entry[2] = known[1]
            entry.append(known[2])
        if any(raw_sums[placeholder][3] is None for placeholder in others):
            # not all named: keyed (a named call keeps its placeholder, never read)
            key_of = {placeholder: key for key, placeholder in keys.items()}
            raw_sums = {
                key_of[key] if key.__class__ is bytes else key: entry
                for key, entry in raw_sums.items()
            }
    class_map: Any = []
    if span is not None:
        class_map = functools.partial(_decoded, _ANY, view[span[0] : span[1]])
    return raw_sums, class_map, view


class Samples:
    """The sample calls of one recording's `scanned_sums`, read from its bytes when needed."""

    def __init__(self, view: memoryview) -> None:
        self.view = view

    def head(self, sample: Any) -> EventHead:
        """The `EventHead` of a sample call."""
        if isinstance(sample, EventHead):
            return sample
        start, end = sample
        return _decoded(_HEAD, self.view[start:end])  # type: ignore[no-any-return]

    def dict_of(self, sample: Any) -> dict[str, Any]:
        return self.head(sample).to_dict()  # type: ignore[no-any-return]
