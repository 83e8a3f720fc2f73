"""Matrix-vector products for query-time similarity scans, without BLAS's spinning threads.

Every method scores a query vector against a stored matrix (node names, relations, chunks,
keywords). ``matrix @ vector`` hands that to the BLAS numpy was built with; OpenBLAS then keeps
its worker threads busy-waiting for a while after the product. When the next thing the process
does is embed the next question with PyTorch (MiniLM), those spinning threads compete with
PyTorch's for the cores: measured on the 2-core machine, embedding two short texts took 6-8 ms
alone and 85-108 ms right after a 43k x 384 ``@`` product. Limiting BLAS would mean changing a
process-wide setting under the user's feet.

:func:`matvec` computes the same product with numpy's own ``einsum`` loops instead, which never
start threads. Large matrices are split into row blocks scanned by a small pool of Python
threads (``einsum`` releases the GIL), whose idle workers sleep instead of spinning: 2.5M x 64
float32 takes about 24 ms on 2 cores (BLAS with 2 threads: 20-26 ms; one thread: 38 ms).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: Below this many matrix elements one thread scans the matrix (thread hand-off costs more).
PARALLEL_MIN_ELEMENTS = 1 << 25

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def workers() -> int:
    """Threads the scans use: the CPUs this process may run on (at most 8)."""
    return _workers()


def get_pool() -> ThreadPoolExecutor:
    """The scans' shared pool of sleeping (not spinning) worker threads."""
    return _get_pool()


def _workers() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_workers(), thread_name_prefix="kgrag-matvec")
        return _pool


def _forget_pool_after_fork() -> None:
    """A forked child has none of the parent's threads: its first scan starts a new pool
    (reusing the inherited one would wait forever for workers that do not exist)."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def matvec(matrix: np.ndarray, vector: np.ndarray, *, out: np.ndarray | None = None
           ) -> np.ndarray:
    """``matrix @ vector`` for a 2-D ``matrix`` and 1-D ``vector`` (see the module docs);
    ``out``: a contiguous array of ``len(matrix)`` to write into."""
    matrix = np.asarray(matrix)
    vector = np.asarray(vector)
    if matrix.ndim != 2 or vector.ndim != 1 or matrix.shape[1] != vector.shape[0]:
        raise ValueError(f"matvec needs (n, d) and (d,) arrays, got {matrix.shape} and "
                         f"{vector.shape}")
    if out is None:
        out = np.empty(matrix.shape[0], dtype=np.result_type(matrix, vector))
    workers = _workers()
    if matrix.size < PARALLEL_MIN_ELEMENTS or workers == 1:
        return np.einsum("ij,j->i", matrix, vector, out=out)
    bounds = np.linspace(0, matrix.shape[0], workers + 1).astype(np.int64)

    def scan(i: int) -> None:
        lo, hi = bounds[i], bounds[i + 1]
        np.einsum("ij,j->i", matrix[lo:hi], vector, out=out[lo:hi])

    list(_get_pool().map(scan, range(workers)))
    return out


#: Rows of one block of :func:`matvecs`: about 1 MB of float32, so every query vector meets the
#: block in the core's L2 cache.
BLOCK_BYTES = 1 << 20


def matvecs(matrix: np.ndarray, vectors: np.ndarray, *, out: np.ndarray | None = None
            ) -> np.ndarray:
    """``vectors @ matrix.T`` (shape ``(m, n)``) in ONE pass over ``matrix``'s rows.

    Each worker walks its row range in blocks of about :data:`BLOCK_BYTES` and scores a block
    against every vector while it is in cache, so ``m`` query vectors cost one read of the
    matrix instead of ``m`` (the matrix, not the arithmetic, is the bottleneck of a scan over
    millions of rows). ``out``: a C-contiguous ``(m, n)`` array to write into.
    """
    matrix = np.asarray(matrix)
    vectors = np.asarray(vectors)
    if matrix.ndim != 2 or vectors.ndim != 2 or matrix.shape[1] != vectors.shape[1]:
        raise ValueError(f"matvecs needs (n, d) and (m, d) arrays, got {matrix.shape} and "
                         f"{vectors.shape}")
    n = matrix.shape[0]
    if out is None:
        out = np.empty((vectors.shape[0], n), dtype=np.result_type(matrix, vectors))
    elif out.shape != (vectors.shape[0], n) or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {(vectors.shape[0], n)} array")
    if len(vectors) == 1:
        matvec(matrix, vectors[0], out=out[0])
        return out
    step = max(1, BLOCK_BYTES // max(1, matrix.shape[1] * matrix.itemsize))
    parts = _workers() if matrix.size * len(vectors) >= PARALLEL_MIN_ELEMENTS else 1
    bounds = np.linspace(0, n, parts + 1).astype(np.int64)

    def scan(p: int) -> None:
        for lo in range(int(bounds[p]), int(bounds[p + 1]), step):
            hi = min(int(bounds[p + 1]), lo + step)
            block = matrix[lo:hi]
            for row, vector in enumerate(vectors):
                np.einsum("ij,j->i", block, vector, out=out[row, lo:hi])

    if parts == 1:
        scan(0)
    else:
        list(_get_pool().map(scan, range(parts)))
    return out
