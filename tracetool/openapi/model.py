"""The API model: what the recorded HTTP server requests say about each operation.

`ApiModel` is built per recording (in worker processes), then merged; every merge is
order-independent (sums, set unions, commutative schema merges), so the rendered document is
the same however the work was split. `ApiModel.paths()` renders the OpenAPI `paths` object and
`ApiModel.security_schemes()` the schemes its operations name, both sorted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from tracetool.openapi.schema import Schema, finalize, merge

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
ANONYMOUS = ""  # security entry of a request that carried no credentials

_PARAM = re.compile(r"\{([^{}/]+)\}")


@dataclass
class Operation:
    requests: int = 0
    params: dict[tuple[str, str], Schema] = field(default_factory=dict)  # (in, name) -> schema
    bodies: dict[str, Schema] = field(default_factory=dict)  # request mime -> schema
    responses: dict[int, dict[str, Schema]] = field(default_factory=dict)  # status -> mime -> s
    security: set[str] = field(default_factory=set)
    summaries: dict[str, int] = field(default_factory=dict)

    def merge(self, other: Operation) -> None:
        self.requests += other.requests
        _merge_into(self.params, other.params)
        _merge_into(self.bodies, other.bodies)
        for status, contents in other.responses.items():
            _merge_into(self.responses.setdefault(status, {}), contents)
        self.security |= other.security
        for summary, count in other.summaries.items():
            self.summaries[summary] = self.summaries.get(summary, 0) + count


def _merge_into(target: dict[Any, Schema], source: dict[Any, Schema]) -> None:
    for key, schema in source.items():
        target[key] = merge(target[key], schema) if key in target else schema


@dataclass
class ApiModel:
    operations: dict[tuple[str, str], Operation] = field(default_factory=dict)  # (path, method)
    schemes: dict[str, dict[str, str]] = field(default_factory=dict)
    skipped: dict[tuple[str, str], list[Any]] = field(default_factory=dict)  # -> [count, eg]
    recordings: int = 0
    requests: int = 0
    media: int = 0
    failures: list[str] = field(default_factory=list)  # unreadable recordings

    def operation(self, path: str, method: str) -> Operation:
        key = (path, method)
        op = self.operations.get(key)
        if op is None:
            op = self.operations[key] = Operation()
        return op

    def skip(self, source: str, reason: str, example: str) -> None:
        entry = self.skipped.get((source, reason))
        if entry is None:
            self.skipped[(source, reason)] = [1, example]
        else:
            entry[0] += 1
            entry[1] = min(entry[1], example)

    def merge(self, other: ApiModel) -> None:
        for key, op in other.operations.items():
            mine = self.operations.get(key)
            if mine is None:
                self.operations[key] = op
            else:
                mine.merge(op)
        for name, scheme in other.schemes.items():
            self.schemes.setdefault(name, scheme)
        for key, (count, example) in other.skipped.items():
            entry = self.skipped.get(key)
            if entry is None:
                self.skipped[key] = [count, example]
            else:
                entry[0] += count
                entry[1] = min(entry[1], example)
        self.recordings += other.recordings
        self.requests += other.requests
        self.media += other.media
        self.failures.extend(other.failures)

    def warnings(self) -> list[str]:
        """One line per unreadable recording and per (recording, reason) of skipped requests."""
        lines = sorted(self.failures)
        for (source, reason), (count, example) in sorted(self.skipped.items()):
            what = "request" if count == 1 else "requests"
            lines.append(f"{source}: skipped {count} HTTP {what} ({reason}), e.g. {example}")
        return lines

    def paths(self, *, oas31: bool = False) -> dict[str, Any]:
        """The OpenAPI `paths` object, sorted by path, then by method order."""
        canonical = _canonical_paths({path for path, _ in self.operations})
        grouped: dict[str, dict[str, Operation]] = {}
        for (path, method), op in self.operations.items():
            target, renames = canonical[path]
            if renames:
                op = _renamed(op, renames)
            methods = grouped.setdefault(target, {})
            if method in methods:
                merged = Operation()
                merged.merge(methods[method])
                merged.merge(op)
                op = merged
            methods[method] = op
        out: dict[str, Any] = {}
        for path in sorted(grouped):
            methods = grouped[path]
            out[path] = {
                m: _render_operation(path, methods[m], oas31) for m in METHODS if m in methods
            }
        return out

    def security_schemes(self) -> dict[str, dict[str, str]]:
        used = {name for op in self.operations.values() for name in op.security if name}
        return {name: dict(self.schemes[name]) for name in sorted(used) if name in self.schemes}


def _canonical_paths(paths: set[str]) -> dict[str, tuple[str, dict[str, str]]]:
    """Map each path to the one spelling used for all paths equal but for parameter names.

    OpenAPI treats `/users/{id}` and `/users/{user_id}` as the same path and forbids both; the
    spelling that sorts first wins and the others' parameters are renamed by position.
    """
    groups: dict[str, list[str]] = {}
    for path in paths:
        groups.setdefault(_PARAM.sub("{}", path), []).append(path)
    out: dict[str, tuple[str, dict[str, str]]] = {}
    for members in groups.values():
        members.sort()
        target = members[0]
        target_names = _PARAM.findall(target)
        for path in members:
            names = _PARAM.findall(path)
            renames = {a: b for a, b in zip(names, target_names) if a != b}
            out[path] = (target, renames)
    return out


def _renamed(op: Operation, renames: dict[str, str]) -> Operation:
    copy = Operation(
        op.requests,
        {},
        dict(op.bodies),
        {s: dict(c) for s, c in op.responses.items()},
        set(op.security),
        dict(op.summaries),
    )
    for (where, name), schema in op.params.items():
        key = (where, renames.get(name, name) if where == "path" else name)
        copy.params[key] = merge(copy.params[key], schema) if key in copy.params else schema
    return copy


def reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        family = {1: "Informational", 2: "Success", 3: "Redirection", 4: "Client error"}
        return family.get(status // 100, "Server error")


def _path_schema(schema: Schema) -> Schema:
    """Path parameters get one plain type: mixed observations are strings."""
    done = finalize(schema)
    done.pop("nullable", None)
    if not done or "anyOf" in done or done.get("type") in ("object", "array", None):
        return {"type": "string"}
    return done


def _render_operation(path: str, op: Operation, oas31: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if op.summaries:
        out["summary"] = min(op.summaries, key=lambda s: (-op.summaries[s], s))
    parameters: list[dict[str, Any]] = []
    for name in _PARAM.findall(path):
        schema = op.params.get(("path", name), {})
        parameters.append(
            {"name": name, "in": "path", "required": True, "schema": _path_schema(schema)}
        )
    for (where, name), schema in sorted(op.params.items()):
        if where != "query":
            continue
        param: dict[str, Any] = {"name": name, "in": "query"}
        rendered = finalize(schema, oas31=oas31) or {"type": "string"}
        if rendered.get("type") == "object":
            param["style"] = "deepObject"
            param["explode"] = True
        param["schema"] = rendered
        parameters.append(param)
    if parameters:
        out["parameters"] = parameters
    if op.bodies:
        out["requestBody"] = {
            "content": {
                mime: {"schema": finalize(op.bodies[mime], oas31=oas31) or {"type": "object"}}
                for mime in sorted(op.bodies)
            }
        }
    responses: dict[str, Any] = {}
    for status in sorted(op.responses):
        response: dict[str, Any] = {"description": reason_phrase(status)}
        contents = op.responses[status]
        content = {}
        for mime in sorted(m for m in contents if m):
            schema = finalize(contents[mime], oas31=oas31)
            content[mime] = {"schema": schema} if schema else {}
        if content:
            response["content"] = content
        responses[str(status)] = response
    out["responses"] = responses
    named = sorted(name for name in op.security if name)
    if named:
        security: list[dict[str, list[str]]] = [{name: []} for name in named]
        if ANONYMOUS in op.security:
            security.append({})  # some requests succeeded without credentials
        out["security"] = security
    return out
