"""PNG of a sequence diagram, drawn with Pillow: no browser, no network, no external program.

Contract:

- `render_png(diagram, path)` paints the `tracetool.diagram.layout` primitives and writes the
  image atomically; it returns every file written. A diagram taller than `MAX_PAGE` pixels is
  cut at row boundaries into pages — `name.png`, `name-2.png`, … — each with the actor names
  on top and bottom, so thousands of actions stay readable and memory stays bounded (one page
  of pixels at a time). Pages are palette images (a dozen colours), which keeps encoding fast.
- Needs Pillow (a base dependency of the tool); without it it raises
  `ConfigError` naming the package. Text uses Pillow's built-in scalable font, so no system font
  is needed.
"""

from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path
from typing import Any

from tracetool.diagram.layout import (
    ACTOR_FILL,
    ACTOR_LINE,
    FONT,
    LIFELINE,
    ROW,
    Layout,
    Line,
    Measure,
    Rect,
    Text,
    layout,
)
from tracetool.diagram.model import Diagram
from tracetool.errors import ConfigError

MAX_PAGE = 16000
ACTOR_BOX = 28


def _pil() -> Any:
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        raise ConfigError(
            "PNG output needs the Python package pillow in tracetool's environment "
            "(pip install pillow there, or reinstall tracetool); or use -f plantuml / json"
        ) from None
    return Image, ImageDraw, ImageFont


@lru_cache(maxsize=8)
def _font(size: int) -> Any:
    _, _, image_font = _pil()
    return image_font.load_default(size=size)


def font_measure() -> Measure:
    """Text width in pixels with the font PNGs are drawn with."""
    _pil()
    cache: dict[tuple[str, int], float] = {}

    def measure(text: str, size: int) -> float:
        key = (text, size)
        found = cache.get(key)
        if found is None:
            found = float(_font(size).getlength(text, mode="1"))  # as drawn on palette pages
            cache[key] = found
        return found

    return measure


def render_png(diagram: Diagram, path: Path | str) -> list[Path]:
    """Write the diagram as one or more PNG pages (module doc); returns the files written."""
    from tracetool.diagram.service import write_view

    lay = layout(diagram, font_measure())
    target = Path(path)
    pages = _pages(lay)
    written: list[Path] = []
    for number, (top, bottom) in enumerate(pages, start=1):
        out = target if number == 1 else target.with_name(f"{_stem(target)}-{number}.png")
        write_view(out, (_page_png(lay, top, bottom, number, len(pages)),))
        written.append(out)
    return written


def _stem(path: Path) -> str:
    return path.name[: -len(".png")] if path.name.endswith(".png") else path.name


def _pages(lay: Layout) -> list[tuple[int, int]]:
    if lay.height <= MAX_PAGE:
        return [(0, lay.height)]
    rows = MAX_PAGE // ROW * ROW
    return [(top, min(top + rows, lay.height)) for top in range(0, lay.height, rows)]


def _page_png(lay: Layout, top: int, bottom: int, number: int, total: int) -> bytes:
    image_mod, draw_mod, _ = _pil()
    header = lay.header
    height = bottom - top + header * 2
    # A palette image: a third of RGB's bytes and no per-row filter search, so it encodes about
    # five times faster; the dozen colours we draw fit easily (text is then not antialiased).
    img = image_mod.new("P", (lay.width, height), "white")
    draw = draw_mod.Draw(img)
    offset = header - top
    for _, x in lay.columns:
        _dashed(draw, x, header - 6, x, height - header + 6, LIFELINE, 4)
    for p in lay.primitives:
        if isinstance(p, Text):
            if p.y + p.size < top or p.y > bottom:
                continue
        elif isinstance(p, Rect):
            if p.y + p.h < top or p.y > bottom:
                continue
        elif max(p.y1, p.y2) < top - 2 or min(p.y1, p.y2) > bottom + 2:
            continue
        _paint(draw, p, offset)
    font = _font(FONT)
    for y in (6, height - header + 10):
        for actor, x in lay.columns:
            w = max(font.getlength(actor.name, mode="1") + 20, 70)
            draw.rounded_rectangle(
                (x - w / 2, y, x + w / 2, y + ACTOR_BOX), 4, fill=ACTOR_FILL, outline=ACTOR_LINE
            )
            draw.text((x, y + ACTOR_BOX / 2), actor.name, fill="#102040", font=font, anchor="mm")
    if total > 1:
        draw.text((6, 6), f"page {number}/{total}", fill="#8a8a8a", font=_font(10))
    buffer = io.BytesIO()
    img.save(buffer, "PNG", compress_level=1)  # mostly white: fast and still small
    return buffer.getvalue()


def _paint(draw: Any, p: Line | Rect | Text, dy: float) -> None:
    if isinstance(p, Text):
        font = _font(p.size)
        x, y = p.x, p.y + dy
        draw.text((x, y), p.text, fill=p.color, font=font)
        if p.underline or p.strike:
            w = font.getlength(p.text, mode="1")
            ly = y + p.size + 1 if p.underline else y + p.size * 0.6
            draw.line((x, ly, x + w, ly), fill=p.color, width=1)
        return
    if isinstance(p, Rect):
        draw.rectangle((p.x, p.y + dy, p.x + p.w, p.y + dy + p.h), outline=p.outline, fill=p.fill)
        return
    x1, y1, x2, y2 = p.x1, p.y1 + dy, p.x2, p.y2 + dy
    if p.dashed:
        _dashed(draw, x1, y1, x2, y2, p.color, 5)
    else:
        draw.line((x1, y1, x2, y2), fill=p.color, width=p.width)
    if p.arrow:
        direction = 1 if x2 >= x1 else -1
        if y1 == y2:
            draw.polygon(
                [(x2, y2), (x2 - 8 * direction, y2 - 4), (x2 - 8 * direction, y2 + 4)],
                fill=p.color,
            )


def _dashed(draw: Any, x1: float, y1: float, x2: float, y2: float, color: str, dash: int) -> None:
    if x1 == x2:
        lo, hi = sorted((y1, y2))
        y = lo
        while y < hi:
            draw.line((x1, y, x1, min(y + dash, hi)), fill=color)
            y += dash * 2
        return
    lo, hi = sorted((x1, x2))
    x = lo
    while x < hi:
        draw.line((x, y1, min(x + dash, hi), y2), fill=color)
        x += dash * 2


__all__ = ["MAX_PAGE", "font_measure", "render_png"]
