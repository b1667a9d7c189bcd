"""Stable hashes, byte-compatible with AppMap's HashBuilder (reference/appmap.md §1.10).

`build_hash(algorithm, props)` = sha256 over `algorithmVersion=<algorithm>` followed by each
`key=value` in key order, with no separator. Values are rendered as AppMap's JavaScript does:
booleans lower-case, None as the empty string.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any


def js_str(value: Any) -> str:
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def build_hash(algorithm: str, props: Mapping[str, Any]) -> str:
    h = hashlib.sha256()
    h.update(f"algorithmVersion={algorithm}".encode())
    for key in sorted(props):
        h.update(f"{key}={js_str(props[key])}".encode())
    return h.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
