"""Geometry of a drawn sequence diagram: actors, rows, arrows, loops — as drawing primitives.

Contract:

- `layout(diagram, measure)` returns a `Layout`: actor columns (`columns`: name and x), the body
  height, and primitives in body coordinates (y = 0 is the first row under the actor boxes):
  `Line`, `Rect` and `Text`. Renderers (`svg`, `png`) only paint primitives, so both show the
  same picture. `measure(text, size)` is the renderer's text width in pixels.
- One row per request (arrow from caller to callee, or from the left edge for entry calls; a
  self-call loops to the right), one per response (dashed, back to the caller) and two per loop
  (its tab and its end). Activation bars run from a call's request to its response; loops are
  framed across the columns their actions touch. Labels are cut to 50 characters as in PlantUML;
  static functions are underlined, elapsed times follow in gray, exceptions and HTTP errors are
  red; diff actions are green (added), red and struck through (removed) or amber (changed).
- A call's label and a loop's tag carry `ref` (the action's first event id) and `loop`, so an
  interactive renderer can link them to the call (source line) and to the loop toggle.
- Work is linear in the number of actions; nothing recurses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tracetool.diagram.model import (
    CHANGE,
    CLIENT_RPC,
    DELETE,
    FUNCTION,
    INSERT,
    LOOP,
    SERVER_RPC,
    Action,
    Actor,
    Diagram,
)
from tracetool.diagram.plantuml import elapsed_ms

ROW = 22
FONT = 12
SMALL = 10
HEADER = 44
LEFT = 48
LABEL_LIMIT = 50
MIN_GAP = 150
MAX_GAP = 300
SELF_LOOP = 28

INK = "#222222"
MUTED = "#8a8a8a"
LIFELINE = "#b9c2cf"
ACTOR_FILL = "#e6edf7"
ACTOR_LINE = "#4a6fa5"
ACTIVATION = "#f3f6fa"
LOOP_LINE = "#c07a14"
LOOP_FILL = "#fff4e0"
ERROR = "#c62828"
DIFF_COLORS = {INSERT: "#2e7d32", DELETE: "#c62828", CHANGE: "#b7862a"}


@dataclass
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    color: str = INK
    dashed: bool = False
    arrow: bool = False  # arrow head at (x2, y2)
    width: int = 1


@dataclass
class Rect:
    x: float
    y: float
    w: float
    h: float
    outline: str = INK
    fill: str | None = None


@dataclass
class Text:
    x: float
    y: float  # baseline-ish: top of the text box
    text: str
    color: str = INK
    size: int = FONT
    underline: bool = False
    strike: bool = False
    ref: int | None = None  # the action's first event id (calls) — interactive SVG links it
    loop: bool = False  # a loop's tag (interactive SVG lets it collapse / expand loops)


@dataclass
class Layout:
    width: int
    height: int  # body height (rows), without the actor header
    columns: list[tuple[Actor, float]]
    primitives: list[Line | Rect | Text] = field(default_factory=list)
    header: int = HEADER


Measure = Callable[[str, int], float]


def _label(action: Action) -> str:
    name = action.display_name.replace("\n", " ")
    if len(name) > LABEL_LIMIT:
        name = name[: LABEL_LIMIT - 1] + "…"
    return name


def layout(diagram: Diagram, measure: Measure) -> Layout:
    actors = diagram.actors or []
    gap = _column_gap(diagram, measure)
    first = LEFT + max(60.0, measure(actors[0].name, FONT) / 2 + 12 if actors else 0.0)
    xs: dict[str, float] = {}
    columns: list[tuple[Actor, float]] = []
    for i, actor in enumerate(actors):
        x = first + i * gap
        xs[actor.id] = x
        columns.append((actor, x))
    widest_self = max([0.0, *(measure(_label(a), FONT) for a, _ in diagram.walk() if _is_self(a))])
    width = int((columns[-1][1] if columns else first) + max(gap / 2, widest_self + 60) + 20)
    painter = _Painter(xs, measure)
    painter.run(diagram.root_actions)
    return Layout(width, painter.y + ROW // 2, columns, painter.back + painter.prims)


def _is_self(a: Action) -> bool:
    caller, callee = a.actors()
    return caller is not None and callee is not None and caller.id == callee.id


def _column_gap(diagram: Diagram, measure: Measure) -> float:
    index = {a.id: i for i, a in enumerate(diagram.actors)}
    need = max([0.0, *(measure(a.name, FONT) + 40 for a in diagram.actors)])
    for action, _ in diagram.walk():
        caller, callee = action.actors()
        if caller is None or callee is None or caller.id == callee.id:
            continue
        span = abs(index.get(caller.id, 0) - index.get(callee.id, 0)) or 1
        text = _label(action)
        if action.elapsed:
            text += "  " + elapsed_ms(action.elapsed)
        need = max(need, (measure(text, FONT) + 30) / span)
    return min(MAX_GAP, max(MIN_GAP, need))


class _Painter:
    def __init__(self, xs: dict[str, float], measure: Measure) -> None:
        self.xs = xs
        self.measure = measure
        self.prims: list[Line | Rect | Text] = []
        self.back: list[Line | Rect | Text] = []  # painted first: activation bars, loop frames
        self.y = ROW // 2
        self.active: dict[str, int] = {}  # actor id -> open activations

    def x_of(self, actor: Actor | None) -> float | None:
        return None if actor is None else self.xs.get(actor.id)

    def run(self, roots: list[Action]) -> None:
        # phase 0 = enter, 1 = leave; frames carry what the leave step needs
        stack: list[tuple[Action, int, int, tuple[float, float, float] | None]] = [
            (a, 0, 0, None) for a in reversed(roots)
        ]
        while stack:
            action, phase, depth, frame = stack.pop()
            if action.node_type == LOOP:
                if phase == 0:
                    top = self.y
                    self.y += ROW + 8  # the tag row, clear of the first label
                    stack.append((action, 1, depth, (top, 0, 0)))
                    for child in reversed(action.children):
                        stack.append((child, 0, depth + 1, None))
                else:
                    assert frame is not None
                    self._loop_frame(action, frame[0], depth)
                continue
            if phase == 0:
                bar_x = self._request(action)
                stack.append((action, 1, depth, (self.y - ROW, bar_x or 0, 0)))
                for child in reversed(action.children):
                    stack.append((child, 0, depth + 1, None))
            else:
                assert frame is not None
                self._response(action, frame[0], frame[1])

    # -- requests and responses

    def _color(self, action: Action, default: str = INK) -> str:
        return DIFF_COLORS.get(action.diff_mode or 0, default)

    def _request(self, action: Action) -> float | None:
        caller, callee = action.actors()
        x1, x2 = self.x_of(caller), self.x_of(callee)
        y = self.y
        color = self._color(action)
        label = _label(action)
        static = action.node_type == FUNCTION and action.static
        strike = action.diff_mode == DELETE
        timing = elapsed_ms(action.elapsed) if action.elapsed else None
        ref = action.event_ids[0] if action.event_ids else None
        bar_x = None
        if x2 is not None and _has_response(action):
            level = self.active.get(callee.id, 0) if callee else 0
            bar_x = x2 - 4 + 5 * level
            if callee:
                self.active[callee.id] = level + 1
        if x2 is None:
            x2 = x1 if x1 is not None else LEFT
        if x1 is not None and x1 == x2:
            # self call: out to the right and back down
            right = x2 + SELF_LOOP
            self.prims.append(Line(x2, y, right, y, color))
            self.prims.append(Line(right, y, right, y + 8, color))
            self.prims.append(Line(right, y + 8, x2 + 5, y + 8, color, arrow=True))
            self._label_at(right + 6, y - FONT + 2, label, timing, color, static, strike, ref)
            self.y += ROW
            return bar_x
        start = x1 if x1 is not None else 4.0
        end = x2 - 5 if start < x2 else x2 + 5
        self.prims.append(Line(start, y + 6, end, y + 6, color, arrow=True))
        left = min(start, x2)
        self._label_at(left + 10, y + 6 - FONT - 4, label, timing, color, static, strike, ref)
        if action.former_name and action.diff_mode == CHANGE and action.former_name != label:
            self.prims.append(
                Text(left + 10, y + 8, f"before: {action.former_name[:40]}", MUTED, SMALL)
            )
        self.y += ROW
        return bar_x

    def _label_at(
        self,
        x: float,
        y: float,
        label: str,
        timing: str | None,
        color: str,
        underline: bool,
        strike: bool,
        ref: int | None = None,
    ) -> None:
        self.prims.append(
            Text(x, y, label, color, FONT, underline=underline, strike=strike, ref=ref)
        )
        if timing:
            w = self.measure(label, FONT)
            self.prims.append(Text(x + w + 8, y + 1, timing, MUTED, SMALL))

    def _response(self, action: Action, top: float, bar_x: float) -> None:
        caller, callee = action.actors()
        has_response = _has_response(action)
        x2 = self.x_of(callee)
        if has_response and x2 is not None and callee is not None:
            level = self.active.get(callee.id, 1) - 1
            self.active[callee.id] = max(level, 0)
            y = self.y
            self.back.append(Rect(bar_x, top + 6, 8, max(y - top, 8), ACTOR_LINE, ACTIVATION))
            x1 = self.x_of(caller)
            result = action.result or ""
            color = ERROR if action.raises_exception else MUTED
            color = self._color(action, color)
            if x1 is not None and x1 == x2:
                self.prims.append(Line(x2 + 4, y + 6, x2 + SELF_LOOP, y + 6, color, dashed=True))
                self.prims.append(Text(x2 + SELF_LOOP + 6, y - 2, result, color, SMALL))
                self.y += ROW
                return
            start = x1 if x1 is not None else 4.0
            self.prims.append(Line(x2 - 4, y + 6, start, y + 6, color, dashed=True, arrow=True))
            if action.former_result and action.diff_mode == CHANGE:
                result = f"{result}  (before: {action.former_result})"
            self.prims.append(Text(min(start, x2) + 10, y + 6 - SMALL - 5, result, color, SMALL))
            self.y += ROW

    def _loop_frame(self, action: Action, top: float, depth: int) -> None:
        xs = [
            x
            for a, _ in action.walk()
            for actor in a.actors()
            if (x := self.x_of(actor)) is not None
        ] or [LEFT]
        left = min(xs) - 60 + 4 * depth
        right = max(xs) + 60 - 4 * depth
        bottom = self.y
        self.y += ROW // 2
        color = self._color(action, LOOP_LINE)
        self.back.append(Rect(left, top + 2, right - left, bottom - top, color, None))
        tag = f"loop {action.count}x" if action.count else "loop"
        if action.elapsed:
            tag += f"  {elapsed_ms(action.elapsed)}"
        w = self.measure(tag, SMALL) + 12
        self.prims.append(Rect(left, top + 2, w, 16, color, LOOP_FILL))
        first = next((a.event_ids[0] for a, _ in action.walk() if a.event_ids), None)
        self.prims.append(Text(left + 6, top + 4, tag, color, SMALL, ref=first, loop=True))


def _has_response(action: Action) -> bool:
    if action.node_type == FUNCTION:
        return action.return_value is not None
    return action.node_type in (SERVER_RPC, CLIENT_RPC)
