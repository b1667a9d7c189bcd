"""Forgiving code-object identifiers: what a Python developer types finds what was recorded.

Recorded ids follow AppMap (`tracetool.trace.codeobjects`): `catalog/models/BookInstance#is_overdue`
(instance function), `catalog/views.renew` (module or static function), `class:catalog/models/
BookInstance`, `package:catalog/models`. People type `catalog.models.BookInstance.is_overdue`,
`catalog.views.renew` or `catalog/views.renew`. Every place that takes an identifier (`inspect`,
`query find --class/--route`, filters, the LSP and MCP tools) compares through this module.

Contract:

- `loose(ident)` — the spelling-free key: the separators `/`, `.`, `#`, `::` and `\\` all read
  as `.`, surrounding separators and spaces dropped. Two ids are the same code object when their
  loose keys are equal (`same`); case is significant (`User` and `user` are different names).
- `matches(ident, known)` — the known ids whose loose key equals that of `ident` (an exact
  match first, then the others in the order given).
- `closest(text, known, n=5)` — up to `n` known ids that look like `text`, best first: ids whose
  last name component equals the text's last component (any case), then `difflib` ratio on
  the loose keys (cutoff 0.5), then ids containing the text's last component.
- `did_you_mean(text, known)` — `"; did you mean: a, b?"` or `""`, appended to a not-found
  message by every command so they all answer alike.

Pure stdlib; `known` may be any iterable (it is read once).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["closest", "did_you_mean", "last_name", "loose", "matches", "same"]

_SEPARATORS = re.compile(r"::|[/.#\\]")


@lru_cache(maxsize=65536)
def loose(ident: str) -> str:
    """`catalog/models/BookInstance#is_overdue` → `catalog.models.BookInstance.is_overdue`."""
    return _SEPARATORS.sub(".", ident.strip()).strip(". ")


def same(a: str, b: str) -> bool:
    return loose(a) == loose(b)


def last_name(ident: str) -> str:
    """The last name component: `catalog/views.renew` → `renew`."""
    return loose(ident).rpartition(".")[2]


def matches(ident: str, known: Iterable[str]) -> list[str]:
    """Known ids that name the same code object as `ident` (exact spelling first)."""
    key = loose(ident)
    found = [k for k in known if loose(k) == key]
    found.sort(key=lambda k: k != ident)
    return found


def closest(text: str, known: Iterable[str], n: int = 5) -> list[str]:
    """Up to `n` known ids that look like `text`, best first (module doc)."""
    pool = list(dict.fromkeys(known))
    if not pool or n <= 0:
        return []
    key = loose(text)
    last = last_name(text).casefold()
    out: list[str] = [k for k in pool if last and last_name(k).casefold() == last]
    by_key: dict[str, list[str]] = {}
    for k in pool:
        by_key.setdefault(loose(k), []).append(k)
    for near in difflib.get_close_matches(key, list(by_key), n=n * 2, cutoff=0.5):
        out.extend(by_key[near])
    if last:
        out.extend(k for k in pool if last in loose(k).casefold())
    return list(dict.fromkeys(out))[:n]


def did_you_mean(text: str, known: Iterable[str], n: int = 5) -> str:
    """`"; did you mean: a, b?"` (up to n suggestions), or "" when nothing is close."""
    near = closest(text, known, n)
    return f"; did you mean: {', '.join(near)}?" if near else ""
