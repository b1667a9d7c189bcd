"""Sanitize tokens: `<v1>`, `<uuid:v3>`… — one per distinct captured value of one file.

Contract (spec `sanitize` rules 1–3 and 8):
- `Tokenizer.mask(value)` returns the value's token. Tokens are numbered 1, 2, 3… in the order
  values are first masked; equal values get the same token wherever they occur (parameter, return
  value, header…). A Tokenizer serves one file: files never share numbering or a hash, so tokens
  do not correlate across files or revisions.
- Value identity ignores one pair of surrounding quotes: Python agents record a string parameter
  as its repr (`'s3cr3t'`), a header holds it bare (`s3cr3t`); both are the same value and get
  the same token. Numbers are identified by their JSON text (`42` and `'42'` are one value).
- Kind annotations name a recognizable shape of the (unquoted) value; they change nothing else:
  `int` `float` `uuid` `iso8601` (a date, time or date-time) `hex` (≥ 8 hex digits with a digit
  and a letter, optional `0x`) `jwt` `email` `url` (scheme://…) `ip` (IPv4/IPv6, optional port)
  `sql` (a whole statement that could not be parameterized). Anything else is a bare `<vN>`.
- Kept verbatim (never tokenized): the built-in allowlist `true false null nil None` plus Python's
  `True False` (values without secret capacity), the empty string, JSON `true`/`false`/`null`,
  and every value allowed by the user. Allowlist matching is exact and whole-value: the value
  as written, or the value inside its repr quotes (`--allow admin` keeps `'admin'`).
- `keep_tokens=True` (re-applying sanitize to a sanitized file) keeps strings that already are
  tokens, and numbering continues after `start`.
- Structured values that are not strings (a list or object where agents put a string) are masked
  leaf by leaf, object keys included.
- Memory does not grow with the file: once `SPILL_AT` distinct values are held, the value →
  token table moves to a private temporary SQLite file (`_Spilled`), and the tables in memory
  start again (the memo of raw strings is a cache, cleared at the same size). A value is looked
  up there only when it is not in memory. The tokens are those of an in-memory table: the
  numbering does not depend on where a token is kept.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

BUILTIN_ALLOW = frozenset(("true", "false", "null", "nil", "None", "True", "False"))

TOKEN = re.compile(r"<(?:[a-z0-9]+:)?v([0-9]+)>")

# One pattern, tried in this order (the first alternative matching the whole text wins).
_SHAPES = re.compile(
    r"(?P<int>[-+]?[0-9]+)"
    r"|(?P<float>[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+)"
    r"|(?P<uuid>\{?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}?)"
    r"|(?P<iso8601>[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?)?"
    r"|[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?)"
    r"|(?P<ip>(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?::[0-9]{1,5})?)"
    r"|(?P<jwt>eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)"
    r"|(?P<hex>(?:0[xX])?[0-9a-fA-F]{8,})"
)
# Every text _SHAPES can match starts with one of these; others skip the regex.
_SHAPE_START = frozenset("0123456789+-.{abcdefABCDEF")
_EMAIL = re.compile(r"[^@\s<>()\[\],;:\"']+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
_HAS_DIGIT = re.compile(r"[0-9]")
_HAS_HEX_LETTER = re.compile(r"[a-fA-F]")
_IPV6_CHARS = re.compile(r"\[?[0-9a-fA-F:.]+\]?(?::[0-9]{1,5})?")


def _is_ipv6(text: str) -> bool:
    if text.count(":") < 2 or not _IPV6_CHARS.fullmatch(text):
        return False
    host = text[1 : text.index("]")] if text.startswith("[") and "]" in text else text
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


def classify(text: str) -> str | None:
    """The kind annotation for a value's text, or None when no shape is recognized."""
    if not text or len(text) > 4096:
        return None
    if text[0] in _SHAPE_START:
        match = _SHAPES.fullmatch(text)
        if match is not None:
            kind = match.lastgroup
            # Without "0x", a hex number needs a digit and a letter: "deadbeef" is a word.
            if kind == "hex" and text[:2] not in ("0x", "0X"):
                if not (_HAS_DIGIT.search(text) and _HAS_HEX_LETTER.search(text)):
                    return None
            return kind
    if "@" in text and _EMAIL.fullmatch(text):
        return "email"
    if "://" in text and _URL.fullmatch(text):
        return "url"
    if ":" in text and _is_ipv6(text):
        return "ip"
    return None


def unquote(text: str) -> str:
    """The text inside one pair of matching repr quotes (`'x'` or `"x"`), else the text."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def read_allow_file(lines: Iterable[str]) -> list[str]:
    """Values of an allow file: one per line, `#` comment lines and blank lines skipped."""
    values = []
    for line in lines:
        value = line.strip()
        if value and not value.startswith("#"):
            values.append(value)
    return values


# Distinct values (and memoized raw strings) held in memory before the table moves to a
# temporary file (module doc): ~250 bytes each, tens of MB. Files up to ~100 MB of recording
# (~200,000 distinct captured values in the generated ones) never spill.
SPILL_AT = 200_000
# Bloom filter bits per key spilled (`_Spilled`): ~1% false positives with its 3 probes.
_BLOOM_BITS_PER_KEY = 12


class _Spilled:
    """The value -> token table of a tokenizer past `SPILL_AT` values: a private temporary
    SQLite database (its connection, and the file, go with the tokenizer; SQLite unlinks such a
    file as it opens it, so none is left behind even by a killed process), keys as UTF-8 bytes
    (surrogates passed through: any Python string is a key).

    Most values looked up here are new ones (a repeat is usually still in memory): a Bloom
    filter of the keys held (3 bits a key in `_BLOOM_BITS_PER_KEY`, ~1% false positives)
    answers those without a query. It is sized for the keys held and made again, 4× bigger,
    from the keys in the file when they outgrow it: the one thing here that grows with the
    file, 1.5 bytes a distinct value (1 MiB up to ~700,000 values, 4 MiB up to ~2.8 million)."""

    def __init__(self) -> None:
        import sqlite3

        self.conn = sqlite3.connect("", isolation_level=None)  # ("": a temporary file)
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "cache_size = -8000"):
            self.conn.execute(f"PRAGMA {pragma}")
        self.conn.execute("CREATE TABLE t (k BLOB PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID")
        self.held = 0  # keys in the file (at least: a key added twice counts twice)
        self.bits = 1 << 23
        self.bloom = bytearray(self.bits >> 3)

    @staticmethod
    def _key(text: str) -> bytes:
        return text.encode("utf-8", "surrogatepass")

    def _places(self, key: bytes) -> tuple[int, int, int]:
        h = hash(key)
        step = (h >> 32) | 1
        mask = self.bits - 1
        return h & mask, (h + step) & mask, (h + 2 * step) & mask

    def _mark(self, key: bytes) -> None:
        bloom = self.bloom
        for place in self._places(key):
            bloom[place >> 3] |= 1 << (place & 7)

    def get(self, text: str) -> str | None:
        key = self._key(text)
        bloom = self.bloom
        for place in self._places(key):
            if not bloom[place >> 3] & (1 << (place & 7)):
                return None  # (never added)
        row = self.conn.execute("SELECT v FROM t WHERE k = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def add(self, tokens: dict[str, str]) -> None:
        rows = [(self._key(k), v) for k, v in tokens.items()]
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT OR IGNORE INTO t (k, v) VALUES (?, ?)", rows)
        self.conn.execute("COMMIT")
        self.held += len(rows)
        if self.held * _BLOOM_BITS_PER_KEY > self.bits:
            while self.held * _BLOOM_BITS_PER_KEY > self.bits:
                self.bits <<= 2
            self.bloom = bytearray(self.bits >> 3)
            for (key,) in self.conn.execute("SELECT k FROM t"):
                self._mark(key)
        else:
            for key, _ in rows:
                self._mark(key)


class Tokenizer:
    """Maps captured values of one file to tokens (module doc)."""

    def __init__(
        self, allow: Iterable[str] = (), *, start: int = 0, keep_tokens: bool = False
    ) -> None:
        self.allow = BUILTIN_ALLOW | frozenset(allow)
        self.keep_tokens = keep_tokens
        self.count = start
        self.new = 0  # distinct values tokenized by this tokenizer
        self._tokens: dict[str, str] = {}  # value identity -> token (or since the last spill)
        # raw string -> what mask() returns for it (token, or the string itself when kept):
        # most captured strings repeat, and this makes a repeat one dict lookup.
        self.memo: dict[str, str] = {}
        self._spilled: _Spilled | None = None  # the table past SPILL_AT values (module doc)

    def _spill(self) -> None:
        if self._spilled is None:
            self._spilled = _Spilled()
        self._spilled.add(self._tokens)
        self._tokens.clear()

    def is_kept(self, text: str) -> bool:
        """True when a string stays verbatim (allowed, empty or an earlier run's token)."""
        if not text or text in self.allow:
            return True
        first = text[0]
        if first == "'" or first == '"':
            inner = unquote(text)
            if not inner or inner in self.allow:
                return True
        return self.keep_tokens and first == "<" and TOKEN.fullmatch(text) is not None

    def token(self, text: str, kind: str | None = None) -> str:
        """The token of a string value that is not kept (callers check `is_kept` first)."""
        first = text[0]
        key = unquote(text) if first == "'" or first == '"' else text
        token = self._tokens.get(key)
        if token is None:
            if self._spilled is not None:
                token = self._spilled.get(key)
                if token is not None:
                    return token
            self.count = count = self.count + 1
            self.new += 1
            if kind is None:
                kind = classify(key)
            token = f"<{kind}:v{count}>" if kind else f"<v{count}>"
            self._tokens[key] = token
            if len(self._tokens) >= SPILL_AT:
                self._spill()
        return token

    def mask_new(self, value: str, kind: str | None = None) -> str:
        """`mask` for a str that is not in `memo` yet (callers look there first), remembered
        there; the memo is cleared first at `SPILL_AT` entries (module doc; cleared, not
        replaced: callers hold it)."""
        result = value if self.is_kept(value) else self.token(value, kind)
        memo = self.memo
        if len(memo) >= SPILL_AT:
            memo.clear()
        memo[value] = result
        return result

    def mask(self, value: Any, kind: str | None = None) -> Any:
        """`value` with every captured string or number replaced by its token."""
        if value.__class__ is str:
            result = self.memo.get(value)
            return result if result is not None else self.mask_new(value, kind)
        if isinstance(value, str):  # a str subclass: same rules, no memo
            return value if self.is_kept(value) else self.token(value, kind)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, (int, float)):
            text = repr(value)
            return value if text in self.allow else self.token(text)
        try:
            if isinstance(value, list):
                return [self.mask(item) for item in value]
            if isinstance(value, dict):
                return {self.mask(str(k)): self.mask(v) for k, v in value.items()}
        except RecursionError:  # absurdly deep: one token for the whole structure
            return self.token(f"\x00deep value {id(value)}")
        return self.token(str(value))
