"""The vector index every kgrag component searches: exact or HNSW, cosine or L2, saved without
pickle.

One class, :class:`VectorIndex`, serves entity linking (cosine: inner product of unit vectors,
FAISS ``IndexFlatIP`` / ``IndexHNSWFlat``) and SimGRAG's candidate search (the paper's L2
metric). The kinds:

* ``"flat"`` -- exact. Cosine: FAISS ``IndexFlatIP``. L2: one float32 scan of the stored
  matrix with proven error bounds (:class:`kgrag.embed.exact_l2.FlatL2Search`).
* ``"int8"`` -- L2 only: the same exact answer from an int8 copy, a quarter of the bytes
  (:class:`kgrag.embed.exact_l2.Int8L2Search`, needs numba; cosine indexes use ``"flat"``).
* ``"hnsw"`` -- FAISS ``IndexHNSWFlat`` (M = ``hnsw_m``, efConstruction =
  ``ef_construction``), approximate. efSearch is ``ef_search`` when given (fixed at build),
  else ``ef_search_factor`` x k per search (SimGRAG's paper setting: 8 x k).
* ``"auto"`` -- :func:`resolve_kind`: exact flat below ``hnsw_threshold`` rows; from there on
  HNSW when searches ask for at most :data:`AUTO_HNSW_MAX_K` rows (``expected_k``, unknown =
  small), else the exact int8 scan (flat when numba is missing or the metric is cosine).

:meth:`VectorIndex.save` writes FAISS's own format (``write_index``) for FAISS kinds and an
``.npy`` matrix (``allow_pickle=False``) for the exact L2 scans; :meth:`VectorIndex.load` reads
either, optionally memory-mapped. FAISS and numba are imported on first use.

>>> import numpy as np
>>> index = VectorIndex.build(np.eye(3, dtype=np.float32), metric="l2", index="flat")
>>> squared, ids = index.search(np.array([[1.0, 0.1, 0.0]]), 2)
>>> ids.tolist(), index.kind
([[0, 1]], 'flat')
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from kgrag.errors import GraphLoadError

METRICS = ("cosine", "l2")
INDEX_KINDS = ("auto", "flat", "int8", "hnsw")

#: ``"auto"`` builds HNSW from this many rows on (entity linking's default).
DEFAULT_HNSW_THRESHOLD = 200_000

#: ``"auto"`` stays exact above this k, however many rows there are: HNSW's search grows with
#: efSearch = 8 k. Measured on 500k random 64-d vectors (``benchmarks/simgrag_vector_index.py``),
#: k = 16384: flat 13 ms per query; HNSW (M = 32) 114 ms at efSearch = k (recall 0.997) and 4.0 s
#: at the paper's efSearch = 8 k. At k = 16 HNSW takes 1.1 ms against flat's 5.1 ms.
AUTO_HNSW_MAX_K = 1024

#: Vectors per ``index.add`` call when building an HNSW graph (see :func:`add_in_chunks`).
ADD_CHUNK = 50_000

_NPY_MAGIC = b"\x93NUMPY"


def load_faiss(purpose: str = "vector search") -> Any:
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


def resolve_kind(rows: int, index: str = "auto", *, metric: str = "cosine",
                 hnsw_threshold: int | None = DEFAULT_HNSW_THRESHOLD,
                 expected_k: int | None = None) -> str:
    """The kind ``index`` means for ``rows`` vectors (``"auto"`` resolved, see the module doc).

    >>> resolve_kind(10), resolve_kind(10**6), resolve_kind(10**6, metric="l2", expected_k=16384)
    ('flat', 'hnsw', 'int8')
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if index not in INDEX_KINDS:
        raise ValueError("index must be 'auto', 'flat', 'int8' or 'hnsw'")
    if index == "int8" and metric != "l2":
        raise ValueError("the int8 scan is exact for the L2 metric only; use 'flat'")
    if index != "auto":
        return index
    if hnsw_threshold is None or rows < hnsw_threshold:
        return "flat"
    if expected_k is None or expected_k <= AUTO_HNSW_MAX_K:
        return "hnsw"
    from kgrag.embed.exact_l2 import int8_available

    return "int8" if metric == "l2" and int8_available() else "flat"


class VectorIndex:
    """Nearest rows of a matrix; :meth:`search` gives ``(values, ids)`` per query row.

    ``values`` are cosine scores (descending) for ``metric="cosine"`` and squared L2 distances
    (ascending) for ``"l2"``. Build with :meth:`build`, persist with :meth:`save` /
    :meth:`load`.
    """

    def __init__(self, *, metric: str, kind: str, faiss_index: Any = None, exact: Any = None,
                 vectors: np.ndarray | None = None, ef_search_factor: int | None = None) -> None:
        self.metric = metric
        self.kind = kind
        #: the FAISS index (``flat`` cosine, ``hnsw``), else None
        self.index = faiss_index
        #: the exact L2 scan (:mod:`kgrag.embed.exact_l2`) of ``flat`` / ``int8`` L2, else None
        self.exact = exact
        #: the float32 matrix an exact L2 scan reads, else None
        self.vectors = vectors
        #: efSearch = this x k per search (HNSW without a fixed ``ef_search``)
        self.ef_search_factor = ef_search_factor

    @classmethod
    def build(cls, vectors: np.ndarray, *, metric: str = "cosine", index: str = "auto",
              hnsw_threshold: int | None = DEFAULT_HNSW_THRESHOLD, hnsw_m: int = 32,
              ef_construction: int = 100, ef_search: int | None = None,
              ef_search_factor: int = 8, expected_k: int | None = None,
              desc: str = "HNSW index") -> VectorIndex:
        """An index over the rows of ``vectors`` (see the module docstring for the kinds).

        The exact L2 scans keep ``vectors`` itself (no copy when given a C-contiguous float32
        matrix, so a memory-mapped matrix stays mapped).
        """
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise ValueError(f"vectors must be a (n, d) matrix, got shape {vectors.shape}")
        kind = resolve_kind(len(vectors), index, metric=metric, hnsw_threshold=hnsw_threshold,
                            expected_k=expected_k)
        if metric == "l2" and kind in ("flat", "int8"):
            from kgrag.embed.exact_l2 import FlatL2Search, Int8L2Search

            exact = FlatL2Search(vectors) if kind == "flat" else Int8L2Search(vectors)
            return cls(metric=metric, kind=kind, exact=exact, vectors=vectors)
        faiss = load_faiss(f"{metric} vector search")
        d = vectors.shape[1]
        faiss_metric = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
        factor: int | None = None
        if kind == "flat":
            built = faiss.IndexFlatIP(d)
        else:
            built = faiss.IndexHNSWFlat(d, hnsw_m, faiss_metric)
            built.hnsw.efConstruction = ef_construction
            if ef_search is not None:
                built.hnsw.efSearch = ef_search
            else:
                factor = ef_search_factor
        add_in_chunks(built, vectors, desc=desc)
        return cls(metric=metric, kind=kind, faiss_index=built, ef_search_factor=factor)

    @property
    def dimension(self) -> int:
        if self.index is not None:
            return int(self.index.d)
        assert self.vectors is not None
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        if self.index is not None:
            return int(self.index.ntotal)
        assert self.vectors is not None
        return len(self.vectors)

    def __repr__(self) -> str:
        return f"VectorIndex({len(self)} x {self.dimension}, {self.metric}, {self.kind})"

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows per query: ``(values, ids)`` each of shape (q, min(k, len)); ids an
        approximate search could not fill are -1."""
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        if queries.shape[1] != self.dimension:
            raise ValueError(f"query dimension {queries.shape[1]} != index dimension "
                             f"{self.dimension}")
        if len(self) == 0 or len(queries) == 0:
            width = 0 if len(self) == 0 else max(1, min(int(k), len(self)))
            return (np.zeros((len(queries), width), np.float32),
                    np.full((len(queries), width), -1, np.int64))
        k = max(1, min(int(k), len(self)))
        if self.exact is not None:  # every query vector in one pass over the rows
            return self.exact.search(queries, k)
        if self.ef_search_factor is not None:
            self.index.hnsw.efSearch = max(k, self.ef_search_factor * k)
        return self.index.search(queries, k)

    def save(self, path: str | os.PathLike[str]) -> None:
        """FAISS's ``write_index`` for FAISS kinds; the float32 matrix as ``.npy`` (no pickle)
        for the exact L2 scans (:meth:`load` rebuilds the scan from it)."""
        if self.index is not None:
            load_faiss().write_index(self.index, str(path))
            return
        with open(path, "wb") as fh:
            np.save(fh, np.asarray(self.vectors, dtype=np.float32), allow_pickle=False)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, mmap: bool = False, index: str = "flat",
             ef_search_factor: int | None = None) -> VectorIndex:
        """Read an index written by :meth:`save`.

        ``mmap=True`` maps the stored vectors read-only from the file instead of copying them
        (FAISS's ``IO_FLAG_MMAP_IFC`` for flat and HNSW-flat indexes; ``np.load(mmap_mode="r")``
        for a matrix), so processes that load the same file share them; the index must then not
        be added to. ``index`` (``"flat"`` / ``"int8"``) is the scan rebuilt over a saved
        matrix. An HNSW index searches with the efSearch stored in the file, or with
        ``ef_search_factor`` x k per search when that is given.
        """
        if not os.path.isfile(path):  # a FIFO would block the reader, a folder is no index
            raise GraphLoadError(f"no vector index file at {path}")
        with open(path, "rb") as fh:
            is_matrix = fh.read(len(_NPY_MAGIC)) == _NPY_MAGIC
        if is_matrix:
            try:
                vectors = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
            except (OSError, ValueError) as exc:
                raise GraphLoadError(f"cannot read vector matrix {path}: {exc}") from exc
            if vectors.ndim != 2 or vectors.dtype != np.float32:
                raise GraphLoadError(f"{path} is not a float32 (n, d) matrix")
            return cls.build(vectors, metric="l2", index=index)
        faiss = load_faiss()
        flags = 0
        if mmap:
            flags = getattr(faiss, "IO_FLAG_MMAP_IFC", getattr(faiss, "IO_FLAG_MMAP", 0))
            flags |= getattr(faiss, "IO_FLAG_READ_ONLY", 0)
        try:
            read = faiss.read_index(str(path), flags)
        except Exception as exc:
            raise GraphLoadError(f"cannot read FAISS index {path}: {exc}") from exc
        metric = "l2" if read.metric_type == faiss.METRIC_L2 else "cosine"
        kind = "hnsw" if hasattr(read, "hnsw") else "flat"
        factor = ef_search_factor if kind == "hnsw" else None
        return cls(metric=metric, kind=kind, faiss_index=read, ef_search_factor=factor)

