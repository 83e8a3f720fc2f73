"""Entity linking of query leaves into fuzzy sets (the paper's Eq. 1-2).

When no seed entities are given, the LLM writes a mention for each leaf. Each mention ``l``
becomes a fuzzy set over its ``k`` nearest entities ``v_j`` by embedding distance::

    d_j = || enc(l) - enc(v_j) ||_2                                       (Eq. 1)
    p_j = exp(-d_j^2 / (2 sigma^2)) / sum_k exp(-d_k^2 / (2 sigma^2))       (Eq. 2)

with ``sigma = 0.1`` in the paper (E5-large embeddings). ``sigma`` only means something for
unit-norm embeddings, which kgrag's embedders return; then ``d^2 = 2 - 2 cos``. Smaller ``sigma``
makes the set sharper (an exact match takes almost all the mass); larger spreads it.

Search uses :class:`kgrag.linking.EntityLinker` in ``"dense"`` mode (FAISS); its exact-name and
alias hits come first with cosine 1 (distance 0), which Eq. 2 then favours. The paper does not
state ``k``; we use ``k = 10`` by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kgrag.context.types import ScoredEntity
from kgrag.graph.base import GraphStore, IdIndexedGraph

PAPER_SIGMA = 0.1
DEFAULT_LINK_K = 10


def eq2_probabilities(cosines: Sequence[float] | np.ndarray, sigma: float = PAPER_SIGMA
                      ) -> np.ndarray:
    """Eq. 2 over unit-vector cosine similarities: a softmax of ``-(2 - 2 cos) / (2 sigma^2)``.

    Returns probabilities summing to 1 (float64); an empty input gives an empty output.

    >>> eq2_probabilities([1.0, 0.9], sigma=0.1).round(4).tolist()
    [1.0, 0.0]
    """
    if sigma <= 0:
        raise ValueError("sigma must be positive")
    cos = np.clip(np.asarray(cosines, dtype=np.float64), -1.0, 1.0)
    if cos.size == 0:
        return cos
    squared_distance = 2.0 - 2.0 * cos
    logits = -squared_distance / (2.0 * sigma * sigma)
    logits -= logits.max()  # numerically stable softmax
    weights = np.exp(logits)
    return weights / weights.sum()


def distance_probabilities(distances: Sequence[float] | np.ndarray, sigma: float = PAPER_SIGMA
                           ) -> np.ndarray:
    """Eq. 2 from Euclidean distances ``d_j`` directly (any embedding, normalised or not)."""
    if sigma <= 0:
        raise ValueError("sigma must be positive")
    d = np.asarray(distances, dtype=np.float64)
    if d.size == 0:
        return d
    logits = -(d * d) / (2.0 * sigma * sigma)
    logits -= logits.max()
    weights = np.exp(logits)
    return weights / weights.sum()


class SoftmaxLeafLinker:
    """Turns a mention into a fuzzy set over the graph's nodes with Eq. 2.

    Parameters: ``kg`` (a KnowledgeGraph, or any GraphStore: then use :meth:`fuzzy_dicts`);
    ``linker`` (an :class:`~kgrag.linking.EntityLinker`; built over the graph in ``"dense"``
    mode from ``embedder`` when omitted -- ``None`` = packaged MiniLM);
    ``k`` nearest entities per mention (default 10); ``sigma`` (paper: 0.1).
    """

    def __init__(self, kg: GraphStore, *, linker: Any = None, embedder: Any = None,
                 k: int = DEFAULT_LINK_K, sigma: float = PAPER_SIGMA) -> None:
        if k < 1:
            raise ValueError("k must be >= 1")
        if sigma <= 0:
            raise ValueError("sigma must be positive")
        self.kg = kg
        self.k = k
        self.sigma = sigma
        if linker is None:
            from kgrag.linking import EntityLinker

            linker = EntityLinker.from_graph(kg, embedder=embedder, mode="dense", top_m=k)
        self.linker = linker

    def link_many(self, mentions: Sequence[str]) -> list[list[ScoredEntity]]:
        """Per mention, the top-k entities with their Eq. 2 probabilities (best first)."""
        if not mentions:
            return []
        links = self.linker.link_many(list(mentions), self.k, mode="dense")
        out = []
        for mention, found in zip(mentions, links):
            found = [link for link in found if self._known(link.name)][: self.k]
            probs = eq2_probabilities([link.score for link in found], self.sigma)
            scored = [ScoredEntity(link.name, float(p), "eq2",
                                   metadata={"mention": mention, "cosine": float(link.score),
                                             "linked_by": link.source})
                      for link, p in zip(found, probs)]
            scored.sort(key=lambda e: (-e.score, self._order(e.name)))
            out.append(scored)
        return out

    def _known(self, name: str) -> bool:
        if isinstance(self.kg, IdIndexedGraph):
            return name in self.kg.node_index
        return True  # a store's linker lists its own names

    def _order(self, name: str) -> Any:
        """Tie order: node id in memory, the name on a store."""
        return self.kg.node_index[name] if isinstance(self.kg, IdIndexedGraph) else name

    def fuzzy_dicts(self, mentions: Sequence[str]) -> list[tuple[dict[str, float],
                                                               list[ScoredEntity]]]:
        """Per mention, ``({entity name: probability}, the scored entities)`` (any graph)."""
        return [({e.name: e.score for e in scored if e.score > 0}, scored)
                for scored in self.link_many(mentions)]

    def fuzzy_sets(self, mentions: Sequence[str]) -> list[tuple[np.ndarray, list[ScoredEntity]]]:
        """Per mention, ``(membership vector over all nodes, the scored entities)``."""
        kg = self.kg
        if not isinstance(kg, IdIndexedGraph):
            raise TypeError("membership vectors need an in-memory KnowledgeGraph; on a "
                            "GraphStore use fuzzy_dicts()")
        result = []
        for scored in self.link_many(mentions):
            x = np.zeros(kg.num_nodes, dtype=np.float32)
            for entity in scored:
                x[kg.node_index[entity.name]] = entity.score
            result.append((x, scored))
        return result
