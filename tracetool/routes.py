"""Concrete URLs and paths → route templates, and conversions between template syntaxes.

Contract (spec `sanitize` rule 7, `inspect` route identifiers, `openapi`):

* `normalize_url` / `normalize_path` turn captured data (a client request URL, a server
  `path_info`) into a route template: user and password are stripped, the query string, the
  fragment and `;matrix` parameters are dropped, the scheme, host, port and static path words are
  kept, and every path segment that looks like a value becomes a typed placeholder `:<kind>`.
  The result is schema, never data: it must not carry an id, a token or a personal value.
* `classify_segment` is the single rule deciding "value or route word" for one segment
  (percent-decoded first). Kinds, tried in this order:

  ====== ===========================================================================
  kind   segment (after percent-decoding)
  ====== ===========================================================================
  int    ``-?[0-9]+``                            ``42``, ``-7``, ``007``
  float  ``-?[0-9]+.[0-9]+`` (optional exponent) ``3.14``
  uuid   8-4-4-4-12 hex digits, any case
  date   ``YYYY-MM-DD``
  iso8601 date and time, optional seconds, fraction and zone
  email  ``local@domain.tld``
  hex    ≥ 8 hex digits with at least one digit  ObjectIds, SHAs, ``deadbeef42``
  token  any other value-like segment of ≥ 16 characters from the base64/base64url/JWT alphabet
         with an unbroken run of ≥ 12 letters and digits (API keys, JWTs, reset tokens)
  value  any other value-like segment
  ====== ===========================================================================

  A segment is a route word (``None``, kept) when it is empty, purely alphabetic (``deadbeef``
  and ``face`` included: the spec says an alphabetic segment cannot be told from a word), a
  template parameter (``:id``, ``{id}``, ``{id:int}``, ``<int:id>``, ``*path``, ``(.:format)``),
  or a compound of words joined by ``- _ . ~ :`` (``password_resets``, ``logo.png``,
  ``.well-known``) whose digit-bearing parts are all version-like or well-known: ``v1``,
  ``v2beta1``, ``v1.2``, a word plus ONE digit (``oauth2``, ``s3``, ``page2`` — one digit cannot
  carry a secret), or a fixed list (``sha256``, ``base64``, ``x509``, ``i18n``, ``k8s`` …).
  Everything else that contains a digit, whitespace or another symbol is a value. So
  ``user-42`` and ``report-2024-01-31.pdf`` are values: when unsure we mask, because a leaked
  secret is worse than a coarse route.

* `to_openapi` / `to_colon` / `path_params` / `route_key` read every template dialect (Rails
  ``:id`` and ``(.:format)``, Sinatra/Express ``:id``, FastAPI/Starlette ``{id}`` and
  ``{id:int}``, Flask/Django ``<int:id>``, Django regex ``(?P<id>…)``, Rails globs ``*path``).
  `route_key` is the canonical ``"GET /users/{id}"`` used in ``route:`` code-object ids.

Pure stdlib and Python 3.9 syntax: the agent and `sanitize` call this on every HTTP event, so
regexes are precompiled and results are memoised.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Optional
from urllib.parse import unquote

from tracetool.lazyre import lazy

__all__ = [
    "KINDS",
    "classify_segment",
    "normalize_path",
    "normalize_url",
    "path_params",
    "route_key",
    "to_colon",
    "to_openapi",
]

# Every placeholder kind `classify_segment` can return; `:<kind>` segments are templates.
KINDS = frozenset(("int", "float", "uuid", "date", "iso8601", "email", "hex", "token", "value"))

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"

# RFC 3986 appendix B: matches every string, so a malformed URL can never raise.
_URL = lazy(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)")

_INT = lazy(r"-?[0-9]+")
_FLOAT = lazy(r"-?[0-9]+\.[0-9]+(?:[eE][-+]?[0-9]+)?")
_UUID = lazy(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DATE = lazy(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_ISO8601 = lazy(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?"
    r"(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)
_EMAIL = lazy(r"[^@\s/]+@[^@\s/.]+(?:\.[^@\s/.]+)+")
_HEX = lazy(r"[0-9a-fA-F]{8,}")
_DIGIT = lazy(r"[0-9]")
_TOKEN = lazy(r"[A-Za-z0-9_\-+/=.~]{16,}")
_TOKEN_RUN = lazy(r"[A-Za-z0-9]{12,}")

# A template parameter anywhere in a segment (one level of braces inside `{name:regex}`).
_PARAM = lazy(
    r"\{(" + _NAME + r")(?::(?:[^{}]|\{[^{}]*\})*)?\}"  # {id}, {id:int}, {id:[0-9]{4}}
    r"|<(?:" + _NAME + r":)?(" + _NAME + r")>"  # <id>, <int:id>, <path:rest>
    r"|(?:^|(?<=[/(.\-]))[:*](" + _NAME + r")"  # :id, *path (segment start, or after ( . -)
)
_RAILS_FORMAT = lazy(r"\(\.:format\)")
# Rails optional groups such as "(/:page)" or "(.:format)"; they start with "/" or ".".
_OPTIONAL = lazy(r"\([./][^()]*\)")
# Django regex routes: (?P<name>pattern), pattern with at most one level of parentheses.
_DJANGO_GROUP = lazy(r"\(\?P<(" + _NAME + r")>(?:[^()]|\([^()]*\))*\)")

_UNSAFE = lazy(r"[/?#]")
_WORD_SPLIT = lazy(r"[-_.~:]")
_VERSION_WORD = lazy(r"[vV][0-9]{1,3}(?:(?:alpha|beta|rc|dev|pre)[0-9]{0,3})?")
_VERSION_DOTTED = lazy(r"[vV][0-9]{1,3}(?:\.[0-9]{1,3}){1,2}")
_ONE_DIGIT_WORD = lazy(r"[a-z]{1,12}[0-9]|[A-Z]{1,12}[0-9]")
# Route words with several digits that are common enough to keep; all compared lower-cased.
_KNOWN_DIGIT_WORDS = frozenset(
    """sha224 sha256 sha384 sha512 sha3 base16 base32 base58 base64 x509 pkcs12 pkcs11 utf16
    utf32 i18n l10n a11y k8s p2p b2b b2c e2e 2fa 3ds 2d 3d 4k md5 ipv4 ipv6 http11 ec2 s3
    web3 h264 h265 mp3 mp4 m4a 3gp 7z bz2 x86 x64 arm64 amd64 win32 win64""".split()
)


@lru_cache(maxsize=65536)
def classify_segment(segment: str) -> Optional[str]:
    """Placeholder kind for a value-like path segment, or None for a route word (kept)."""
    if not segment or segment.isalpha():
        return None
    text = unquote(segment, errors="replace") if "%" in segment else segment
    if not text or text.isalpha() or text == "*":
        return None
    if _INT.fullmatch(text):
        return "int"
    if _FLOAT.fullmatch(text):
        return "float"
    if _UUID.fullmatch(text):
        return "uuid"
    if _DATE.fullmatch(text):
        return "date"
    if _ISO8601.fullmatch(text):
        return "iso8601"
    if "@" in text and _EMAIL.fullmatch(text):
        return "email"
    if _HEX.fullmatch(text) and _DIGIT.search(text):
        return "hex"
    if _is_template(text) or _is_word(text):
        return None
    return "token" if _TOKEN.fullmatch(text) and _TOKEN_RUN.search(text) else "value"


def _is_word(text: str) -> bool:
    """True for a static compound word: `password_resets`, `logo.png`, `oauth2-callback`."""
    if _VERSION_DOTTED.fullmatch(text) or text.lower() in _KNOWN_DIGIT_WORDS:
        return True
    one_digit_parts = 0
    for part in _WORD_SPLIT.split(text):
        if not part or part.isalpha():
            continue
        if _ONE_DIGIT_WORD.fullmatch(part):
            # One digit carries nothing, but "a1-b2-c3-d4" spells a number out.
            one_digit_parts += 1
            if one_digit_parts > 2:
                return False
        elif not (_VERSION_WORD.fullmatch(part) or part.lower() in _KNOWN_DIGIT_WORDS):
            return False
    return True


def _is_template(text: str) -> bool:
    """True when the segment holds template parameters and otherwise only route words."""
    if "(" in text:
        text = _RAILS_FORMAT.sub("", text)
    found = False
    for match in _PARAM.finditer(text):
        name = match.group(1) or match.group(2) or match.group(3)
        # A "name" that is itself value-like (":a8f3k2j4x") is data that happens to start with
        # a colon, not a parameter.
        if not (name.isalpha() or name in KINDS or _is_word(name)):
            return False
        found = True
    if not found:
        return False
    rest = _PARAM.sub("", text)
    return not rest or rest.isalpha() or _is_word(rest)


def _normalize_segments(path: str) -> str:
    """Replace each value-like segment of a path (no query, no fragment) by `:<kind>`."""
    if not path:
        return path
    out = []
    for segment in path.split("/"):
        if ";" in segment:  # Java-style matrix parameters (";jsessionid=…") are like a query
            segment = segment.partition(";")[0]
        if not segment or segment.isalpha():
            out.append(segment)
            continue
        kind = classify_segment(segment)
        if kind is not None:
            out.append(":" + kind)
        elif "%" in segment:
            # Decoding makes equal routes compare equal; a template whose decoded regex holds a
            # "/", "?" or "#" would change the path's shape, so it stays encoded.
            decoded = unquote(segment, errors="replace")
            out.append(segment if _UNSAFE.search(decoded) else decoded)
        else:
            out.append(segment)
    return "/".join(out)


@lru_cache(maxsize=8192)
def normalize_path(path: str) -> str:
    """Route template of a server `path_info`: `/users/42/posts/<uuid>` → `/users/:int/posts/:uuid`.

    The query string, the fragment and `;` parameters are dropped; empty segments (a trailing or
    a double slash) are kept, so the result starts with "/" exactly when the input did.
    """
    cut = len(path)
    for sep in "?#":
        at = path.find(sep)
        if 0 <= at < cut:
            cut = at
    return _normalize_segments(path[:cut])


@lru_cache(maxsize=8192)
def normalize_url(url: str) -> str:
    """Route template of a client request URL.

    `https://user:pw@api.example.com:8443/v1/users/42/orders?x=1#f` →
    `https://api.example.com:8443/v1/users/:int/orders`. Never raises, even on a malformed URL;
    a relative reference (no scheme, no host) is treated as a path.
    """
    match = _URL.match(url.strip())
    assert match is not None  # the RFC 3986 pattern matches every string
    scheme, authority, path = match.groups()
    if authority is None:
        normalized = _normalize_segments(path)
        return scheme.lower() + ":" + normalized if scheme else normalized
    host = authority.rpartition("@")[2].lower()  # drop "user:password@"; hosts ignore case
    prefix = scheme.lower() + "://" if scheme else "//"
    return prefix + host + _normalize_segments(path)


# `scheme://userinfo@`: the userinfo runs to the authority's last "@" (a password may hold one;
# cutting at the first would keep the rest of it)
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")


def without_credentials(url: str) -> str:
    """`url` without its `user:password@`: `https://deploy:tok@host/o/r.git` →
    `https://host/o/r.git`; anything else unchanged. The one rule for repository URLs that go
    into recordings (the agent), sanitized files and the index: a credential never does."""
    return _USERINFO.sub(r"\1", url, count=1)


def _rewrite(template: str, render: Callable[[str], str]) -> str:
    """Rewrite every parameter of every template dialect with `render(name)`."""
    if "(?P<" in template:
        template = _DJANGO_GROUP.sub(lambda m: render(m.group(1)), template)
        # Django regex routes are anchored and relative to the root ("^users/(?P<pk>[0-9]+)/$");
        # the anchors are not part of the path, the leading slash is.
        if template.startswith("^"):
            template = template[1:]
            if not template.startswith("/"):
                template = "/" + template
        if template.endswith("$"):
            template = template[:-1]
    return _PARAM.sub(lambda m: render(m.group(1) or m.group(2) or m.group(3)), template)


def _required(template: str) -> str:
    """The template without Rails optional groups (`(.:format)`, `(/:page)`).

    OpenAPI has no optional segments. Django regex groups are rewritten first so that their
    parentheses are not mistaken for optional groups.
    """
    if "(?P<" in template:
        template = _rewrite(template, lambda name: "{" + name + "}")
    while "(" in template:
        stripped = _OPTIONAL.sub("", template)
        if stripped == template:
            break
        template = stripped
    return template


def to_openapi(template: str) -> str:
    """The OpenAPI form: every parameter as `{name}`, Rails optional groups removed.

    `/users/:id(.:format)` → `/users/{id}`; `/u/<int:id>` → `/u/{id}`; `{id:int}` → `{id}`.
    OpenAPI forbids two parameters of one name in a path, so a repeated name gets a suffix:
    `/a/:int/b/:int` → `/a/{int}/b/{int_2}`. The result is a fixed point of this function.
    """
    template = _required(template)
    names = path_params(template)
    if len(set(names)) == len(names):
        return _rewrite(template, lambda name: "{" + name + "}")
    taken = set(names)
    used: set[str] = set()

    def render(name: str) -> str:
        unique, count = name, 1
        while unique in used or (count > 1 and unique in taken):
            count += 1
            unique = f"{name}_{count}"
        used.add(unique)
        return "{" + unique + "}"

    return _rewrite(template, render)


def to_colon(template: str) -> str:
    """The colon form used by `inspect route:` identifiers: `{id}`, `<int:id>` → `:id`.

    Rails optional groups and globs (`*path`) are kept as written.
    """

    def render_match(match: re.Match[str]) -> str:
        if match.group(3) is not None:  # already `:name` or `*name`
            return match.group(0)
        return ":" + (match.group(1) or match.group(2))

    if "(?P<" in template:
        template = _rewrite(template, lambda name: "{" + name + "}")
    return _PARAM.sub(render_match, template)


def path_params(template: str) -> list[str]:
    """Names of the required path parameters of a template, in order, as written.

    Parameters inside Rails optional groups (`(.:format)`) are not required and not listed.
    """
    names: list[str] = []

    def collect(name: str) -> str:
        names.append(name)
        return name

    _rewrite(_required(template), collect)
    return names


def route_key(method: str, template: str) -> str:
    """Canonical route id text: `route_key("get", "/users/:id")` → `"GET /users/{id}"`."""
    return method.strip().upper() + " " + to_openapi(template)
