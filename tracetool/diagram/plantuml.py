"""PlantUML text of a sequence diagram, in AppMap's `.sequence.uml` form.

Contract:

- Output matches AppMap's formatter line for line: `@startuml`, the AppMap theme include,
  `participant <alias> as "<name>"` (alias = name with every non-alphanumeric character `_`),
  requests `A->B: label` (entry `[->B`, exit `A->]`), responses `A<--B: result`,
  `activate`/`deactivate` around calls that return, `Loop N times … End` (`~N` inside another
  loop), labels on one line cut at 50 characters with the full text in a `Note right` folded at
  80 columns, static functions underlined, elapsed time in milliseconds to 3 significant digits.
- `markup=False` writes plain text (`(1.35 ms)`, no underline or italics) and `notes=False`
  leaves out the notes, as AppMap's `disableMarkup` / `disableNotes`.
- Diff diagrams color inserted actions green, deleted red (struck through) and changed
  `#CA9C3F` (old and new text side by side).
- `include_theme=False` drops the `!includeurl` line (it needs the network when rendered).
"""

from __future__ import annotations

import re

from tracetool.diagram.model import (
    CHANGE,
    CLIENT_RPC,
    DELETE,
    FUNCTION,
    INSERT,
    LOOP,
    SERVER_RPC,
    Action,
    Diagram,
)

THEME = (
    "!includeurl https://raw.githubusercontent.com/getappmap/plantuml-theme/main/appmap-theme.puml"
)
LIMIT = 50
INSERT_BACK = "#172238"
DELETE_BACK = "#29201A"
_ARROW_COLORS = {INSERT: "green", DELETE: "red", CHANGE: "CA9C3F"}


def js_number(value: float) -> str:
    """A number as JavaScript prints it (after `+x.toPrecision(3)`)."""
    v = float(f"{value:.3g}")
    if v == int(v) and abs(v) < 1e21:
        return str(int(v))
    text = repr(v)
    if "e" in text:
        mantissa, exp = text.split("e")
        e = int(exp)
        if e >= -6:
            digits = mantissa.replace("-", "").replace(".", "")
            sign = "-" if v < 0 else ""
            return f"{sign}0.{'0' * (-e - 1)}{digits.rstrip('0')}"
        return f"{mantissa}e{e}"
    return text


def elapsed_ms(seconds: float) -> str:
    return f"{js_number(seconds * 1000)} ms"


def single_line(text: str) -> str:
    return re.sub(r"\s{2,}", " ", text.replace("\n", "\\n"))


def alias(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "_", name)


def fold(text: str, limit: int) -> str:
    lines: list[str] = []
    buffer = ""
    for word in (w for line in text.split("\n") for w in re.split(r"\s+", line)):
        if not buffer:
            buffer += word
        elif len(buffer) + len(word) < limit:
            buffer += " " + word
        else:
            lines.append(buffer)
            buffer = word
    lines.append(buffer)
    return "\n".join(lines)


class _Writer:
    def __init__(self, markup: bool, notes: bool) -> None:
        self.markup = markup
        self.notes = notes
        self.lines: list[str] = []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def elapsed(self, seconds: float) -> str:
        if self.markup:
            return f"<color:gray> {elapsed_ms(seconds)}</color>"
        return f"({elapsed_ms(seconds)})"

    def diff_label(self, action: Action, label: str, former: str | None) -> str:
        mode = action.diff_mode
        if mode == INSERT:
            return f"<color:lightgray><back:{INSERT_BACK}>{label}</back></color>"
        if mode == DELETE:
            return f"<color:lightgray><back:{DELETE_BACK}>--{label}--</back></color>"
        if mode == CHANGE and former is not None and former != label:
            return (
                f"<color:lightgray><back:{DELETE_BACK}>--{former}--</back></color> "
                f"<color:lightgray><back:{INSERT_BACK}>{label}</back></color>"
            )
        return label

    def arrow(self, tail: str, head: str, action: Action) -> str:
        color = _ARROW_COLORS.get(action.diff_mode or 0)
        return f"{tail}[#{color}]{head}" if color else f"{tail}{head}"


def render(
    diagram: Diagram, *, markup: bool = True, notes: bool = True, include_theme: bool = True
) -> str:
    """The PlantUML document (module doc)."""
    w = _Writer(markup, notes)
    # (action, depth, inside_loop, phase): phase 0 opens an action, 1 closes it.
    stack: list[tuple[Action, int, bool, int]] = [
        (a, 1, False, 0) for a in reversed(diagram.root_actions)
    ]
    while stack:
        action, depth, in_loop, phase = stack.pop()
        if action.node_type == LOOP:
            if phase == 1:
                w.emit(depth, "End")
                continue
            color = {INSERT: "#green", DELETE: "#red", CHANGE: "#yellow"}.get(
                action.diff_mode or 0, ""
            )
            count = f"~{action.count}" if in_loop else str(action.count)
            text = f"Loop{color} {count} times"
            if action.elapsed:
                text += f" {w.elapsed(action.elapsed)}"
            w.emit(depth, text)
            stack.append((action, depth, in_loop, 1))
            for child in reversed(action.children):
                stack.append((child, depth + 1, True, 0))
            continue
        caller, callee = action.actors()
        tokens = [alias(caller.name) if caller else "", alias(callee.name) if callee else ""]
        has_response = _has_response(action)
        activate = has_response and callee is not None
        if phase == 1:
            if has_response:
                line = tokens[0] + _response_arrow(w, action, caller, callee) + tokens[1]
                result = _response_label(w, action)
                w.emit(depth, f"{line}: {result}" if result else line)
            if activate and callee is not None:
                w.emit(depth, f"deactivate {alias(callee.name)}")
            continue
        w.emit(
            depth,
            tokens[0]
            + _request_arrow(w, action, caller, callee)
            + tokens[1]
            + ": "
            + _request_label(w, action),
        )
        name = action.display_name
        if w.notes and len(name) > LIMIT:
            w.emit(depth, "Note right")
            former = fold(action.former_name, 80) if action.former_name else None
            note = fold(name, 80)
            w.lines.append(w.diff_label(action, note, former) if action.diff_mode else note)
            w.emit(depth, "End note")
        if activate and callee is not None:
            w.emit(depth, f"activate {alias(callee.name)}")
        stack.append((action, depth, in_loop, 1))
        for child in reversed(action.children):
            stack.append((child, depth + 1, in_loop, 0))
    participants = [
        f'participant {alias(a.name)} as "{single_line(a.name)}"' for a in diagram.actors
    ]
    head = ["@startuml", *([THEME] if include_theme else [])]
    return "\n".join([*head, *participants, *w.lines, "@enduml"])


def _has_response(action: Action) -> bool:
    if action.node_type == FUNCTION:
        return action.return_value is not None
    # queries (and loops) have no response line
    return action.node_type in (SERVER_RPC, CLIENT_RPC)


def _request_arrow(w: _Writer, action: Action, caller: object, callee: object) -> str:
    if caller and callee:
        return w.arrow("-", ">", action)
    if caller:
        return w.arrow("-", ">]", action)
    return w.arrow("[-", ">", action)


def _response_arrow(w: _Writer, action: Action, caller: object, callee: object) -> str:
    if caller and callee:
        return w.arrow("<", "--", action)
    if caller:
        return w.arrow("<", "--]", action)
    return w.arrow("[<", "--", action)


def _request_label(w: _Writer, action: Action) -> str:
    label = single_line(action.display_name)[:LIMIT]
    former = single_line(action.former_name)[:LIMIT] if action.former_name else None
    text = w.diff_label(action, label, former)
    static = action.node_type == FUNCTION and action.static and w.markup
    if static and action.diff_mode != DELETE:
        text = f"<u>{text}</u>"
    if action.elapsed and action.diff_mode != DELETE:
        text += f" {w.elapsed(action.elapsed)}"
    return text


def _response_label(w: _Writer, action: Action) -> str | None:
    result = action.result
    if not result:
        return None
    label = single_line(result)[:LIMIT]
    former = single_line(action.former_result)[:LIMIT] if action.former_result else None
    text = w.diff_label(action, label, former)
    if action.raises_exception and w.markup and not action.diff_mode:
        text = f"<i>{text}</i>"
    return text


__all__ = ["alias", "elapsed_ms", "js_number", "render"]
