"""Enumerate every template instance that returns something, with result counts (and gold hits).

This is GraphRAFT's candidate set 𝒬 (paper App. A.2): the templates are instantiated against the
*data* around the linked entities, so every candidate is executable and non-empty. On the
in-memory graph the grouping the paper does in one aggregating Cypher query is done with numpy on
integer ids: one pass per linked entity, no per-edge Python objects.

``Candidate.total`` is the number of distinct nodes the query returns (the paper's ``totalCnt``);
``Candidate.hits`` the number of those in a gold answer set (``correctCnt``) when one is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from kgrag.graph.base import IdIndexedGraph
from kgrag.methods.graphraft.patterns import FAMILIES, PathPattern


@dataclass(frozen=True)
class Candidate:
    """A candidate query with how many nodes it returns and how many of them are gold."""

    pattern: PathPattern
    total: int
    hits: int = 0

    @property
    def text(self) -> str:
        return self.pattern.text()


def _undirected_edges(kg: IdIndexedGraph, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                      np.ndarray]:
    """(owner index into ``nodes``, relation id, other end) of every edge touching ``nodes``."""
    e_out, o_out = kg._edges_one_direction(nodes, False, None)
    e_in, o_in = kg._edges_one_direction(nodes, True, None)
    owner = np.concatenate([o_out, o_in])
    rel = np.concatenate([kg.rels[e_out], kg.rels[e_in]]).astype(np.int64)
    other = np.concatenate([kg.tails[e_out], kg.heads[e_in]]).astype(np.int64)
    return owner, rel, other


def _group_counts(keys: np.ndarray, targets: np.ndarray, gold: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct key: number of distinct targets, and of distinct gold targets."""
    if len(keys) == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    pairs = np.unique(np.stack([keys, targets], axis=1), axis=0)
    uniq_keys, first, totals = np.unique(pairs[:, 0], return_index=True, return_counts=True)
    if gold is None or len(gold) == 0:
        return uniq_keys, totals, np.zeros(len(uniq_keys), np.int64)
    is_gold = np.isin(pairs[:, 1], gold)
    hits = np.add.reduceat(is_gold.astype(np.int64), first)
    return uniq_keys, totals, hits


def enumerate_candidates(
    kg: IdIndexedGraph,
    entities: Sequence[str],
    *,
    families: Iterable[str] = FAMILIES,
    gold: Iterable[str] | None = None,
    max_frontier: int = 50_000,
) -> list[Candidate]:
    """All non-empty 1hop / 2hop / 2path candidates around ``entities``, in canonical order.

    ``gold`` (answer names) fills ``Candidate.hits``. ``max_frontier`` bounds the first-hop
    expansion of one entity used for 2hop candidates (a hub with more neighbours is expanded
    only through its first ``max_frontier`` (relation, neighbour) pairs, lowest ids first), so a
    single huge hub cannot exhaust memory. Both orderings of a 2path pair are generated, as the
    paper's query does; they return the same nodes.
    """
    families = tuple(families)
    for fam in families:
        if fam not in FAMILIES:
            raise ValueError(f"unknown template family {fam!r}; choose from {FAMILIES}")
    src_ids: list[int] = []
    for name in entities:  # two spellings of one node (e.g. outer spaces) count once
        if kg.has_node(name) and kg.node_id(name) not in src_ids:
            src_ids.append(kg.node_id(name))
    gold_ids = None if gold is None else kg.node_ids(gold)
    names, rnames, n_rel = kg.node_names, kg.relation_names, max(kg.num_relations, 1)
    out: list[Candidate] = []
    first_hops: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for src in src_ids:
        _, rel, other = _undirected_edges(kg, np.array([src], np.int64))
        first_hops[src] = (rel, other)
        if "1hop" in families:
            keys, totals, hits = _group_counts(rel, other, gold_ids)
            for r, total, hit in zip(keys.tolist(), totals.tolist(), hits.tolist()):
                out.append(Candidate(PathPattern("1hop", names[src], (rnames[r],)), total, hit))
        if "2hop" in families:
            pairs = np.unique(np.stack([rel, other], axis=1), axis=0)[:max_frontier]
            if len(pairs):
                owner, rel2, x3 = _undirected_edges(kg, pairs[:, 1])
                keep = x3 != src
                key = pairs[owner[keep], 0] * n_rel + rel2[keep]
                keys, totals, hits = _group_counts(key, x3[keep], gold_ids)
                for k, total, hit in zip(keys.tolist(), totals.tolist(), hits.tolist()):
                    pattern = PathPattern("2hop", names[src],
                                          (rnames[k // n_rel], rnames[k % n_rel]))
                    out.append(Candidate(pattern, total, hit))
    if "2path" in families:
        for a in src_ids:
            rel_a, x_a = first_hops[a]
            for b in src_ids:
                if a == b:
                    continue
                rel_b, x_b = first_hops[b]
                # join on the middle node: (r1 from a, x) with (r2 from b, x)
                order_b = np.argsort(x_b, kind="stable")
                xb_sorted, rb_sorted = x_b[order_b], rel_b[order_b]
                lo = np.searchsorted(xb_sorted, x_a, side="left")
                hi = np.searchsorted(xb_sorted, x_a, side="right")
                counts = hi - lo
                if counts.sum() == 0:
                    continue
                left = np.repeat(np.arange(len(x_a)), counts)
                right = np.concatenate([np.arange(s, e) for s,
                                        e in zip(lo[counts > 0], hi[counts > 0])])
                key = rel_a[left] * n_rel + rb_sorted[right]
                keys, totals, hits = _group_counts(key, x_a[left], gold_ids)
                for k, total, hit in zip(keys.tolist(), totals.tolist(), hits.tolist()):
                    pattern = PathPattern("2path", names[a],
                                          (rnames[k // n_rel], rnames[k % n_rel]),
                                          target=names[b])
                    out.append(Candidate(pattern, total, hit))
    return canonical_order(out, [names[i] for i in src_ids])


def canonical_order(candidates: Sequence[Candidate], entities: Sequence[str]) -> list[Candidate]:
    """Candidates in one backend-independent order.

    By template family (1hop, 2hop, 2path), then the source's position in ``entities`` (the
    linked names, in linking order), then the 2path target's position, then relation names.
    Every backend returns this order, so a numbered-list prompt or a tie-break never depends on
    where the graph is stored.
    """
    position = {name: i for i, name in enumerate(entities)}
    far = len(position)

    def key(c: Candidate) -> tuple:
        p = c.pattern
        return (FAMILIES.index(p.family), position.get(p.source, far),
                -1 if p.target is None else position.get(p.target, far), p.relations)

    return sorted(candidates, key=key)


def rank_for_training(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Candidates by (most gold hits, fewest results), ties by canonical text: deterministic."""
    return sorted(candidates, key=lambda c: (-c.hits, c.total, c.pattern.text()))


def best_label(candidates: Sequence[Candidate], n_gold: int, *, min_recall: float = 1.0,
               min_precision: float = 0.1) -> Candidate | None:
    """The training label of one question, or ``None`` when the question should be dropped.

    The best-ranked candidate is kept only if its recall (hits / |gold|) reaches ``min_recall``
    and its precision (hits / total) reaches ``min_precision`` (reference-code rule: 1.0 and 0.1;
    a precision of exactly 0.1 is kept).
    """
    if n_gold <= 0 or not candidates:
        return None
    best = rank_for_training(candidates)[0]
    if best.hits / n_gold + 1e-12 < min_recall or best.hits / best.total + 1e-12 < min_precision:
        return None
    return best
