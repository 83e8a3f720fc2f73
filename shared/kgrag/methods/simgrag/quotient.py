"""Quotient patterns: the matches that reuse a graph node or edge, as matches of smaller patterns.

A match reuses a graph node exactly when two pattern nodes ``i < j`` map to the same graph node,
that is when it is a match of the pattern with ``i`` and ``j`` merged into one node (the
*quotient* by that pair; an edge between ``i`` and ``j`` becomes a self-loop). It reuses a graph
edge exactly when two pattern edges map to the same graph edge; both ends of a graph edge are its
endpoints, so the two pattern edges' end pairs map onto the same pair of graph nodes, which
without node reuse means the two pattern edges join the same two pattern nodes (*parallel*
edges) -- then it is a match of the pattern with those two edges merged into one. So the
reusing matches are exactly the union, over node pairs and parallel edge pairs, of the matches
of these quotients (each searched without injectivity, so further coincidences are allowed).

Unlike filtering every match for reuse, a search over a quotient prunes normally: every match
it finds reuses by construction, so the top-k threshold tightens at once. This module is only
the bookkeeping (which node and edge of the quotient each original item becomes);
:func:`kgrag.methods.simgrag.topk.top_k_reusing` merges the candidate sets and runs the
searches. Merging ``j`` into ``i < j`` keeps every other node's relative order, so sorting
matches by their original node tuples and by their quotient tuples agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Quotient:
    """A pattern obtained by merging two nodes or two parallel edges of another one.

    ``node_of[p]`` / ``edge_of[q]``: the quotient node / edge that original node ``p`` / edge
    ``q`` becomes; ``merged`` names what was merged (``("nodes", i, j)`` or ``("edges", i, j)``).
    """

    n_nodes: int
    edges: tuple[tuple[int, int], ...]
    node_of: tuple[int, ...]
    edge_of: tuple[int, ...]
    merged: tuple[str, int, int]

    def node_groups(self) -> list[list[int]]:
        """For each quotient node, the original nodes merged into it (ascending)."""
        return _groups(self.node_of, self.n_nodes)

    def edge_groups(self) -> list[list[int]]:
        """For each quotient edge, the original edges merged into it (ascending)."""
        return _groups(self.edge_of, len(self.edges))

    @property
    def has_self_loop(self) -> bool:
        return any(u == v for u, v in self.edges)


def _groups(of: Sequence[int], size: int) -> list[list[int]]:
    groups: list[list[int]] = [[] for _ in range(size)]
    for original, merged in enumerate(of):
        groups[merged].append(original)
    return groups


def _merge_index(n: int, i: int, j: int) -> tuple[int, ...]:
    """Index map of ``n`` items with item ``j`` merged into ``i < j`` (later items shift down)."""
    return tuple(i if p == j else (p if p < j else p - 1) for p in range(n))


def node_quotients(n_nodes: int, edges: Sequence[tuple[int, int]]) -> list[Quotient]:
    """One quotient per pair of pattern nodes ``i < j``: ``j`` merged into ``i``."""
    out = []
    identity = tuple(range(len(edges)))
    for i in range(n_nodes):
        for j in range(i + 1, n_nodes):
            node_of = _merge_index(n_nodes, i, j)
            merged_edges = tuple((node_of[u], node_of[v]) for u, v in edges)
            out.append(Quotient(n_nodes - 1, merged_edges, node_of, identity, ("nodes", i, j)))
    return out


def edge_quotients(n_nodes: int, edges: Sequence[tuple[int, int]]) -> list[Quotient]:
    """One quotient per pair of parallel pattern edges ``i < j`` (same two end nodes, either
    direction): ``j`` merged into ``i``."""
    out = []
    identity = tuple(range(n_nodes))
    for i in range(len(edges)):
        for j in range(i + 1, len(edges)):
            if frozenset(edges[i]) != frozenset(edges[j]):
                continue
            edge_of = _merge_index(len(edges), i, j)
            kept = tuple(e for q, e in enumerate(edges) if q != j)
            out.append(Quotient(n_nodes, kept, identity, edge_of, ("edges", i, j)))
    return out


def reuse_quotients(n_nodes: int, edges: Sequence[tuple[int, int]]) -> list[Quotient]:
    """Every quotient whose matches together are exactly the pattern's reusing matches."""
    return node_quotients(n_nodes, edges) + edge_quotients(n_nodes, edges)
