"""Node coordinates and merged edges for drawing a :class:`~kgrag.viz.view.RetrievalView`.

Edges between the same ordered pair of nodes are merged into one arrow whose label lists the
relations (``directed_by / written_by``); when both directions exist, both arrows are bent
(``curved``) so they do not overlap. Coordinates come from networkx: Kamada-Kawai for small
views (deterministic, spreads nodes evenly), a seeded spring layout for large ones; they are
scaled to the unit square.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from kgrag.viz.view import RetrievalView

#: Above this many nodes Kamada-Kawai (quadratic memory, slow) gives way to a spring layout.
KAMADA_KAWAI_MAX_NODES = 80


@dataclass
class DrawnEdge:
    """One arrow ``source -> target`` with its merged label."""

    source: str
    target: str
    label: str
    retrieved: bool
    curved: bool


def merged_edges(view: RetrievalView) -> list[DrawnEdge]:
    """One :class:`DrawnEdge` per ordered node pair, in first-seen order."""
    groups: dict[tuple[str, str], DrawnEdge] = {}
    for edge in view.edges:
        key = (edge.head, edge.tail)
        drawn = groups.get(key)
        if drawn is None:
            groups[key] = DrawnEdge(edge.head, edge.tail, edge.relation, edge.retrieved, False)
            continue
        if edge.relation not in drawn.label.split(" / "):
            drawn.label += f" / {edge.relation}"
        drawn.retrieved = drawn.retrieved or edge.retrieved
    for (a, b), drawn in groups.items():
        drawn.curved = (b, a) in groups and a != b
    return list(groups.values())


def layout(view: RetrievalView, seed: int = 0) -> dict[str, tuple[float, float]]:
    """``{node: (x, y)}`` in [0, 1] x [0, 1]; y grows upwards (matplotlib convention)."""
    import networkx as nx

    names = list(view.nodes)
    if not names:
        return {}
    if len(names) == 1:
        return {names[0]: (0.5, 0.5)}
    g = nx.Graph()
    g.add_nodes_from(names)
    g.add_edges_from((e.head, e.tail) for e in view.edges if e.head != e.tail)
    if len(names) <= KAMADA_KAWAI_MAX_NODES:
        # Kamada-Kawai needs a connected graph to be meaningful: lay out components side by side
        # through a weak link between them (not drawn), so unconnected entities stay in view.
        components = [sorted(c) for c in nx.connected_components(g)]
        work = g.copy()
        for left, right in pairwise(components):
            work.add_edge(left[0], right[0])
        pos = nx.kamada_kawai_layout(work)
    else:
        pos = nx.spring_layout(g, seed=seed)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    span_x = (max(xs) - min(xs)) or 1.0
    span_y = (max(ys) - min(ys)) or 1.0
    return {n: (float((pos[n][0] - min(xs)) / span_x), float((pos[n][1] - min(ys)) / span_y))
            for n in names}
