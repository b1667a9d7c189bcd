"""Differences between two OpenAPI documents, classified breaking / non-breaking.

What is compared: paths, operations (methods), response status codes and parameters (path- and
operation-level, keyed by `in` and `name`). Additions are non-breaking — except a new
*required* parameter, which breaks existing clients; removals are breaking.

The result has the shape of AppMap's `apiDiff` (which comes from the `openapi-diff` package):
`{breakingDifferencesFound, breakingDifferences?, nonBreakingDifferences,
unclassifiedDifferences}`, each difference `{type, action, code, entity, source,
sourceSpecEntityDetails, destinationSpecEntityDetails}` with openapi-diff's codes
(`path.add`, `method.remove`, `response.status-code.add`, `request.parameter.query.add`, …)
and locations (`paths./users/{id}.get.responses.302`), plus `description`, one readable line
(e.g. "Add response status code `302 GET /users/{id}`").
"""

from __future__ import annotations

from typing import Any

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _operations(doc: dict[str, Any] | None) -> dict[str, dict[str, dict[str, Any]]]:
    paths = (doc or {}).get("paths")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    if not isinstance(paths, dict):
        return out
    for path, item in paths.items():
        if not isinstance(item, dict):
            continue
        shared = item.get("parameters")
        shared = shared if isinstance(shared, list) else []
        ops: dict[str, dict[str, Any]] = {}
        for method in METHODS:
            op = item.get(method)
            if isinstance(op, dict):
                params = list(shared) + list(op.get("parameters") or [])
                ops[method] = {**op, "parameters": params}
        out[str(path)] = ops
    return out


def _params(op: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for p in op.get("parameters") or []:
        if isinstance(p, dict) and "name" in p:
            found[(str(p.get("in", "query")), str(p["name"]))] = p
    return found


def _difference(
    action: str,
    entity: str,
    location: str,
    value: Any,
    description: str,
    breaking: bool,
) -> dict[str, Any]:
    details = [{"location": location, "value": value}]
    return {
        "type": "breaking" if breaking else "non-breaking",
        "action": action,
        "code": f"{entity}.{action}",
        "entity": entity,
        "source": "tracetool",
        "description": description,
        "sourceSpecEntityDetails": details if action == "remove" else [],
        "destinationSpecEntityDetails": details if action == "add" else [],
    }


def diff_openapi(base: dict[str, Any] | None, head: dict[str, Any] | None) -> dict[str, Any]:
    """Classified differences base → head (module doc)."""
    b_ops, h_ops = _operations(base), _operations(head)
    diffs: list[dict[str, Any]] = []

    def change(
        action: str, entity: str, location: str, value: Any, text: str, breaking: bool
    ) -> None:
        verb = "Add" if action == "add" else "Remove"
        diffs.append(_difference(action, entity, location, value, f"{verb} {text}", breaking))

    for path in sorted(set(b_ops) | set(h_ops)):
        if path not in h_ops or path not in b_ops:
            action = "add" if path in h_ops else "remove"
            ops = h_ops.get(path) or b_ops.get(path) or {}
            change(action, "path", f"paths.{path}", ops, f"path `{path}`", action == "remove")
            continue
        for method in METHODS:
            b_op, h_op = b_ops[path].get(method), h_ops[path].get(method)
            if b_op is None and h_op is None:
                continue
            where = f"paths.{path}.{method}"
            op_name = f"{method.upper()} {path}"
            if b_op is None or h_op is None:
                action = "add" if h_op is not None else "remove"
                change(
                    action,
                    "method",
                    where,
                    h_op or b_op,
                    f"operation `{op_name}`",
                    b_op is not None,
                )
                continue
            b_resp = _dict(b_op.get("responses"))
            h_resp = _dict(h_op.get("responses"))
            for code in sorted(set(map(str, b_resp)) ^ set(map(str, h_resp))):
                added = code in set(map(str, h_resp))
                value = (h_resp if added else b_resp).get(
                    code, (h_resp if added else b_resp).get(_int(code))
                )
                change(
                    "add" if added else "remove",
                    "response.status-code",
                    f"{where}.responses.{code}",
                    value,
                    f"response status code `{code} {op_name}`",
                    not added,
                )
            b_par, h_par = _params(b_op), _params(h_op)
            for key in sorted(set(b_par) ^ set(h_par)):
                added = key in h_par
                param = h_par[key] if added else b_par[key]
                required = bool(param.get("required"))
                kind = f"{'required ' if required and added else ''}{key[0]} parameter"
                change(
                    "add" if added else "remove",
                    f"request.parameter.{key[0]}",
                    f"{where}.parameters.{key[0]}.{key[1]}",
                    param,
                    f"{kind} `{key[1]}` {'to' if added else 'from'} `{op_name}`",
                    (not added) or required,
                )
    breaking = [d for d in diffs if d["type"] == "breaking"]
    result: dict[str, Any] = {"breakingDifferencesFound": bool(breaking)}
    if breaking:
        result["breakingDifferences"] = breaking
    result["nonBreakingDifferences"] = [d for d in diffs if d["type"] == "non-breaking"]
    result["unclassifiedDifferences"] = []
    return result


def without_removals(api_diff: dict[str, Any]) -> dict[str, Any]:
    """`--no-report-removed`: drop removals (what AppMap clears as "breaking")."""
    out = dict(api_diff)
    for key in ("breakingDifferences", "nonBreakingDifferences", "unclassifiedDifferences"):
        if key in out:
            out[key] = [d for d in out[key] if d.get("action") != "remove"]
    if "breakingDifferences" in out and not out["breakingDifferences"]:
        del out["breakingDifferences"]
    out["breakingDifferencesFound"] = bool(out.get("breakingDifferences"))
    return out


def _dict(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _int(code: str) -> Any:
    try:
        return int(code)
    except ValueError:
        return code
