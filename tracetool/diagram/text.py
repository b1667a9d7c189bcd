"""Plain-text summary of a diff diagram, as AppMap's text formatter writes it.

Contract: one line per marked action down to depth 4 below the root, indented two spaces per
level of marked ancestors: ``added function call `users#show` ``, ``removed SQL `…` ``,
``changed function call `models.find` to return User instead of exception!``,
``added HTTP client request `GET https://…` ``, ``added loop``. Repeated identical lines are
printed once with an ``N times: `` prefix. Unmarked actions print nothing.
"""

from __future__ import annotations

from tracetool.diagram.model import (
    CHANGE,
    CLIENT_RPC,
    DELETE,
    FUNCTION,
    INSERT,
    QUERY,
    SERVER_RPC,
    Action,
    Diagram,
)

MAX_DEPTH = 4
_MODE_WORDS = {CHANGE: "changed to", INSERT: "added", DELETE: "removed"}


def _qualify(action: Action, name: str) -> str:
    callee = action.actors()[1]
    if callee is None:
        return name
    if action.node_type == QUERY:
        return f"SQL `{name}`"
    if action.node_type == CLIENT_RPC:
        return f"HTTP client request `{name}`"
    if action.node_type == SERVER_RPC:
        return f"HTTP server request `{name}`"
    sep = "." if action.node_type == FUNCTION and action.static else "#"
    return f"function call `{callee.name}{sep}{name}`"


def _one_line(text: str) -> str:
    return text.replace("\n", " ")


def describe(action: Action) -> str:
    """The sentence for one marked action (no indentation)."""
    if action.diff_mode == CHANGE:
        tokens: list[str] = []
        former = _qualify(action, _one_line(action.former_name)) if action.former_name else None
        current_name = action.display_name
        current = _qualify(action, _one_line(current_name)) if current_name else None
        former_result = _one_line(action.former_result) if action.former_result else None
        result = action.result
        current_result = _one_line(result) if result else None
        if former != current:
            tokens += ["changed", former or "undefined", "to", current or "undefined"]
        if former_result != current_result:
            if tokens:
                tokens += ["and", "changed"]
            else:
                tokens += ["changed", current or "undefined"]
            tokens += ["to return", current_result or "undefined"]
            tokens += ["instead of", former_result or "undefined"]
        return " ".join(tokens)
    word = _MODE_WORDS.get(action.diff_mode or 0, "")
    return f"{word} {_qualify(action, _one_line(action.display_name))}"


def render(diagram: Diagram) -> str:
    counts: dict[str, int] = {}
    lines: list[str] = []
    stack: list[tuple[Action, int]] = [(a, 1) for a in reversed(diagram.root_actions)]
    while stack:
        action, depth = stack.pop()
        if depth > MAX_DEPTH:
            continue
        child_depth = depth
        if action.diff_mode is not None:
            message = "  " * (depth - 1) + describe(action)
            if message in counts:
                counts[message] += 1
            else:
                counts[message] = 1
                lines.append(message)
            child_depth = depth + 1
        for child in reversed(action.children):
            stack.append((child, child_depth))
    return "\n".join(
        line if counts[line] == 1 else f"{counts[line]} times: {line}" for line in lines
    )
