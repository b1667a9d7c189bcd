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
from collections.abc import Iterable, Iterator
from typing import Any

from tracetool import accel
from tracetool.diagram.model import (
    CHANGE,
    CLIENT_RPC,
    DELETE,
    FUNCTION,
    INSERT,
    LOOP,
    QUERY,
    SERVER_RPC,
    Action,
    Actor,
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
    return "".join(chunks(diagram, markup=markup, notes=notes, include_theme=include_theme))


def chunks(
    diagram: Diagram,
    *,
    markup: bool = True,
    notes: bool = True,
    include_theme: bool = True,
    lines_per_chunk: int = 8192,
) -> Iterator[str]:
    """`render`'s text in pieces of about `lines_per_chunk` lines (written as they come)."""
    return stream_chunks(
        diagram.actors,
        [diagram.root_actions],
        markup=markup,
        notes=notes,
        include_theme=include_theme,
        lines_per_chunk=lines_per_chunk,
    )


def stream_chunks(
    actors: list[Actor],
    batches: Iterable[list[Action]],
    *,
    markup: bool = True,
    notes: bool = True,
    include_theme: bool = True,
    lines_per_chunk: int = 8192,
) -> Iterator[str]:
    """`chunks` of a diagram given as its actors and its root actions in batches (the text of
    their concatenation), each batch read once as it comes."""
    participants = [f'participant {alias(a.name)} as "{single_line(a.name)}"' for a in actors]
    head = ["@startuml", *([THEME] if include_theme else [])]
    yield "\n".join([*head, *participants])
    w = _Writer(markup, notes)
    lines = w.lines
    # Names, labels and elapsed texts repeat across the 10^5 actions of a big diagram: each
    # distinct one is formatted once (`_Texts`).
    texts = _Texts(w)
    indents: list[str] = []
    # (action, depth, inside_loop) opens an action; a str is a closing line, already indented.
    stack: list[tuple[Action, int, bool] | str] = []
    for roots in batches:
        stack.extend((a, 1, False) for a in reversed(roots))
        yield from _batch_lines(stack, lines, w, texts, indents, notes, lines_per_chunk)
    lines.append("@enduml")
    yield "\n" + "\n".join(lines)


def _batch_lines(
    stack: list[tuple[Action, int, bool] | str],
    lines: list[str],
    w: _Writer,
    texts: _Texts,
    indents: list[str],
    notes: bool,
    lines_per_chunk: int,
) -> Iterator[str]:
    """Emit the lines of the actions on `stack` into `lines`, yielding full chunks."""
    emit = lines.append
    pop, push = stack.pop, stack.append
    # `_Texts.request_label` and `.response_line` of plain function actions, inline
    labels, elapsed_texts, responses = texts.labels, texts.elapsed, texts.responses
    heads = texts.heads
    markup = w.markup
    fast = _UML_LINES
    memo = _memo(texts, notes, indents)
    while stack:
        if len(lines) >= lines_per_chunk:
            yield "\n" + "\n".join(lines)
            lines.clear()
        if fast is not None:  # what is memoized already, in C; the rest below
            fast(stack, lines, memo, lines_per_chunk, Action)
            if not stack or len(lines) >= lines_per_chunk:
                continue
        item = pop()
        if isinstance(item, str):
            emit(item)
            continue
        action, depth, in_loop = item
        node_type = action.node_type
        if (
            node_type == FUNCTION
            and action.diff_mode is None
            and action.former_name is None
            and action.former_result is None
        ):
            # the bulk of every diagram, its texts memoized (`_Texts.head_lines`, inline)
            lines_of = heads.get((depth, id(action.caller), id(action.callee)))
            if lines_of is None:
                lines_of = texts.head_lines(action.caller, action.callee, depth)
            head, activation, deactivation, response = lines_of
            name = action.name or ""
            key = (name, bool(action.static and markup))
            label = labels.get(key)
            if label is None:
                label = texts.request_label(action)
            else:
                elapsed = action.elapsed
                if elapsed:
                    shown = elapsed_texts.get(elapsed)
                    if shown is None:
                        shown = texts.elapsed_text(elapsed)
                    label += shown
            emit(head + label)
            if notes and len(name) > LIMIT:
                indent = head[: depth * 2]
                emit(indent + "Note right")
                emit(texts.note(name))
                emit(indent + "End note")
            rv = action.return_value
            if rv is not None:
                if activation:
                    emit(activation)
                    push(deactivation)
                found = responses.get(id(rv))
                line = None if found is None or found[0] is not rv else found[2].get(response)
                push(texts.response_line(response, rv) if line is None else line)
            children = action.children
            if children:  # (most function actions have none)
                for child in reversed(children):
                    push((child, depth + 1, in_loop))
            continue
        if (
            node_type in (SERVER_RPC, CLIENT_RPC)
            and action.diff_mode is None
            and action.former_name is None
            and action.former_result is None
        ):
            # an HTTP request without diff marks: the function actions' memoized head lines
            # (the general branch's texts below, by actors and depth)
            caller = action.caller if node_type == CLIENT_RPC else None
            head, activation, deactivation, response = texts.head_lines(
                caller, action.callee, depth
            )
            emit(head + texts.request_label(action))
            name = action.route or ""
            if notes and len(name) > LIMIT:
                indent = head[: depth * 2]
                emit(indent + "Note right")
                emit(texts.note(name))
                emit(indent + "End note")
            if activation:
                emit(activation)
                push(deactivation)
            result = texts.response_label(action)
            push(f"{response}: {result}" if result else response)
            for child in reversed(action.children):
                push((child, depth + 1, in_loop))
            continue
        while len(indents) <= depth + 1:
            indents.append("  " * len(indents))
        indent = indents[depth]
        if node_type == LOOP:
            color = {INSERT: "#green", DELETE: "#red", CHANGE: "#yellow"}.get(
                action.diff_mode or 0, ""
            )
            count = f"~{action.count}" if in_loop else str(action.count)
            text = f"Loop{color} {count} times"
            if action.elapsed:
                text += f" {w.elapsed(action.elapsed)}"
            emit(indent + text)
            push(indent + "End")
            for child in reversed(action.children):
                push((child, depth + 1, True))
            continue
        if node_type == SERVER_RPC:
            caller, callee = None, action.callee
        elif node_type in (FUNCTION, CLIENT_RPC, QUERY):
            caller, callee = action.caller, action.callee
        else:
            caller, callee = None, None
        alias0 = texts.alias(caller.name) if caller else ""
        alias1 = texts.alias(callee.name) if callee else ""
        if node_type == FUNCTION:
            has_response = action.return_value is not None
        else:
            # queries (and loops) have no response line
            has_response = node_type in (SERVER_RPC, CLIENT_RPC)
        activate = has_response and callee is not None
        plain = action.diff_mode is None and action.former_name is None
        if plain:
            arrow = "->" if caller and callee else ("->]" if caller else "[->")
            label = texts.request_label(action)
        else:
            arrow = _request_arrow(w, action, caller, callee)
            label = _request_label(w, action)
        emit(indent + alias0 + arrow + alias1 + ": " + label)
        name = action.display_name
        if notes and len(name) > LIMIT:
            emit(indent + "Note right")
            if plain:
                emit(texts.note(name))
            else:
                former = fold(action.former_name, 80) if action.former_name else None
                note = fold(name, 80)
                emit(w.diff_label(action, note, former) if action.diff_mode else note)
            emit(indent + "End note")
        if activate:
            emit(indent + "activate " + alias1)
        # the closing lines, pushed in reverse: the response, then `deactivate`
        if activate:
            push(indent + "deactivate " + alias1)
        if has_response:
            if plain and action.former_result is None:
                arrow = "<--" if caller and callee else ("<--]" if caller else "[<--")
                result = texts.response_label(action)
            else:
                arrow = _response_arrow(w, action, caller, callee)
                result = _response_label(w, action)
            line = indent + alias0 + arrow + alias1
            push(f"{line}: {result}" if result else line)
        for child in reversed(action.children):
            push((child, depth + 1, in_loop))


# `_batch_lines`' items made of memoized texts, in C (tracetool/_speedups_diagram.c), or None
_UML_LINES = accel.function("uml_lines")


def _memo(texts: _Texts, notes: bool, indents: list[str]) -> tuple[Any, ...]:
    """What `_UML_LINES` reads and memoizes (its `memo` argument)."""
    return (
        texts.heads,
        texts.labels,
        texts.elapsed,
        texts.elapsed_text,
        texts.responses,
        texts.w.markup,
        notes,
        LIMIT,
        indents,
        texts.aliases,
        texts.notes,
        texts.results,
        texts.shown,
    )


class _Texts:
    """Memoized texts of actions without diff marks (the same as the general helpers give)."""

    def __init__(self, w: _Writer) -> None:
        self.w = w
        self.aliases: dict[str, str] = {}
        self.labels: dict[tuple[str, bool], str] = {}
        self.elapsed: dict[float, str] = {}
        self.shown: dict[str, str] = {}  # `elapsed_text` by the milliseconds' 3 digits
        self.notes: dict[str, str] = {}
        self.results: dict[tuple[str, bool], str] = {}
        self.heads: dict[tuple[int, int, int], tuple[str, str, str, str]] = {}
        self.actors: list[tuple[Actor | None, Actor | None]] = []
        # id(return value) -> (it, its result label, response line by its start)
        self.responses: dict[int, tuple[dict[str, Any], str | None, dict[str, str]]] = {}

    def head_lines(
        self, caller: Actor | None, callee: Actor | None, depth: int
    ) -> tuple[str, str, str, str]:
        """A plain function (or HTTP) action's request line up to its label, its activate
        (empty without a callee) and deactivate lines, and its response line up to the result,
        by depth and actors."""
        key = (depth, id(caller), id(callee))
        found = self.heads.get(key)
        if found is None:
            indent = "  " * depth
            alias0 = self.alias(caller.name) if caller else ""
            alias1 = self.alias(callee.name) if callee else ""
            arrow = "->" if caller and callee else ("->]" if caller else "[->")
            back = "<--" if caller and callee else ("<--]" if caller else "[<--")
            found = (
                indent + alias0 + arrow + alias1 + ": ",
                indent + "activate " + alias1 if callee is not None else "",
                indent + "deactivate " + alias1,
                indent + alias0 + back + alias1,
            )
            self.heads[key] = found
            self.actors.append((caller, callee))  # (their ids stay theirs)
        return found

    def response_line(self, line: str, rv: dict[str, Any]) -> str:
        """`line` and the result of a plain function action that returned `rv` (its return
        value, shared by the actions of the same code object and return shape)."""
        found = self.responses.get(id(rv))
        if found is None or found[0] is not rv:
            probe = Action(FUNCTION)
            probe.return_value = rv
            found = self.responses[id(rv)] = (rv, self.response_label(probe), {})
        result, lines = found[1], found[2]
        text = lines.get(line)
        if text is None:
            text = lines[line] = f"{line}: {result}" if result else line
        return text

    def alias(self, name: str) -> str:
        found = self.aliases.get(name)
        if found is None:
            found = self.aliases[name] = alias(name)
        return found

    def request_label(self, action: Action) -> str:
        static = action.node_type == FUNCTION and action.static and self.w.markup
        key = (action.display_name, bool(static))
        text = self.labels.get(key)
        if text is None:
            text = single_line(key[0])[:LIMIT]
            if static:
                text = f"<u>{text}</u>"
            self.labels[key] = text
        elapsed = action.elapsed
        if elapsed:
            shown = self.elapsed.get(elapsed)
            if shown is None:
                shown = self.elapsed_text(elapsed)
            text += shown
        return text

    def elapsed_text(self, elapsed: float) -> str:
        """The text after a label of an action that took `elapsed` seconds (memoized, and
        made once per shown value: `js_number` depends only on the milliseconds' 3 digits)."""
        digits = f"{elapsed * 1000:.3g}"
        shown = self.shown.get(digits)
        if shown is None:
            shown = self.shown[digits] = " " + self.w.elapsed(elapsed)
        self.elapsed[elapsed] = shown
        return shown

    def note(self, name: str) -> str:
        found = self.notes.get(name)
        if found is None:
            found = self.notes[name] = fold(name, 80)
        return found

    def response_label(self, action: Action) -> str | None:
        result = action.result
        if not result:
            return None
        key = (result, action.raises_exception and self.w.markup)
        text = self.results.get(key)
        if text is None:
            text = single_line(result)[:LIMIT]
            if key[1]:
                text = f"<i>{text}</i>"
            self.results[key] = text
        return text


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
