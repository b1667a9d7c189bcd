"""Every JSON-RPC method, registered in `tracetool_daemon.registry.METHODS` on import.

docs/rpc.md documents each one; `system.listMethods` lists them. Methods are thin adapters:
they check and convert parameters, call one core function (`tracetool.query`, `tracetool.index`,
`tracetool.filters`, `tracetool.diagram`, `tracetool.assistant`) and return its result as JSON.
"""

from __future__ import annotations

from tracetool_daemon.methods import assistant, editor, index, query, recordings, system

__all__ = ["assistant", "editor", "index", "query", "recordings", "system"]
