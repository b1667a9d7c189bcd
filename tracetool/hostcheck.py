"""The one Host/Origin check of every tracetool HTTP endpoint that must not serve other sites.

Used by the agent's `/_trace/record` (in the user's app), the daemon's JSON-RPC server and the
query UI. A web page in the user's browser can send requests to any of them: a cross-site
`POST` with `Origin: http://evil.example`, or — after DNS rebinding — a request whose `Host` is
the attacker's name resolved to 127.0.0.1. Both are refused (403) by `refusal()`.

Contract:

- `refusal(hosts, origins, allowed=())` takes every value of the `Host` header and of the
  `Origin` header the request carried (lists, so duplicates are seen) and returns None when the
  request may be served, else a one-line reason.
- `Host`: at most one, of the form `name[:port]` (`name` a DNS name, an IPv4 address or a
  bracketed IPv6 address; `port` digits). Anything else — `127.0.0.1:8000@evil`, a user-info
  part, a path, two Host headers, or two values joined with `,` by the server — is refused.
  A missing Host (HTTP/1.0 clients) is accepted.
- `Origin`: at most one, `http(s)://name[:port]` with nothing after it; `null` (sandboxed
  pages, `file:` URLs) is refused. A missing Origin (curl, the CLI, same-origin GET) is accepted.
- A name is allowed when it is loopback (`localhost`, `*.localhost`, `127.x.x.x`, `::1`) or
  listed in `allowed`. An entry of `allowed` matches the name exactly, a leading dot matches the
  domain and its subdomains (`.example.test`, as Django's ALLOWED_HOSTS), and `*` any name.
- `allowed_hosts(configured)` is what the user configured: `$TRACETOOL_ALLOWED_HOSTS`
  (comma-separated) plus trace.yml's `allowed_hosts` list (`Config.allowed_hosts`);
  `configured_allowed_hosts()` reads trace.yml itself (the daemon and the UI, once at start).
  The agent adds the app's own names (Django's ALLOWED_HOSTS, without `*`).

Stdlib only and imported lazily by the agent (Python 3.9+).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Optional

ENV_ALLOWED_HOSTS = "TRACETOOL_ALLOWED_HOSTS"
CONFIG_KEY = "allowed_hosts"

_NAME = r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9_](?:[a-z0-9_.-]{0,252}[a-z0-9_.])?))"
_PORT = r"(?::(?P<port>[0-9]{1,5}))?"
_HOST_RE = re.compile(_NAME + _PORT)
_ORIGIN_RE = re.compile(r"(?P<scheme>https?)://" + _NAME + _PORT)
_IPV4_LOOPBACK = re.compile(r"127(?:\.(?:25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){3}")


def host_name(value: str) -> Optional[str]:
    """The name in a `Host` value (lower case, brackets kept for IPv6), or None if malformed."""
    match = _HOST_RE.fullmatch(value.strip().lower())
    if match is None:
        return None
    return _name_of(match)


def origin_name(value: str) -> Optional[str]:
    """The host name of an `Origin` value, or None if it is not exactly `http(s)://name[:port]`."""
    match = _ORIGIN_RE.fullmatch(value.strip().lower())
    if match is None:
        return None
    return _name_of(match)


def _name_of(match: re.Match[str]) -> Optional[str]:
    port = match.group("port")
    if port is not None and int(port) > 65535:
        return None
    v6 = match.group("v6")
    if v6 is not None:
        return f"[{v6}]"
    name = match.group("name")
    return name[:-1] if name.endswith(".") else name


def is_loopback(name: str) -> bool:
    return (
        name in ("localhost", "[::1]", "::1")
        or name.endswith(".localhost")
        or _IPV4_LOOPBACK.fullmatch(name) is not None
    )


def _matches(name: str, allowed: Iterable[str]) -> bool:
    bare = name[1:-1] if name.startswith("[") else name
    for entry in allowed:
        pattern = entry.strip().lower()
        if not pattern:
            continue
        if pattern == "*":
            return True
        if pattern.startswith("."):
            if name == pattern[1:] or name.endswith(pattern):
                return True
        elif pattern in (name, bare):
            return True
    return False


def name_allowed(name: str, allowed: Iterable[str] = ()) -> bool:
    return is_loopback(name) or _matches(name, allowed)


def _one(values: Sequence[str], what: str) -> tuple[Optional[str], Optional[str]]:
    """(the single value, None) or (None, reason)."""
    present = [v for v in values if v is not None]
    if len(present) > 1:
        return None, f"more than one {what} header"
    return (present[0] if present else None), None


def refusal(
    hosts: Sequence[str], origins: Sequence[str], allowed: Iterable[str] = ()
) -> Optional[str]:
    """None if the request may be served, else why not (module doc)."""
    allowed = tuple(allowed)
    host, why = _one(hosts, "Host")
    if why:
        return why
    if host is not None:
        name = host_name(host)
        if name is None:
            return f"malformed Host header {host[:80]!r}"
        if not name_allowed(name, allowed):
            return (
                f"Host {name[:80]!r} is not loopback or an allowed host "
                f"(see allowed_hosts in docs/security.md)"
            )
    origin, why = _one(origins, "Origin")
    if why:
        return why
    if origin is not None:
        name = origin_name(origin)
        if name is None:
            return f"Origin {origin[:80]!r} is not an http(s) origin of this server"
        if not name_allowed(name, allowed):
            return (
                f"Origin {origin[:80]!r} is not loopback or an allowed host "
                f"(see allowed_hosts in docs/security.md)"
            )
    return None


def allowed_hosts(configured: Iterable[str] = ()) -> tuple[str, ...]:
    """`$TRACETOOL_ALLOWED_HOSTS` plus the names trace.yml lists (`Config.allowed_hosts`)."""
    env = os.environ.get(ENV_ALLOWED_HOSTS, "")
    names = [part.strip() for part in env.split(",") if part.strip()]
    names.extend(name for name in configured if name.strip())
    return tuple(names)


def configured_allowed_hosts() -> tuple[str, ...]:
    """`allowed_hosts()` with the trace.yml found from the current directory (servers)."""
    from tracetool.config import load_config
    from tracetool.errors import TraceToolError

    try:
        configured = load_config().allowed_hosts
    except TraceToolError:
        configured = ()
    return allowed_hosts(configured)


__all__ = [
    "CONFIG_KEY",
    "ENV_ALLOWED_HOSTS",
    "allowed_hosts",
    "configured_allowed_hosts",
    "host_name",
    "is_loopback",
    "name_allowed",
    "origin_name",
    "refusal",
]
