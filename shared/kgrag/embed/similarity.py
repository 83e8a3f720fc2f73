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


def matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` for a 2-D ``matrix`` and 1-D ``vector`` (see the module docs)."""
    matrix = np.asarray(matrix)
    vector = np.asarray(vector)
    if matrix.ndim != 2 or vector.ndim != 1 or matrix.shape[1] != vector.shape[0]:
        raise ValueError(f"matvec needs (n, d) and (d,) arrays, got {matrix.shape} and "
                         f"{vector.shape}")
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
