"""A standalone HTML page (inline SVG, no scripts, no CDN) showing one retrieval.

The page holds the question, the method and its LLM usage, the drawing of the retrieved graph
(question entities orange, retrieved nodes blue with their rank, connecting nodes grey;
retrieved edges solid, connecting edges dashed; hover a node for its score) and a table of the
ranked items as text, plus any text chunks. Every string from the graph or the question is
HTML-escaped, so names cannot inject markup.
"""

from __future__ import annotations

import html
import math
from pathlib import Path as FilePath
from typing import Any

from kgrag.context.types import RetrievalResult
from kgrag.viz.layout import layout, merged_edges
from kgrag.viz.view import ROLE_QUESTION, ROLE_RETRIEVED, RetrievalView

COLORS = {ROLE_QUESTION: "#f28e2b", ROLE_RETRIEVED: "#4e79a7", "intermediate": "#c7c7c7"}
WIDTH, HEIGHT, MARGIN = 960, 620, 90
NODE_RADIUS = 11

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 1.25em; margin-bottom: 0.2em; }
.meta { color: #555; margin-top: 0; }
svg { border: 1px solid #ddd; background: #fff; max-width: 100%; height: auto; }
svg text { font-size: 12px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg text.edge { font-size: 10.5px; fill: #555; }
.legend span { display: inline-block; margin-right: 1.2em; }
.dot { display: inline-block; width: 11px; height: 11px; border-radius: 50%;
       vertical-align: middle; margin-right: 4px; }
table { border-collapse: collapse; margin-top: 1em; }
td, th { border-bottom: 1px solid #eee; padding: 3px 10px; text-align: left;
         vertical-align: top; font-size: 0.92em; }
pre { white-space: pre-wrap; background: #f7f7f7; padding: 6px; }
"""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _to_svg(x: float, y: float) -> tuple[float, float]:
    return (MARGIN + x * (WIDTH - 2 * MARGIN), HEIGHT - MARGIN - y * (HEIGHT - 2 * MARGIN))


def _radius(view: RetrievalView, name: str) -> int:
    """Question entities are drawn larger."""
    return NODE_RADIUS + (3 if view.nodes[name].role == ROLE_QUESTION else 0)


def _svg(view: RetrievalView) -> str:
    pos = {n: _to_svg(*xy) for n, xy in layout(view).items()}
    arrow = ('<marker id="{id}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
             'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
             'fill="{fill}"/></marker>')
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
              f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="retrieved subgraph">'),
             "<defs>" + arrow.format(id="arrow", fill="#444")
             + arrow.format(id="arrow-dim", fill="#aaa") + "</defs>"]
    if not pos:
        parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">'
                     'no entities or edges were retrieved</text>')
    for edge in merged_edges(view):
        (x1, y1), (x2, y2) = pos[edge.source], pos[edge.target]
        dx, dy = x2 - x1, y2 - y1
        length = math.hypot(dx, dy) or 1.0
        ux, uy = dx / length, dy / length
        # start and end on the circles' rims, so the arrow head is visible
        r1, r2 = _radius(view, edge.source), _radius(view, edge.target) + 2
        sx, sy = x1 + ux * r1, y1 + uy * r1
        ex, ey = x2 - ux * r2, y2 - uy * r2
        bend = 0.18 * length if edge.curved else 0.0
        cx, cy = (sx + ex) / 2 - uy * bend, (sy + ey) / 2 + ux * bend
        color, marker = ("#444", "arrow") if edge.retrieved else ("#aaa", "arrow-dim")
        dash = "" if edge.retrieved else ' stroke-dasharray="5,4"'
        parts.append(f'<path d="M{sx:.1f},{sy:.1f} Q{cx:.1f},{cy:.1f} {ex:.1f},{ey:.1f}" '
                     f'fill="none" stroke="{color}" stroke-width="1.5"{dash} '
                     f'marker-end="url(#{marker})"><title>{_esc(edge.source)} -&gt; '
                     f'{_esc(edge.label)} -&gt; {_esc(edge.target)}</title></path>')
        lx, ly = (sx + 2 * cx + ex) / 4, (sy + 2 * cy + ey) / 4  # the curve's midpoint
        parts.append(f'<text class="edge" x="{lx:.1f}" y="{ly:.1f}" '
                     f'text-anchor="middle">{_esc(edge.label)}</text>')
    for name, node in view.nodes.items():
        x, y = pos[name]
        tip = f"{name} ({node.role}"
        if node.score is not None:
            tip += f", score {node.score:.3f}"
        tip += ")"
        stroke = "#b35806" if node.role == ROLE_QUESTION else "#333"
        radius = _radius(view, name)
        parts.append(f'<g><title>{_esc(tip)}</title><circle cx="{x:.1f}" cy="{y:.1f}" '
                     f'r="{radius}" fill="{COLORS[node.role]}" stroke="{stroke}" '
                     'stroke-width="1.5"/>')
        label = name if node.rank is None else f"#{node.rank} {name}"
        weight = ' font-weight="bold"' if node.role != "intermediate" else ""
        parts.append(f'<text x="{x:.1f}" y="{y - radius - 5:.1f}" text-anchor="middle"'
                     f'{weight}>{_esc(label)}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts)


def _items_table(result: RetrievalResult, shown: int) -> str:
    rows = []
    for rank, item in enumerate(result.items[:shown], start=1):
        score = getattr(item, "score", None)
        score_text = f"{score:.3f}" if isinstance(score, (int, float)) else ""
        text = item.verbalize()
        if len(text) > 400:
            text = text[:400] + " ..."
        rows.append(f"<tr><td>{rank}</td><td>{_esc(type(item).__name__)}</td>"
                    f"<td>{_esc(text)}</td><td>{score_text}</td></tr>")
    more = len(result.items) - shown
    footer = f"<p>... and {more} more item(s) not drawn.</p>" if more > 0 else ""
    if not rows:
        return "<p>No items were retrieved.</p>"
    return ("<table><tr><th>#</th><th>kind</th><th>item</th><th>score</th></tr>"
            + "".join(rows) + "</table>" + footer)


def html_page(result: RetrievalResult, view: RetrievalView) -> str:
    """The full HTML document for ``result`` drawn as ``view``."""
    usage = result.usage
    meta = (f"method: <b>{_esc(result.method or 'unknown')}</b> &middot; "
            f"{len(result.items)} item(s) &middot; LLM calls: {usage.calls}, "
            f"tokens: {usage.total_tokens}")
    asked = ", ".join(view.question_entities) or "(none identified)"
    legend = "".join(f'<span><span class="dot" style="background:{COLORS[role]}"></span>'
                     f"{label}</span>" for role, label in
                     ((ROLE_QUESTION, "question entity"), (ROLE_RETRIEVED, "retrieved (#rank)"),
                      ("intermediate", "connecting node")))
    legend += "<span>solid edge: retrieved &middot; dashed: connecting path</span>"
    chunks = ""
    if view.chunks:
        chunks = "<h2>Text retrieved</h2>" + "".join(
            f"<pre>{_esc(chunk.text[:1500])}</pre>" for chunk in view.chunks)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>kgrag: {_esc(result.question)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{_esc(result.question)}</h1><p class=\"meta\">{meta}</p>"
        f"<p>question entities: <b>{_esc(asked)}</b></p>"
        f"<div class=\"legend\">{legend}</div>{_svg(view)}"
        f"<h2>Ranked items</h2>{_items_table(result, view.items_shown)}{chunks}"
        "</body></html>\n")


def write_html(result: RetrievalResult, view: RetrievalView, path: str | FilePath) -> FilePath:
    """Write :func:`html_page` to ``path`` (UTF-8) and return the path."""
    out = FilePath(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html_page(result, view), encoding="utf-8")
    return out
