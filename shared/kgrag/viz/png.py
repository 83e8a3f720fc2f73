"""A PNG of one retrieval, drawn with networkx and matplotlib (Agg backend, no display needed).

Same conventions as the HTML page: question entities orange and larger, retrieved nodes blue
with their rank, connecting nodes grey; retrieved edges solid, connecting edges dashed; edge
labels are the relations. matplotlib is imported lazily, and through its object API (a
``Figure`` with an Agg canvas), so it never touches pyplot's global state or a GUI backend.
"""

from __future__ import annotations

import textwrap
from pathlib import Path as FilePath

from kgrag.context.types import RetrievalResult
from kgrag.viz.html import COLORS
from kgrag.viz.layout import layout, merged_edges
from kgrag.viz.view import ROLE_QUESTION, RetrievalView

#: Fonts tried after DejaVu Sans for names DejaVu cannot draw (CJK, Hangul), when installed.
FALLBACK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK KR", "Source Han Sans",
                  "WenQuanYi Zen Hei", "IPAGothic", "NanumGothic", "Arial Unicode MS")


def font_family() -> list[str]:
    """DejaVu Sans, then the installed :data:`FALLBACK_FONTS` (matplotlib falls back per glyph)."""
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    return ["DejaVu Sans", *(name for name in FALLBACK_FONTS if name in installed)]


def write_png(result: RetrievalResult, view: RetrievalView, path: str | FilePath, *,
              dpi: int = 110) -> FilePath:
    """Draw ``view`` to the PNG file ``path`` and return the path."""
    import networkx as nx
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    n = len(view.nodes)
    width = min(20.0, max(10.0, 0.9 * n ** 0.5 * 3))
    fig = Figure(figsize=(width, width * 0.68))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_axis_off()
    title = textwrap.fill(result.question, 100)
    fig.suptitle(title, fontsize=13, fontweight="bold")
    ax.set_title(f"method: {result.method or 'unknown'}   items: {len(result.items)}   "
                 f"LLM calls: {result.usage.calls}", fontsize=10, color="#555")
    pos = layout(view)
    if not pos:
        lines = ["no entities or edges were retrieved"]
        lines += [textwrap.shorten(c.text, 110) for c in view.chunks[:8]]
        ax.text(0.5, 0.5, "\n".join(lines), ha="center", va="center", fontsize=10,
                transform=ax.transAxes)
    else:
        graph = nx.MultiDiGraph()
        graph.add_nodes_from(view.nodes)
        edges = merged_edges(view)
        for edge in edges:
            graph.add_edge(edge.source, edge.target)
        sizes = [900 if view.nodes[name].role == ROLE_QUESTION else 520 for name in graph]
        nx.draw_networkx_nodes(graph, pos, ax=ax, node_size=sizes,
                               node_color=[COLORS[view.nodes[name].role] for name in graph],
                               edgecolors=["#b35806" if view.nodes[name].role == ROLE_QUESTION
                                           else "#333" for name in graph], linewidths=1.5)
        for edge in edges:
            style = "solid" if edge.retrieved else "dashed"
            color = "#444" if edge.retrieved else "#999"
            rad = 0.2 if edge.curved else 0.0
            nx.draw_networkx_edges(graph, pos, ax=ax, edgelist=[(edge.source, edge.target)],
                                   style=style, edge_color=color, width=1.4, arrows=True,
                                   arrowsize=14, node_size=sizes,
                                   nodelist=list(graph), connectionstyle=f"arc3,rad={rad}")
            nx.draw_networkx_edge_labels(graph, pos, ax=ax,
                                         edge_labels={(edge.source, edge.target, 0): edge.label},
                                         font_size=8, font_color="#444",
                                         connectionstyle=f"arc3,rad={rad}",
                                         bbox={"boxstyle": "round,pad=0.15", "fc": "white",
                                               "ec": "none", "alpha": 0.8})
        labels = {name: name if node.rank is None else f"#{node.rank} {name}"
                  for name, node in view.nodes.items()}
        label_pos = {name: (x, y + 0.06) for name, (x, y) in pos.items()}
        nx.draw_networkx_labels(graph, label_pos, labels=labels, ax=ax, font_size=10,
                                font_weight="bold", font_family=font_family(),
                                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none",
                                      "alpha": 0.85})
        ax.set_xlim(-0.12, 1.12)
        ax.set_ylim(-0.08, 1.12)
    handles = [Line2D([], [], marker="o", linestyle="", markersize=10, color=COLORS[role],
                      markeredgecolor="#333", label=label)
               for role, label in ((ROLE_QUESTION, "question entity"),
                                   ("retrieved", "retrieved (#rank)"),
                                   ("intermediate", "connecting node"))]
    handles += [Line2D([], [], color="#444", label="retrieved edge"),
                Line2D([], [], color="#999", linestyle="dashed", label="connecting path")]
    ax.legend(handles=handles, loc="lower left", fontsize=8, frameon=False, ncol=5,
              bbox_to_anchor=(0.0, -0.06))
    out = FilePath(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi, format="png", bbox_inches="tight")
    return out
