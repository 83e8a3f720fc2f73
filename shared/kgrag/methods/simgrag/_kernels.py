"""Compiled loops of SimGRAG's subgraph search (numba; imported only when numba is installed --
without it :mod:`kgrag.methods.simgrag.search` does the same with numpy, term by term, so both
give the same arrays bit for bit).

:func:`reverse_options` is the filter of :meth:`~.search.SubgraphSearch._build_reverse_index`:
of a domain's incident edges, those whose outer end is in the source domain and whose relation
is a candidate, with their option cost -- one pass instead of a dozen numpy passes (membership
gather, relation-cost gather, finiteness, four compressions, two gathers) over the 136,000
edges of a 16,384-node domain at 10M edges.

:func:`neighbour_bits` / :func:`id_bits` / :func:`bit_ids` / :func:`has_bits` hold a domain's
neighbour set or membership as a bitset (one bit per graph node: 312 KB at 2.5M nodes, in L2)
instead of a boolean array (2.5 MB, zeroed, scattered into and scanned for every derived
domain).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros


@njit(nogil=True, cache=True)
def reverse_options(own, edges, outer, rel, rel_cost, inside, target_ids, target_costs,
                    new):  # pragma: no cover - compiled; tested against the numpy path
    """``(outer end, edge id, inner node, option cost)`` of the edges ``i`` whose outer end is
    in the bitset ``inside`` (:func:`id_bits`; every edge when ``inside`` is empty) and whose
    ``rel_cost[rel[i]]`` is finite (every edge, at cost 0, when ``rel_cost`` is empty), in edge
    order; ``new``: the inner node's domain cost ``target_costs[own[i]]`` added to the
    relation's. The bitset (312 KB at 2.5M nodes) stays in L2 where a boolean mask (2.5 MB)
    did not: 130k edges of a leaf domain 1.5 -> 0.6 ms in a 3-hop star's reuse searches."""
    n = len(own)
    use_rel = len(rel_cost) > 0
    use_source = len(inside) > 0
    one = np.uint64(1)
    out_outer = np.empty(n, np.int64)
    out_edges = np.empty(n, np.int64)
    out_inner = np.empty(n, np.int64)
    out_cost = np.empty(n, np.float64)
    t = 0
    for i in range(n):
        end = outer[i]
        if use_source and (inside[end >> 6] >> np.uint64(end & 63)) & one == 0:
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


@njit(nogil=True, cache=True)
def id_bits(ids, size):  # pragma: no cover - compiled
    """The set of ``ids`` (each in ``0..size-1``) as ``ceil(size / 64)`` uint64 words: the
    :func:`neighbour_bits` of ``ids`` with no relation filter."""
    return neighbour_bits(ids, ids, np.empty(0), size)


@njit(nogil=True, cache=True)
def cheapest_runs(sources, cost):  # pragma: no cover - compiled; tested against numpy
    """``(distinct values, the smallest cost of each, sorted)`` of ``sources``, which should
    ascend (each run of equal values is one source); ``sorted`` False (and the arrays cut
    short) as soon as a value is smaller than the one before."""
    n = len(sources)
    ids = np.empty(n, sources.dtype)
    best = np.empty(n, np.float64)
    t = -1
    for i in range(n):
        if t >= 0 and sources[i] == ids[t]:
            if cost[i] < best[t]:
                best[t] = cost[i]
            continue
        if t >= 0 and sources[i] < ids[t]:
            return ids[:t + 1], best[:t + 1], False
        t += 1
        ids[t] = sources[i]
        best[t] = cost[i]
    return ids[:t + 1], best[:t + 1], True


@njit(nogil=True, cache=True)
def neighbour_bits(other, rel, rel_cost, size):  # pragma: no cover - compiled
    """The set of ``other[i]`` over the edges with a finite ``rel_cost[rel[i]]`` (every edge
    when ``rel_cost`` is empty), as ``ceil(size / 64)`` uint64 words (bit ``v % 64`` of word
    ``v // 64`` for node ``v``)."""
    words = np.zeros((size + 63) >> 6, np.uint64)
    use_rel = len(rel_cost) > 0
    one = np.uint64(1)
    for i in range(len(other)):
        if use_rel and not np.isfinite(rel_cost[rel[i]]):
            continue
        v = other[i]
        words[v >> 6] |= one << np.uint64(v & 63)
    return words


@njit(nogil=True, cache=True)
def bit_ids(words):  # pragma: no cover - compiled
    """The ids whose bits are set, ascending (int64)."""
    count = 0
    for k in range(len(words)):
        w = words[k]
        while w:
            w &= w - np.uint64(1)
            count += 1
    out = np.empty(count, np.int64)
    t = 0
    for k in range(len(words)):
        w = words[k]
        while w:
            out[t] = (k << 6) + np.int64(trailing_zeros(w))
            w &= w - np.uint64(1)
            t += 1
    return out


@njit(nogil=True, cache=True)
def has_bits(words, ids):  # pragma: no cover - compiled
    """Per id: is its bit set (ids past the words: no)?"""
    out = np.empty(len(ids), np.bool_)
    one = np.uint64(1)
    for i in range(len(ids)):
        v = ids[i]
        k = v >> 6
        out[i] = k < len(words) and (words[k] >> np.uint64(v & 63)) & one != 0
    return out
