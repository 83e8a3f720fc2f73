"""The evaluation's embedder: disk cache for name lists, in-memory memo for everything else.

Methods embed the graph's node names once (tens of thousands: cached on disk with
:class:`~kgrag.embed.CachedEmbedder`, so a rerun does not pay again), then small lists and
queries per question (pattern texts, node names of a query result) that repeat across
questions: those are remembered in memory, including every node name of a cached list.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from kgrag.embed.base import embedder_name

#: the most texts remembered in memory (~0.8 GB at 384 dimensions)
MAX_MEMO = 500_000


class EvalEmbedder:
    """Wraps an embedder (``None`` = packaged MiniLM) with a disk cache and a memo."""

    def __init__(self, embedder: Any = None, cache_dir: str | os.PathLike[str] | None = None, *,
                 min_cached: int = 500) -> None:
        from kgrag.embed import CachedEmbedder, as_embedder

        self.embedder = as_embedder(embedder)
        self.cached = (CachedEmbedder(self.embedder, cache_dir, min_texts=min_cached)
                       if cache_dir is not None else self.embedder)
        self.min_cached = min_cached
        self.memo: dict[str, np.ndarray] = {}
        #: queries apart from documents: some embedders encode the two differently
        self.query_memo: dict[str, np.ndarray] = {}

    @property
    def name(self) -> str:
        return embedder_name(self.embedder)

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    def _remember(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if len(self.memo) + len(texts) > MAX_MEMO:
            self.memo.clear()
        self.memo.update(zip(texts, vectors))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if len(missing) == len(texts) or len(texts) >= self.min_cached:
            # a whole name list goes to the disk cache as it is: its key is the exact list, so
            # leaving out names the memo knows would make every run miss it
            vectors = np.asarray(self.cached.embed_documents(texts), dtype=np.float32)
            self._remember(texts, vectors)
            return vectors
        if missing:
            self._remember(missing, np.asarray(self.cached.embed_documents(missing),
                                               dtype=np.float32))
        return np.stack([self.memo[t] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        vector = self.query_memo.get(text)
        if vector is None:
            vector = np.asarray(self.embedder.embed_query(text), dtype=np.float32)
            if len(self.query_memo) >= MAX_MEMO // 10:
                self.query_memo.clear()
            self.query_memo[text] = vector
        return vector
