"""A deterministic "embedder" of random unit vectors (seeded by each text's hash), for scale
benchmarks of vector *search and matching*: the encoder is not what they measure, and a real
model would take hours on 250k names here. Same text -> same vector in every process.

    kgrag load-db kb.tsv --backend falkordb --embed --embedder benchmarks/hash_embedder.py:embedder
"""

from __future__ import annotations

import hashlib
import os
from typing import Sequence

import numpy as np


class HashUnitEmbedder:
    """Text -> a unit vector drawn from a generator seeded by the text's BLAKE2b hash."""

    def __init__(self, dimension: int = 64) -> None:
        self._dimension = int(dimension)

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def cache_key(self) -> str:
        return f"hash-unit-{self._dimension}"

    def _one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(),
                              "little")
        v = np.random.default_rng(seed).standard_normal(self._dimension).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension), np.float32)
        return np.stack([self._one(str(t)) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(str(text))


def embedder() -> HashUnitEmbedder:
    """The factory ``--embedder benchmarks/hash_embedder.py:embedder`` calls (dimension from
    ``KGRAG_HASH_DIM``, default 64)."""
    return HashUnitEmbedder(int(os.environ.get("KGRAG_HASH_DIM", "64")))
