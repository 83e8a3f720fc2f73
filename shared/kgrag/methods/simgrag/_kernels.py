"""Compiled loops of SimGRAG's subgraph search (numba; imported only when numba is installed --
without it :mod:`kgrag.methods.simgrag.search` does the same with numpy, term by term, so both
give the same arrays bit for bit).

:func:`reverse_options` is the filter of :meth:`~.search.SubgraphSearch._build_reverse_index`:
of a domain's incident edges, those whose outer end is in the source domain and whose relation
is a candidate, with their option cost -- one pass instead of a dozen numpy passes (membership
gather, relation-cost gather, finiteness, four compressions, two gathers) over the 136,000
edges of a 16,384-node domain at 10M edges.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def reverse_options(own, edges, outer, rel, rel_cost, inside, target_ids, target_costs,
                    new):  # pragma: no cover - compiled; tested against the numpy path
    """``(outer end, edge id, inner node, option cost)`` of the edges ``i`` with
    ``inside[outer[i]]`` (every edge when ``inside`` is empty) and a finite
    ``rel_cost[rel[i]]`` (every edge, at cost 0, when ``rel_cost`` is empty), in edge order;
    ``new``: the inner node's domain cost ``target_costs[own[i]]`` added to the relation's."""
    n = len(own)
    use_rel = len(rel_cost) > 0
    use_source = len(inside) > 0
    out_outer = np.empty(n, np.int64)
    out_edges = np.empty(n, np.int64)
    out_inner = np.empty(n, np.int64)
    out_cost = np.empty(n, np.float64)
    t = 0
    for i in range(n):
        end = outer[i]
        if use_source and not inside[end]:
            continue
        cost = 0.0
        if use_rel:
            cost = rel_cost[rel[i]]
            if not np.isfinite(cost):
                continue
        if new:
            cost = cost + target_costs[own[i]]
        out_outer[t] = end
        out_edges[t] = edges[i]
        out_inner[t] = target_ids[own[i]]
        out_cost[t] = cost
        t += 1
    return out_outer[:t], out_edges[:t], out_inner[:t], out_cost[:t]
