"""UltRAG's default executor: exact where the graph knows, neural where it does not.

The symbolic executor is exact on the facts the graph holds; the neural one (UltraQuery) also
ranks answers whose edges are missing, but on a complete graph it is a soft ranker that can put a
wrong entity above a proved one, at 20-300x the latency. :class:`HybridGraphExecutor` (in
:mod:`~kgrag.methods.ultrag.graph_executors`, with the other graph executors) runs the
exact executor first and the neural one only where the graph does not know:

* a projection of the query has no exact answer (the ``gaps`` of the exact execution: a missing
  fact, or a relation the graph does not hold for these entities), or
* the exact answers are fewer than ``min_exact_answers`` (1 by default: the neural executor runs
  only when the graph proves nothing or misses a projection; ``top_k`` fills every ranking).

Otherwise the neural executor is skipped (the cost is the exact executor's). The combined score
is **exact first**: an answer the graph proves scores ``0.5 + 0.5 * exact membership`` (in
(0.5, 1]), a neural guess ``0.5 * neural score`` (in [0, 0.5]), so every proved answer ranks above
every guess and the order inside each tier is its executor's. The raw memberships stay in
``Execution.exact_scores`` / ``neural_scores`` and reach each returned entity's metadata
(``source``, ``confidence``, ``prior``; :func:`annotate`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgrag.context.types import ScoredEntity
from kgrag.graph.base import IdIndexedGraph
from kgrag.methods.ultrag.executor import FUZZY_DTYPE
from kgrag.methods.ultrag.graph_executors import EXACT_TIER as EXACT_TIER
from kgrag.methods.ultrag.graph_executors import Execution
from kgrag.methods.ultrag.graph_executors import HybridGraphExecutor as HybridGraphExecutor
from kgrag.methods.ultrag.graph_executors import exact_first as exact_first
from kgrag.methods.ultrag.query import (
    Entity,
    Intersection,
    Negation,
    Projection,
    Query,
    Union_,
)
from kgrag.methods.ultrag.vocabulary import GraphVocabulary


# ------------------------------------------------------------------------ the frequency prior
class FrequencyPrior:
    """A relation's most-frequent-tail prior: ``p(v | r)`` = the share of ``r``'s edges that end
    at ``v`` (start at ``v`` for ``r_inv``). The baseline a neural guess must beat: ranking
    every entity by it needs no query at all. Built per relation on first use."""

    def __init__(self, kg: IdIndexedGraph, vocabulary: GraphVocabulary) -> None:
        self.kg = kg
        self.vocabulary = vocabulary
        self._cache: dict[tuple[int, bool], np.ndarray] = {}

    def of_relation(self, relation: int, inverse: bool) -> np.ndarray:
        key = (relation, inverse)
        if key not in self._cache:
            mask = self.kg.rels == relation
            ends = (self.kg.heads if inverse else self.kg.tails)[mask]
            counts = np.bincount(ends, minlength=self.kg.num_nodes).astype(np.float64)
            total = counts.sum()
            self._cache[key] = (counts / total if total else counts).astype(FUZZY_DTYPE)
        return self._cache[key]

    def of_query(self, query: Query) -> np.ndarray | None:
        """The prior of the query's answers: its last projection's relation; ``AND`` the
        minimum, ``OR`` the maximum of its operands'; ``None`` for ``NOT`` or a bare leaf."""
        if isinstance(query, Projection):
            rel, inverse = self.vocabulary.resolve_relation(query.relation)
            return self.of_relation(rel, inverse)
        if isinstance(query, (Intersection, Union_)):
            parts = [self.of_query(q) for q in query.operands]
            known = [p for p in parts if p is not None]
            if len(known) < len(parts):
                return None
            combine = np.minimum if isinstance(query, Intersection) else np.maximum
            out = known[0]
            for p in known[1:]:
                out = combine(out, p)
            return out
        if isinstance(query, (Negation, Entity)):
            return None
        return None  # pragma: no cover


def last_projections(query: Query) -> list[Projection]:
    """The projections whose results make the answer set: the root's, through AND / OR."""
    if isinstance(query, Projection):
        return [query]
    if isinstance(query, (Intersection, Union_)):
        return [p for q in query.operands for p in last_projections(q)]
    return []


def annotate(items: Sequence[ScoredEntity], execution: Execution, kind: str,
             positions: Sequence[int], prior: np.ndarray | None) -> list[ScoredEntity]:
    """``items`` with ``source`` ("exact" / "neural"), ``confidence`` (in [0, 1]: the proved
    membership of an exact answer, the neural score of a guess) and ``prior`` (the frequency
    prior of the entity, when known) in their metadata. ``positions``: each item's index in
    the execution's score arrays."""
    out = []
    for item, pos in zip(items, positions):
        meta = dict(item.metadata)
        if kind == "hybrid" and execution.exact_scores is not None:
            proved = float(execution.exact_scores[pos])
            if proved > 0:
                meta["source"], meta["confidence"] = "exact", proved
            else:
                neural = execution.neural_scores
                meta["source"] = "neural"
                meta["confidence"] = 0.0 if neural is None else float(neural[pos])
        elif kind in ("symbolic", "neural"):
            meta["source"] = "exact" if kind == "symbolic" else "neural"
            meta["confidence"] = float(item.score)
        if "confidence" in meta:
            meta["confidence"] = min(1.0, max(0.0, meta["confidence"]))
        if prior is not None:
            meta["prior"] = float(prior[pos])
        out.append(ScoredEntity(item.name, item.score, item.source, metadata=meta))
    return out
