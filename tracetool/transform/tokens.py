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
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

BUILTIN_ALLOW = frozenset(("true", "false", "null", "nil", "None", "True", "False"))

TOKEN = re.compile(r"<(?:[a-z0-9]+:)?v([0-9]+)>")

_INT = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(
    r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+"
)
_UUID = re.compile(
    r"\{?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}?"
)
_ISO8601 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?)?"
    r"|[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)
_HEX = re.compile(r"(?:0[xX])?[0-9a-fA-F]{8,}")
_HAS_DIGIT = re.compile(r"[0-9]")
_HAS_HEX_LETTER = re.compile(r"[a-fA-F]")
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
_EMAIL = re.compile(r"[^@\s<>()\[\],;:\"']+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
_IPV4 = re.compile(r"(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?::[0-9]{1,5})?")
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
    first = text[0]
    if first.isdigit() or first in "-+.":
        if _INT.fullmatch(text):
            return "int"
        if _FLOAT.fullmatch(text):
            return "float"
    if _UUID.fullmatch(text):
        return "uuid"
    if first.isdigit():
        if _ISO8601.fullmatch(text):
            return "iso8601"
        if _IPV4.fullmatch(text):
            return "ip"
    if first == "e" and _JWT.fullmatch(text):
        return "jwt"
    if _HEX.fullmatch(text) and _HAS_DIGIT.search(text) and _HAS_HEX_LETTER.search(text[2:]):
        return "hex"
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


class Tokenizer:
    """Maps captured values of one file to tokens (module doc)."""

    def __init__(
        self, allow: Iterable[str] = (), *, start: int = 0, keep_tokens: bool = False
    ) -> None:
        self.allow = BUILTIN_ALLOW | frozenset(allow)
        self.keep_tokens = keep_tokens
        self.count = start
        self.new = 0  # distinct values tokenized by this tokenizer
        self._tokens: dict[str, str] = {}

    def is_kept(self, text: str) -> bool:
        """True when a string stays verbatim (allowed, empty or an earlier run's token)."""
        if not text or text in self.allow:
            return True
        if text[0] in "'\"":
            inner = unquote(text)
            if not inner or inner in self.allow:
                return True
        return self.keep_tokens and text[0] == "<" and TOKEN.fullmatch(text) is not None

    def token(self, text: str, kind: str | None = None) -> str:
        """The token of a string value that is not kept (callers check `is_kept` first)."""
        key = unquote(text) if text[0] in "'\"" else text
        token = self._tokens.get(key)
        if token is None:
            self.count += 1
            self.new += 1
            if kind is None:
                kind = classify(key)
            token = f"<{kind}:v{self.count}>" if kind else f"<v{self.count}>"
            self._tokens[key] = token
        return token

    def mask(self, value: Any, kind: str | None = None) -> Any:
        """`value` with every captured string or number replaced by its token."""
        if isinstance(value, str):
            return value if self.is_kept(value) else self.token(value, kind)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, (int, float)):
            text = repr(value)
            return text if text in self.allow else self.token(text)
        try:
            if isinstance(value, list):
                return [self.mask(item) for item in value]
            if isinstance(value, dict):
                return {self.mask(str(k)): self.mask(v) for k, v in value.items()}
        except RecursionError:  # absurdly deep: one token for the whole structure
            return self.token(f"\x00deep value {id(value)}")
        return self.token(str(value))
