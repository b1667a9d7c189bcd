"""Not found: the identifiers of a type that the recordings hold, for "did you mean".

From the index when there is one, else from the class maps (and, for routes and queries, the
events) of the first `_SUGGEST_SCAN_FILES` recordings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracetool import accel
from tracetool.errors import TraceToolError
from tracetool.inspect.refs import CodeObjectRef
from tracetool.trace import events as ev
from tracetool.trace.reader import find_trace_files, guarded
from tracetool.trace.stream import open_stream

_SUGGEST_SCAN_FILES = 200


def known_identifiers(
    ref: CodeObjectRef, trace_dir: Path, query_db: Path | str | None = None
) -> list[str]:
    """Identifiers of `ref`'s type that the recordings hold (for "did you mean").

    From the index when there is one, else from the class maps of the first recordings.
    """
    from tracetool.errors import IndexMissingError
    from tracetool.index.schema import open_reader
    from tracetool.paths import query_db_path

    wanted = "function" if ref.type == "package" else ref.type
    path = Path(query_db).expanduser() if query_db else query_db_path(trace_dir)
    try:
        db = open_reader(path)
    except IndexMissingError:
        db = None
    if db is not None:
        try:
            rows = db.execute("SELECT fqid FROM code_objects WHERE type = ?", (wanted,))
            fqids = [str(r[0]) for r in rows]
        except Exception:
            fqids = []
        finally:
            db.close()
    else:
        seen: dict[str, None] = {}
        for n, file in enumerate(find_trace_files(trace_dir)):
            if n >= _SUGGEST_SCAN_FILES:
                break
            try:
                with guarded(file):
                    # a big recording is streamed: its classMap is read, its events only here
                    doc = open_stream(file, header_keys=("classMap",), event_updates=False)
                    cmap = accel.class_map(doc.class_map)
                    for co in cmap:
                        if co.type == wanted:
                            seen.setdefault(co.fqid, None)
                    if wanted in ("route", "query"):
                        from tracetool import route_model, sql

                        for event in doc.events():
                            if event.get("event") != "call":
                                continue
                            if wanted == "route" and "http_server_request" in event:
                                seen.setdefault(
                                    "route:"
                                    + route_model.route_id(*route_model.server_route(event)),
                                    None,
                                )
                            elif wanted == "query" and "sql_query" in event:
                                text = sql.normalize(ev.sql_text(event), ev.database_type(event))
                                seen.setdefault("query:" + text, None)
            except TraceToolError:
                continue
        fqids = list(seen)
    out = [f[len(wanted) + 1 :] for f in fqids if f.startswith(wanted + ":")]
    if ref.type == "package":  # the packages (and modules) of the functions
        from tracetool.identifiers import loose

        packages: dict[str, None] = {}
        for ident in out:
            parts = ident.replace("#", ".").split("/")
            for i in range(1, len(parts)):
                packages.setdefault("/".join(parts[:i]), None)
            module = ident.rpartition(".")[0] if "#" not in ident else ""
            if module:
                packages.setdefault(module, None)
        out = [p for p in packages if loose(p)]
    return out


def not_found_message(ref: CodeObjectRef, trace_dir: Path, query_db: Any = None) -> str:
    """`<ref> not found in any recording under <dir>; did you mean: …?` (up to 5)."""
    from tracetool.identifiers import did_you_mean

    known = known_identifiers(ref, trace_dir, query_db)
    hint = did_you_mean(ref.text, [f"{ref.type}:{k}" for k in known])
    return f"{ref.text} not found in any recording under {trace_dir}{hint}"


__all__ = ["known_identifiers", "not_found_message"]
