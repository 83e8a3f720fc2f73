"""Does the neural executor beat a relation's frequency prior? A held-out check per relation.

Where the graph proves nothing, UltRAG's hybrid executor shows the neural executor's guesses.
Whether to trust them depends on the relation: on some relations UltraQuery ranks a missing
tail well, on others it does no better than ranking every entity by how often it is that
relation's tail (:class:`~kgrag.methods.ultrag.hybrid.FrequencyPrior`), which needs no query.

:func:`check_relations` measures it on the graph itself: for each relation (and direction) it
removes up to ``per_relation`` of its edges, asks ``head -> relation`` on the rest, and compares
the filtered reciprocal rank of each removed tail under the neural scores and under the prior
(both computed on the reduced graph; ties count as their expected rank). A relation whose
neural MRR does not exceed the prior's is **flagged**: ``UltRAG.check_relations`` stores the
result and marks neural guesses on a flagged relation in the result metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from kgrag.graph.base import IdIndexedGraph
from kgrag.graph.memory import KnowledgeGraph
from kgrag.methods.ultrag.executor import QueryExecutor, one_hot
from kgrag.methods.ultrag.query import parse_query
from kgrag.methods.ultrag.vocabulary import GraphVocabulary

#: builds the neural executor of one (reduced) graph
NeuralFactory = Callable[[IdIndexedGraph], QueryExecutor]


@dataclass(frozen=True)
class RelationCheck:
    """One relation (and direction): how the neural executor ranks held-out tails against the
    frequency prior (MRR in [0, 1] over ``questions`` held-out edges)."""

    relation: str
    inverse: bool
    questions: int
    neural_mrr: float
    prior_mrr: float

    @property
    def flagged(self) -> bool:
        """The neural executor does not beat the prior: its guesses are not to be trusted."""
        return self.neural_mrr <= self.prior_mrr

    @property
    def token(self) -> str:
        return self.relation + ("_inv" if self.inverse else "")


def expected_reciprocal_rank(scores: np.ndarray, target: int, exclude: np.ndarray) -> float:
    """The filtered reciprocal rank of ``target`` under ``scores``, ties broken at random
    (expectation): entities in ``exclude`` (known answers, the query's anchor) do not count."""
    keep = np.ones(len(scores), bool)
    keep[exclude] = False
    keep[target] = False
    others = scores[keep]
    above = int(np.count_nonzero(others > scores[target]))
    tied = int(np.count_nonzero(others == scores[target]))
    return float(np.mean([1.0 / (above + 1 + j) for j in range(tied + 1)]))


def check_relations(kg: IdIndexedGraph, neural: NeuralFactory, *,
                    relations: Sequence[str] | None = None, per_relation: int = 20,
                    directions: Sequence[bool] = (False, True), seed: int = 0
                    ) -> list[RelationCheck]:
    """:class:`RelationCheck` per relation of ``kg`` (or of ``relations``) and direction.

    ``neural`` builds the neural executor of a graph (e.g. ``lambda g:
    NeuralFuzzyExecutor(g)``); it runs once per relation, on ``kg`` without that relation's
    held-out edges, with every held-out query in one batch. Relations with fewer than two
    edges are skipped (nothing would be left to learn the prior from).
    """
    rng = np.random.default_rng(seed)
    vocabulary = GraphVocabulary(kg.relation_names, [])
    names = kg.relation_names if relations is None else list(relations)
    out = []
    for name in names:
        rel = kg.relation_index[name]
        edges = np.flatnonzero(kg.rels == rel)
        if len(edges) < 2:
            continue
        held = rng.choice(edges, size=min(per_relation, len(edges) - 1), replace=False)
        keep = np.ones(kg.num_edges, bool)
        keep[held] = False
        reduced = KnowledgeGraph.from_arrays(kg.heads[keep], kg.rels[keep], kg.tails[keep],
                                             kg.node_names, kg.relation_names)
        executor = neural(reduced)
        kept = np.flatnonzero(keep & (kg.rels == rel))
        for inverse in directions:
            sources = kg.tails if inverse else kg.heads
            targets = kg.heads if inverse else kg.tails
            prior = np.bincount(targets[kept], minlength=kg.num_nodes).astype(np.float64)
            token = vocabulary.relation_id(rel) + ("_inv" if inverse else "")
            query = parse_query(f"Q0 -> {token}")  # the leaf is given as a set
            queries = [query] * len(held)
            leaf_sets = [[one_hot([int(sources[e])], kg.num_nodes)] for e in held]
            if hasattr(executor, "execute_many"):
                results = executor.execute_many(queries, leaf_sets)
            else:
                results = [executor.execute(q, s) for q, s in zip(queries, leaf_sets)]
            neural_rr, prior_rr = [], []
            for e, scores in zip(held, results):
                source = int(sources[e])
                known = targets[kept][sources[kept] == source]
                exclude = np.append(known, source).astype(np.int64)
                target = int(targets[e])
                neural_rr.append(expected_reciprocal_rank(np.asarray(scores), target, exclude))
                prior_rr.append(expected_reciprocal_rank(prior, target, exclude))
            out.append(RelationCheck(name, bool(inverse), len(held),
                                     float(np.mean(neural_rr)), float(np.mean(prior_rr))))
    return out
