"""Relation vectors with several texts per relation; a query is scored by its best match.

:func:`kgrag.text.relations.relation_texts` gives each relation one or more texts (label,
aliases, the last segment of a path-like id, the whole id in words). :class:`RelationTextVectors`
embeds them all once, keeps which relation owns each row, and reduces a query's similarities or
distances to one value per relation: the best over that relation's texts.

>>> from kgrag.embed import LookupEmbedder
>>> emb = LookupEmbedder({"a": [1, 0], "b": [0, 1], "c": [0.6, 0.8]})
>>> vecs = RelationTextVectors.from_texts([["a", "b"], ["c"]], emb)
>>> vecs.similarities(np.array([0.0, 1.0])).astype(float).round(2).tolist()
[1.0, 0.8]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kgrag.embed.similarity import matvec
from kgrag.embed.store import embed_cached

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.graph.base import GraphStore


class RelationTextVectors:
    """Row-stacked text vectors of ``R`` relations; relation ``i`` owns rows
    ``indptr[i]:indptr[i+1]`` (at least one row each)."""

    def __init__(self, vectors: np.ndarray, indptr: np.ndarray) -> None:
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.indptr = np.asarray(indptr, dtype=np.int64)
        if self.vectors.ndim != 2 or self.indptr[-1] != len(self.vectors):
            raise ValueError("vectors and indptr do not match")
        if np.any(np.diff(self.indptr) < 1):
            raise ValueError("every relation needs at least one text vector")
        #: whether every relation has exactly one text (the reductions are then the identity)
        self.single = len(self.vectors) == len(self.indptr) - 1

    @classmethod
    def from_texts(cls, texts: Sequence[Sequence[str]], embedder: Any) -> RelationTextVectors:
        """Embed ``texts[i]`` (the texts of relation ``i``) in one batch."""
        flat = [t for group in texts for t in group]
        counts = [len(group) for group in texts]
        if any(c < 1 for c in counts):
            raise ValueError("every relation needs at least one text")
        indptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        vectors = embed_cached(embedder, flat, kind="relations") if flat else \
            np.zeros((0, getattr(embedder, "dimension", 1)), np.float32)
        vectors = np.asarray(vectors)
        if vectors.ndim != 2:  # (0, d) already when there is nothing; -1 cannot infer d from 0
            vectors = vectors.reshape(len(flat), -1)
        return cls(vectors, indptr)

    @classmethod
    def from_graph(cls, graph: GraphStore, embedder: Any,
                   names: Sequence[str] | None = None) -> RelationTextVectors:
        """The texts of ``graph``'s relations (:func:`~kgrag.text.relations.all_relation_texts`)."""
        from kgrag.text.relations import all_relation_texts

        return cls.from_texts(all_relation_texts(graph, names), embedder)

    def __len__(self) -> int:
        return len(self.indptr) - 1

    @property
    def owner(self) -> np.ndarray:
        """The relation of each text row."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.indptr))

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Per relation, the best (largest) dot product of ``query`` with one of its texts."""
        sims = matvec(self.vectors, np.asarray(query, dtype=self.vectors.dtype))
        return sims if self.single else np.maximum.reduceat(sims, self.indptr[:-1])

    def distances(self, queries: np.ndarray) -> np.ndarray:
        """``(Q, R)`` Euclidean distances, per relation the nearest of its texts."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        squared = (np.einsum("ij,ij->i", queries, queries)[:, None]
                   - 2.0 * np.einsum("qd,rd->qr", queries, self.vectors)
                   + np.einsum("ij,ij->i", self.vectors, self.vectors)[None, :])
        np.maximum(squared, 0.0, out=squared)
        if not self.single:
            squared = np.minimum.reduceat(squared, self.indptr[:-1], axis=1)
        return np.sqrt(squared).astype(np.float64)
