"""The Embedder protocol and helpers shared by every embedder.

An embedder turns texts into float32 vectors with L2-normalised rows, so the inner product of two
vectors is their cosine similarity (what FAISS ``IndexFlatIP`` / ``IndexHNSWFlat`` with the inner
product metric expect).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from kgrag.errors import EmbeddingError


@runtime_checkable
class Embedder(Protocol):
    """Anything that embeds texts into L2-normalised float32 vectors.

    ``embed_documents(texts)`` returns shape ``(len(texts), dimension)``; ``embed_query(text)``
    returns shape ``(dimension,)``. ``name`` (optional) identifies the model, e.g. for caches.
    """

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    @property
    def dimension(self) -> int: ...


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float32); all-zero rows stay zero instead of becoming NaN."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        norm = float(np.linalg.norm(arr))
        return arr / norm if norm > 0 else arr.copy()
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (arr / norms).astype(np.float32, copy=False)


def as_matrix(raw: object, expected_rows: int, *, source: str) -> np.ndarray:
    """Turn ``raw`` (list of lists, array) into a normalised ``(expected_rows, d)`` float32 matrix.

    Raises :class:`EmbeddingError` when the shape is wrong or values are not finite, so a broken
    model fails loudly instead of silently corrupting an index.
    """
    try:
        arr = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source} returned something that is not a numeric matrix") from exc
    if expected_rows == 0:
        return arr.reshape(0, arr.shape[1] if arr.ndim == 2 else 0)
    if arr.ndim != 2 or arr.shape[0] != expected_rows or arr.shape[1] == 0:
        raise EmbeddingError(
            f"{source} returned shape {arr.shape}, expected ({expected_rows}, dimension)")
    if not np.isfinite(arr).all():
        raise EmbeddingError(f"{source} returned NaN or infinite values")
    return l2_normalize(arr)


def as_vector(raw: object, *, source: str) -> np.ndarray:
    """Turn ``raw`` into one normalised ``(d,)`` float32 vector (see :func:`as_matrix`)."""
    try:
        arr = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source} returned something that is not a numeric vector") from exc
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise EmbeddingError(f"{source} returned shape {arr.shape}, expected (dimension,)")
    if not np.isfinite(arr).all():
        raise EmbeddingError(f"{source} returned NaN or infinite values")
    return l2_normalize(arr)


def embedder_name(embedder: object) -> str:
    """A stable identifier of an embedder (its ``name`` if it has one, else its class name)."""
    name = getattr(embedder, "name", None)
    return str(name) if name else type(embedder).__name__
