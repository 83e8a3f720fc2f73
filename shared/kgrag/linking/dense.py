"""Dense nearest-name search with FAISS over L2-normalised embeddings (inner product = cosine).

Below ``hnsw_threshold`` vectors the index is exact (``IndexFlatIP``); above it, an
``IndexHNSWFlat`` graph with the inner-product metric (approximate, much faster per query).
FAISS is imported lazily. Indexes are saved with FAISS's own ``write_index`` (no pickle).
"""

from __future__ import annotations

import os

from pathlib import Path
from typing import Any

import numpy as np

from kgrag.errors import GraphLoadError

DEFAULT_HNSW_THRESHOLD = 200_000

#: Vectors per ``index.add`` call when building an HNSW graph (see :func:`add_in_chunks`).
ADD_CHUNK = 50_000


def load_faiss(purpose: str = "dense linking") -> Any:
    """The ``faiss`` module, imported on first use; a clear error naming ``purpose`` if absent."""
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise ImportError(f"{purpose} needs FAISS: `pip install faiss-cpu`") from exc
    return faiss


def add_in_chunks(index: Any, vectors: np.ndarray, *, desc: str = "indexing vectors",
                  chunk: int = ADD_CHUNK, progress: bool = True) -> None:
    """``index.add(vectors)`` in slices of ``chunk`` rows, with a tqdm bar when there is more
    than one slice.

    Building an HNSW graph over millions of vectors takes minutes (2.5M x 64: about 6 minutes on
    2 cores) inside one C++ call that Ctrl-C cannot stop; adding slice by slice shows progress
    and lets an interrupt land between slices. HNSW graphs grow incrementally, so nothing is
    lost (the graph's exact edges depend on insertion order and FAISS's threads either way).
    """
    n = len(vectors)
    if n <= chunk:
        index.add(vectors)
        return
    from tqdm.auto import tqdm

    with tqdm(total=n, desc=desc, unit="vector", disable=not progress) as bar:
        for start in range(0, n, chunk):
            block = vectors[start:start + chunk]
            index.add(block)
            bar.update(len(block))


class DenseIndex:
    """A FAISS index over unit vectors; ``search`` returns (cosine scores, row ids)."""

    def __init__(self, index: Any) -> None:
        self.index = index

    @classmethod
    def build(cls, vectors: np.ndarray, *, hnsw_threshold: int = DEFAULT_HNSW_THRESHOLD,
              hnsw_m: int = 32, ef_construction: int = 100, ef_search: int = 128) -> DenseIndex:
        faiss = load_faiss()
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise ValueError(f"vectors must be a (n, d) matrix, got shape {vectors.shape}")
        d = vectors.shape[1]
        if len(vectors) < hnsw_threshold:
            index = faiss.IndexFlatIP(d)
        else:
            index = faiss.IndexHNSWFlat(d, hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = ef_construction
            index.hnsw.efSearch = ef_search
        add_in_chunks(index, vectors, desc="HNSW index (dense linking)")
        return cls(index)

    @property
    def dimension(self) -> int:
        return int(self.index.d)

    @property
    def kind(self) -> str:
        return type(self.index).__name__

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows per query: ``(scores, ids)`` each of shape (q, k); missing ids are -1."""
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        if queries.shape[1] != self.dimension:
            raise ValueError(f"query dimension {queries.shape[1]} != index dimension "
                             f"{self.dimension}")
        k = max(1, min(k, len(self))) if len(self) else 1
        if len(self) == 0:
            return (np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64))
        scores, ids = self.index.search(queries, k)
        return scores, ids

    def save(self, path: str | Path) -> None:
        load_faiss().write_index(self.index, str(path))

    @classmethod
    def load(cls, path: str | Path, *, mmap: bool = False) -> DenseIndex:
        """Read an index written by :meth:`save`. ``mmap=True`` maps its stored vectors (the
        codes of flat and HNSW-flat indexes, FAISS's ``IO_FLAG_MMAP_IFC``) read-only from the
        file instead of copying them, so processes that load the same file share them; the
        index must then not be added to."""
        faiss = load_faiss()
        if not os.path.isfile(path):  # a FIFO would block the reader, a folder is no index
            raise GraphLoadError(f"no FAISS index file at {path}")
        flags = 0
        if mmap:
            flags = getattr(faiss, "IO_FLAG_MMAP_IFC", getattr(faiss, "IO_FLAG_MMAP", 0))
            flags |= getattr(faiss, "IO_FLAG_READ_ONLY", 0)
        try:
            return cls(faiss.read_index(str(path), flags))
        except Exception as exc:
            raise GraphLoadError(f"cannot read FAISS index {path}: {exc}") from exc
