"""A definitional (brute-force) top-k matcher for SimGRAG tests: every node map, every edge choice.

Independent of ``kgrag.methods.simgrag.search``: plain Python over itertools, written straight
from Definitions 1-2 and Eq. 3, with the same tie key and summation order as the library.
"""

from __future__ import annotations

import itertools


def oracle_top_k(kg, n_nodes, edges, node_cands, rel_cands, k, *, injective=True,
                 distinct_subgraphs=False, require_reuse=False):
    """``node_cands[i]`` / ``rel_cands[j]``: dict id -> distance, or None for a wildcard.

    ``injective="prefer"``: best injective, best reusing, then the rest of both by key.
    """
    if injective == "prefer":
        strict = oracle_top_k(kg, n_nodes, edges, node_cands, rel_cands, k, injective=True,
                              distinct_subgraphs=distinct_subgraphs)
        loose = oracle_top_k(kg, n_nodes, edges, node_cands, rel_cands, k, injective=False,
                             distinct_subgraphs=distinct_subgraphs, require_reuse=True)
        return (strict[:1] + loose[:1] + sorted(strict[1:] + loose[1:]))[:k]
    heads, rels, tails = kg.heads.tolist(), kg.rels.tolist(), kg.tails.tolist()
    between: dict[tuple[int, int], list[int]] = {}
    for e, (h, t) in enumerate(zip(heads, tails)):
        between.setdefault((h, t), []).append(e)
        if h != t:
            between.setdefault((t, h), []).append(e)
    node_options = [list(range(kg.num_nodes)) if c is None else sorted(c) for c in node_cands]
    keys = []
    for nodes in itertools.product(*node_options):
        if injective and len(set(nodes)) < n_nodes:
            continue
        per_edge = []
        for j, (u, v) in enumerate(edges):
            opts = [e for e in between.get((nodes[u], nodes[v]), [])
                    if rel_cands[j] is None or rels[e] in rel_cands[j]]
            per_edge.append(opts)
        for chosen in itertools.product(*per_edge):
            if injective and len(set(chosen)) < len(chosen):
                continue
            gsd = 0.0
            parts = [0.0 if c is None else c[nodes[i]] for i, c in enumerate(node_cands)]
            parts += [0.0 if c is None else c[rels[e]] for c, e in zip(rel_cands, chosen)]
            gsd = parts[0]
            for p in parts[1:]:
                gsd += p
            if require_reuse and len(set(nodes)) == n_nodes and len(set(chosen)) == len(chosen):
                continue
            keys.append((gsd, tuple(chosen), tuple(nodes)))
    keys.sort()
    if distinct_subgraphs:
        seen, unique = set(), []
        for key in keys:
            s = tuple(sorted(key[1]))
            if s not in seen:
                seen.add(s)
                unique.append(key)
        keys = unique
    return keys[:k]
