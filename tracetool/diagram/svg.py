"""SVG and HTML views of a sequence diagram (for `--show-browser`), no scripts, no network.

Contract: `render_svg(diagram)` paints `tracetool.diagram.layout` primitives into one SVG
document (actor boxes at the top and bottom, lifelines, rows); `render_html(diagram, title)`
wraps it in a self-contained HTML page with sticky actor names. Text is escaped; nothing is
fetched when the page opens.

With `interactive=True` (the editors' recording viewer) the SVG is the same picture with hooks
for a page script, and still no script of its own: a call's label is
`<text class="call" data-event="ID">` (its first event id), a loop's tag
`<text class="loop" data-event="ID">`, an actor's box `<g class="actor" data-actor="ACTOR ID">`.
"""

from __future__ import annotations

from html import escape

from tracetool.diagram.layout import (
    ACTOR_FILL,
    ACTOR_LINE,
    FONT,
    LIFELINE,
    Layout,
    Line,
    Measure,
    Rect,
    Text,
    layout,
)
from tracetool.diagram.model import Diagram

FONT_FAMILY = "DejaVu Sans, Verdana, Arial, sans-serif"


def approximate_measure(text: str, size: int) -> float:
    """Text width without a font at hand (average glyph of a sans-serif face)."""
    return len(text) * size * 0.58


def _measure() -> Measure:
    try:
        from tracetool.diagram.png import font_measure

        return font_measure()
    except ImportError:
        return approximate_measure


def render_svg(
    diagram: Diagram, measure: Measure | None = None, *, interactive: bool = False
) -> str:
    lay = layout(diagram, measure or _measure())
    return paint_svg(lay, interactive=interactive)


def paint_svg(lay: Layout, *, interactive: bool = False) -> str:
    height = lay.header * 2 + lay.height
    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{lay.width}" height="{height}" '
        f'viewBox="0 0 {lay.width} {height}" font-family="{FONT_FAMILY}" font-size="{FONT}">',
        "<defs><marker id='a' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='8' "
        "markerHeight='8' orient='auto-start-reverse'><path d='M0,0L10,5L0,10z' "
        "fill='context-stroke'/></marker></defs>",
        f'<rect width="{lay.width}" height="{height}" fill="#ffffff"/>',
    ]
    body_top = lay.header
    for _, x in lay.columns:
        out.append(
            f'<line x1="{x:.1f}" y1="{body_top - 6}" x2="{x:.1f}" y2="{body_top + lay.height}" '
            f'stroke="{LIFELINE}" stroke-dasharray="4 4"/>'
        )
    out.append(f'<g transform="translate(0,{body_top})">')
    for p in lay.primitives:
        out.append(_svg(p, interactive))
    out.append("</g>")
    for y in (6, body_top + lay.height + 6):
        for actor, x in lay.columns:
            w = max(len(actor.name) * FONT * 0.62 + 20, 70)
            if interactive:
                out.append(f'<g class="actor" data-actor="{escape(actor.id)}">')
            out.append(
                f'<rect x="{x - w / 2:.1f}" y="{y}" width="{w:.1f}" height="28" rx="4" '
                f'fill="{ACTOR_FILL}" stroke="{ACTOR_LINE}"/>'
                f'<text x="{x:.1f}" y="{y + 18}" text-anchor="middle" font-weight="bold">'
                f"{escape(actor.name)}</text>"
            )
            if interactive:
                out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def _svg(p: Line | Rect | Text, interactive: bool = False) -> str:
    if isinstance(p, Line):
        extra = ' stroke-dasharray="5 4"' if p.dashed else ""
        if p.arrow:
            extra += ' marker-end="url(#a)"'
        return (
            f'<line x1="{p.x1:.1f}" y1="{p.y1:.1f}" x2="{p.x2:.1f}" y2="{p.y2:.1f}" '
            f'stroke="{p.color}" stroke-width="{p.width}"{extra}/>'
        )
    if isinstance(p, Rect):
        fill = p.fill or "none"
        return (
            f'<rect x="{p.x:.1f}" y="{p.y:.1f}" width="{p.w:.1f}" height="{p.h:.1f}" '
            f'fill="{fill}" stroke="{p.outline}"/>'
        )
    deco = []
    if p.underline:
        deco.append("underline")
    if p.strike:
        deco.append("line-through")
    style = f' text-decoration="{" ".join(deco)}"' if deco else ""
    if interactive and p.ref is not None:
        style += f' class="{"loop" if p.loop else "call"}" data-event="{p.ref}"'
    return (
        f'<text x="{p.x:.1f}" y="{p.y + p.size:.1f}" font-size="{p.size}" fill="{p.color}"'
        f"{style}>{escape(p.text)}</text>"
    )


def render_html(diagram: Diagram, title: str) -> str:
    svg = render_svg(diagram)
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title>"
        "<style>body{margin:0;font-family:sans-serif;background:#fafbfc}"
        "header{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;"
        "padding:6px 12px;font-size:14px}main{padding:8px}</style></head><body>"
        f"<header>{escape(title)} — {len(diagram)} actions, "
        f"{len(diagram.actors)} actors</header><main>{svg}</main></body></html>\n"
    )


__all__ = ["approximate_measure", "paint_svg", "render_html", "render_svg"]
