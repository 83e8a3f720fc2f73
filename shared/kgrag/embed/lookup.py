"""A deterministic lookup-table embedder, for tests that need exact cosine values."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from kgrag.embed.base import Embedder, l2_normalize
from kgrag.errors import EmbeddingError
from kgrag.text.names import normalize_name


class UnknownTextError(EmbeddingError, KeyError):
    """A :class:`LookupEmbedder` was asked for a text it has no vector for (and no fallback)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown text"


class LookupEmbedder:
    """Embeds each text by looking up its vector in ``table`` (rows are L2-normalised).

    Keys are matched after :func:`~kgrag.graph.normalize_name` (NFC, outer spaces stripped).
    An unknown text raises :class:`UnknownTextError` unless ``fallback`` is given: ``"zero"``
    (the zero vector, cosine 0 with everything), another :class:`Embedder`, or a callable
    ``text -> vector``.

    >>> emb = LookupEmbedder({"cat": [1, 0], "kitten": [1, 1]})
    >>> round(float(emb.embed_query("cat") @ emb.embed_query("kitten")), 4)
    0.7071
    """

    def __init__(self, table: Mapping[str, Sequence[float] | np.ndarray], *,
                 fallback: str | Embedder | Callable[[str], Sequence[float]] | None = None,
                 normalize: bool = True, name: str = "lookup") -> None:
        if not table:
            raise ValueError("LookupEmbedder needs at least one entry")
        keys = [normalize_name(k) for k in table]
        matrix = np.asarray([np.asarray(v, dtype=np.float32) for v in table.values()])
        if matrix.ndim != 2:
            raise ValueError("every vector in the table must have the same dimension")
        self._matrix = l2_normalize(matrix) if normalize else matrix.astype(np.float32)
        self._row = {k: i for i, k in enumerate(keys)}
        if fallback is not None and not (fallback == "zero" or callable(fallback)
                                         or hasattr(fallback, "embed_query")):
            raise ValueError("fallback must be None, 'zero', an Embedder or a callable")
        self.fallback = fallback
        self.normalize = normalize
        self.name = name

    @property
    def dimension(self) -> int:
        return int(self._matrix.shape[1])

    def __contains__(self, text: str) -> bool:
        return normalize_name(text) in self._row

    def _vector(self, text: str) -> np.ndarray:
        row = self._row.get(normalize_name(text))
        if row is not None:
            return self._matrix[row]
        if self.fallback is None:
            raise UnknownTextError(f"LookupEmbedder has no vector for {text!r}")
        if self.fallback == "zero":
            return np.zeros(self.dimension, dtype=np.float32)
        if hasattr(self.fallback, "embed_query"):
            raw = self.fallback.embed_query(text)  # type: ignore[union-attr]
            vec = np.asarray(raw, dtype=np.float32)
        else:
            vec = np.asarray(self.fallback(text), dtype=np.float32)  # type: ignore[operator]
        if vec.shape != (self.dimension,):
            raise EmbeddingError(f"fallback returned shape {vec.shape}, expected "
                                 f"({self.dimension},)")
        return l2_normalize(vec) if self.normalize else vec

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text).copy()
