"""Exact k nearest rows by L2: a float32 scan or an int8 scan, both with proven error bounds.

SimGRAG asks for the paper's k(n) = 16384 nearest node names of every named pattern node; on a
10M-edge graph that is a scan of 2.5M x 384 float32 values (3.8 GB) per query vector, which
memory bandwidth alone makes ~170 ms on this machine. Both searches here return *the same* exact
answer and differ only in how many bytes they read:

* :class:`FlatL2Search` scans the float32 matrix (the reference);
* :class:`Int8L2Search` scans an int8 copy (a quarter of the bytes) with a per-row scale.

**What "exact" means.** The distance of row ``i`` to ``q`` is :func:`squared_distances`: the
float32 sum of squared float32 differences, computed per row by one fixed routine (it is the
distance SimGRAG reports). The answer is the ``k`` rows with the smallest such distance, ties
broken by row id -- what a full sort of every row's distance would give.

**How a scan stays exact.** A scan computes, for every row, an interval that provably contains
its true (real-arithmetic) squared distance ``s_i``: the float32 scan from floating-point error
bounds of its dot product (``|fl(q.x) - q.x| <= gamma_d |q| |x|``), the int8 scan from
Cauchy-Schwarz on the quantisation residuals (``q.x = q~.x~ + q~.(x - x~) + (q - q~).x``, with
``|x - x~|`` stored per row and the integer product ``q~.x~`` exact in int32). The reported
distance is within a relative ``gamma_{d+2}`` of ``s_i``, which widens the interval once more.
Then ``U`` = the k-th smallest upper bound is at least the k-th smallest reported distance,
so every row of the answer -- ties at the k-th value included -- has its lower bound at most
``U``. Only those rows (the *band*: about k for the float32 scan, 1-3 % of random 384-d rows for
int8) are read again in float32 and ranked by their exact distance.

Several query vectors are scored in one pass over the rows (:func:`kgrag.embed.matvecs` for
float32; the int8 kernel scores a row against every query while it is in cache), so a pattern
with three named nodes reads the matrix once, not three times.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import Future
from typing import Any

import numpy as np

from kgrag.embed.similarity import get_pool, matvecs, workers

#: float32 unit roundoff.
UNIT = 2.0 ** -24

#: Bytes of rows re-scored at a time (gathered, differenced and summed while in L2).
RESCORE_BYTES = 1 << 19

#: Row ranges per scan thread of the int8 scan (see :meth:`Int8L2Search._bounds`).
SCAN_PARTS_PER_THREAD = 4

#: Rows per chunk when the int8 copy is built (bounds the float64 temporaries).
BUILD_CHUNK = 65_536


def gamma(n: int) -> float:
    """Higham's ``gamma_n = n u / (1 - n u)``: the relative error bound of an ``n``-term float32
    sum of products (any summation order, fused multiply-adds or not)."""
    return n * UNIT / (1.0 - n * UNIT)


def squared_distances(matrix: np.ndarray, ids: np.ndarray, query: np.ndarray, *,
                      parallel: bool = True) -> np.ndarray:
    """``|matrix[i] - query|^2`` (float32) for each id: the exact metric of both searches.

    Each row's value depends only on that row and ``query`` (the same routine, whichever other
    rows are asked for), so an identical row has an identical distance and ranking the band
    agrees with ranking every row. ``parallel=False``: one thread (for a caller that is
    already running on the scans' pool).
    """
    ids = np.asarray(ids, dtype=np.int64)
    out = np.empty(len(ids), dtype=np.float32)
    parts = workers() if parallel and len(ids) * matrix.shape[1] >= (1 << 21) else 1
    bounds = np.linspace(0, len(ids), parts + 1).astype(np.int64)

    step = max(1, RESCORE_BYTES // max(1, matrix.shape[1] * 4))

    def rescore(p: int) -> None:  # in cache-sized chunks: rows are read from memory once
        buf = np.empty((min(step, int(bounds[p + 1] - bounds[p])), matrix.shape[1]), np.float32)
        for lo in range(int(bounds[p]), int(bounds[p + 1]), step):
            hi = min(int(bounds[p + 1]), lo + step)
            diff = buf[:hi - lo]
            np.take(matrix, ids[lo:hi], axis=0, out=diff)
            diff -= query
            np.einsum("ij,ij->i", diff, diff, out=out[lo:hi])

    if parts == 1:
        rescore(0)
    else:
        list(get_pool().map(rescore, range(parts)))
    return out


def kth_smallest(values: np.ndarray, k: int, *, sample: int = 32768) -> float:
    """The k-th smallest of ``values`` (1-based), exactly; a strided sample narrows the
    partition to the values under an estimated threshold, with a full partition whenever the
    sample misleads (as :func:`kgrag.methods.simgrag.candidates.smallest_k`)."""
    n = len(values)
    step = n // sample
    if step >= 4 and k < n // 2:
        probe = values[::step]
        expected = k * len(probe) / n
        rank = min(len(probe) - 1, int(expected + 4.0 * math.sqrt(expected) + 8))
        kept = values[values <= np.partition(probe, rank)[rank]]
        if len(kept) >= k:
            return float(np.partition(kept, k - 1)[k - 1])
    return float(np.partition(values, k - 1)[k - 1])


def _round_up32(value: float) -> np.float32:
    """The smallest float32 >= ``value``, so comparing a float32 array with it loses no row."""
    out = np.float32(value)
    if float(out) < value:
        out = np.nextafter(out, np.float32(np.inf))
    return out


class _ExactL2:
    """Shared part: the band of one query from its bounds, then the exact ranking of the band."""

    def __init__(self, vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise ValueError(f"vectors must be a (n, d) matrix, got shape {vectors.shape}")
        self.vectors = vectors
        self.dim = vectors.shape[1]
        #: relative error of :func:`squared_distances` against the real squared distance
        self.metric_error = 1.01 * gamma(self.dim + 2)
        #: rows read again in float32 by the last search, per query (for benchmarks)
        self.last_band_sizes: list[int] = []
        self._scratch = threading.local()

    def _buffers(self, m: int, count: int) -> list[np.ndarray]:
        """``count`` float32 ``(m, n)`` scratch arrays, kept per thread between searches: a
        fresh 10 MB-per-query array is paged in on first touch (page faults, ~15 ms per 60 MB),
        which is as slow as the int8 scan itself."""
        kept = getattr(self._scratch, "arrays", None)
        if kept is None or len(kept) < count or kept[0].shape[0] < m:
            rows = max(m, 0 if kept is None else kept[0].shape[0])
            kept = self._scratch.arrays = [np.empty((rows, len(self)), dtype=np.float32)
                                           for _ in range(count)]
        return [a[:m] for a in kept[:count]]

    def __len__(self) -> int:
        return len(self.vectors)

    def _bounds(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """``(lower, upper or None, margin)``: per query row ``k``, ``lower[k] - margin[k] <= s -
        |q|^2 <= upper[k] + margin[k]`` (``upper`` None: the same array as ``lower``)."""
        raise NotImplementedError

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(squared distances float32 (m, k), ids int64 (m, k))``, ascending by (distance, id)."""
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        if queries.shape[1] != self.dim:
            raise ValueError(f"queries have dimension {queries.shape[1]}, rows {self.dim}")
        k = min(int(k), len(self))
        m = len(queries)
        ids = np.empty((m, max(k, 0)), dtype=np.int64)
        squared = np.empty((m, max(k, 0)), dtype=np.float32)
        self.last_band_sizes = []
        if m == 0 or k <= 0:
            return squared, ids
        lower, upper, margin = self._bounds(queries)
        upper = lower if upper is None else upper

        def band_of(row: int) -> np.ndarray:
            return self._band(lower[row], upper[row], float(margin[row]), queries[row], k)

        # the queries' band selections side by side (one thread each), then each band's
        # re-scoring on every thread: three bands on two threads take 1.5 band-times, not 2
        bands = [band_of(0)] if m == 1 else list(get_pool().map(band_of, range(m)))
        for row, band in enumerate(bands):
            dist = squared_distances(self.vectors, band, queries[row])
            order = top_k_order(dist, k)  # band ids ascend: ties are broken by id
            ids[row], squared[row] = band[order], dist[order]
        self.last_band_sizes = [len(band) for band in bands]
        return squared, ids

    def _band(self, lower: np.ndarray, upper: np.ndarray, margin: float, query: np.ndarray,
              k: int) -> np.ndarray:
        """Ascending ids of the rows that can be among the ``k`` nearest of ``query``."""
        grow = 1.0 + 1e-9  # the few float64 operations below
        q64 = query.astype(np.float64)
        q_sq = float(np.dot(q64, q64))
        # every answer row's reported distance is <= limit ...
        top = kth_smallest(upper, k) + margin
        limit = (q_sq + top) * (1.0 + self.metric_error) * grow
        # ... and a row whose lower bound is above it cannot be in the answer
        cut = (limit / (1.0 - self.metric_error)) * grow - q_sq + margin
        return np.flatnonzero(lower <= _round_up32(cut + abs(cut) * 1e-9))


def top_k_order(dist: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest of the non-negative float32 ``dist``, ascending by
    (value, position): the float's bits (order-preserving for non-negative floats) and the
    position packed into one uint64 key, so numpy's fast unstable sort gives the stable order."""
    if len(dist) < 2048 or dist.dtype != np.float32 or not (dist >= 0).all():
        return np.lexsort((np.arange(len(dist)), dist))[:k]
    key = dist.view(np.uint32).astype(np.uint64)
    key <<= np.uint64(32)
    key |= np.arange(len(dist), dtype=np.uint64)
    if k < len(key):
        key = np.partition(key, k - 1)[:k]
    key.sort()
    return (key & np.uint64(0xFFFFFFFF)).astype(np.int64)


class FlatL2Search(_ExactL2):
    """Exact search over the float32 matrix itself (no copy when given float32 rows)."""

    def __init__(self, vectors: np.ndarray) -> None:
        super().__init__(vectors)
        self.sq_norms = np.einsum("ij,ij->i", self.vectors, self.vectors)
        self.max_norm = float(np.sqrt(self.sq_norms.max(initial=0.0, where=np.isfinite(
            self.sq_norms)))) * (1.0 + gamma(self.dim)) if len(self.vectors) else 0.0

    def _bounds(self, queries: np.ndarray) -> tuple[np.ndarray, None, np.ndarray]:
        rank = matvecs(self.vectors, queries, out=self._buffers(len(queries), 1)[0])  # q.x
        rank *= np.float32(-2.0)
        rank += self.sq_norms  # |x|^2 - 2 q.x, each a few float32 roundings from the real value
        q_norms = np.sqrt(np.einsum("ij,ij->i", queries.astype(np.float64),
                                    queries.astype(np.float64)))
        size = (self.max_norm + q_norms) ** 2
        margin = (gamma(self.dim + 4) * 1.01) * size + 1e-30
        return rank, None, margin


class Int8L2Search(_ExactL2):
    """Exact search that scans an int8 copy of the rows (per-row scale, residual norm kept).

    Needs numba (the ``fast`` extra). The float32 matrix is kept for the band's exact
    re-scoring; the copy costs ``d + 24`` bytes per row (``d`` rounded up to the kernel's block:
    64 bytes for AVX-512 VNNI, 16 for AVX2). ``kernel="auto"`` picks the fastest this CPU runs
    (:func:`kgrag.embed._int8_kernel.best_kernel`: ``"vnni"``, ``"avx2"``, else
    ``"portable"``, the plain loop); all give the same integer products, hence the same answer.
    """

    #: int16 query codes: ``d * 127 * QMAX`` must fit int32.
    QUERY_MAX = 32767

    def __init__(self, vectors: np.ndarray, *, kernel: str = "auto") -> None:
        from kgrag.embed import _int8_kernel

        super().__init__(vectors)
        if kernel not in ("auto", *_int8_kernel.KERNELS):
            raise ValueError(f"kernel must be 'auto' or one of {_int8_kernel.KERNELS}")
        if kernel == "auto":
            kernel = _int8_kernel.best_kernel()
        self.kernel = kernel
        self._kernel = _int8_kernel.load(kernel)
        n, d = self.vectors.shape
        #: code row width (zero padding up to the kernel's block)
        self.width = _int8_kernel.row_width(kernel, d)
        self.codes = np.zeros((n, self.width), dtype=np.int8)
        self.row_sums = np.empty(n, dtype=np.int32)
        self.scales = np.empty(n, dtype=np.float32)
        self.sq_norms = np.empty(n, dtype=np.float64)
        self.norms = np.empty(n, dtype=np.float32)
        self.residuals = np.empty(n, dtype=np.float32)
        for lo in range(0, n, BUILD_CHUNK):
            self._quantize(lo, min(n, lo + BUILD_CHUNK))
        self.query_max = min(self.QUERY_MAX, (2 ** 31 - 1) // (127 * d))

    def _quantize(self, lo: int, hi: int) -> None:
        rows = self.vectors[lo:hi]
        if not np.isfinite(rows).all():
            raise ValueError("vectors must be finite for the int8 index")
        peak = np.abs(rows).max(axis=1)
        scale = (peak / np.float32(127.0)).astype(np.float32)
        scale[scale == 0] = np.float32(1.0)
        codes = np.clip(np.rint(rows / scale[:, None]), -127, 127).astype(np.int8)
        exact = rows.astype(np.float64)
        residual = exact - scale.astype(np.float64)[:, None] * codes  # exact in float64
        sq = np.einsum("ij,ij->i", exact, exact)
        grow = 1.0 + 1e-12  # float64 sums of at most a few thousand terms
        self.codes[lo:hi, :self.dim] = codes
        self.row_sums[lo:hi] = codes.sum(axis=1, dtype=np.int32)
        self.scales[lo:hi] = scale
        self.sq_norms[lo:hi] = sq
        up = np.float32(np.inf)  # float32 rounds to nearest: one step up makes it a bound
        self.norms[lo:hi] = np.nextafter(np.sqrt(sq * grow).astype(np.float32), up)
        self.residuals[lo:hi] = np.nextafter(
            np.sqrt(np.einsum("ij,ij->i", residual, residual) * grow).astype(np.float32), up)

    def _bounds(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        exact = queries.astype(np.float64)
        peak = np.abs(queries).max(axis=1).astype(np.float64)
        q_scales = np.where(peak > 0, peak / self.query_max, 1.0).astype(np.float32)
        codes = np.zeros((len(queries), self.width), dtype=np.int16)
        codes[:, :self.dim] = np.clip(np.rint(exact / q_scales[:, None]), -self.query_max,
                                      self.query_max)
        approx = q_scales.astype(np.float64)[:, None] * codes[:, :self.dim]
        grow = 1.0 + 1e-12
        q_norms = np.sqrt(np.einsum("ij,ij->i", approx, approx) * grow)
        q_errors = np.sqrt(np.einsum("ij,ij->i", exact - approx, exact - approx) * grow)
        m, n = len(queries), len(self)
        lower, upper = self._buffers(m, 2)
        args = (self.codes, self.scales, self.sq_norms, self.norms, self.residuals,
                self.row_sums, codes,
                q_scales.astype(np.float64), q_norms, q_errors, lower, upper)
        # several row ranges per thread: on a shared machine a thread that loses its core for
        # a while no longer holds the whole scan back (the others take its remaining ranges)
        parts = SCAN_PARTS_PER_THREAD * workers() if n * self.dim * m >= (1 << 22) else 1
        parts = max(1, min(parts, n // 4096))
        bounds = np.linspace(0, n, parts + 1).astype(np.int64)
        if parts == 1:
            self._kernel(*args, 0, n)
        else:
            pool = get_pool()
            futures: list[Future[Any]] = [pool.submit(self._kernel, *args, int(bounds[p]),
                                                      int(bounds[p + 1])) for p in range(parts)]
            for f in futures:
                f.result()
        return lower, upper, np.zeros(m)


def int8_available() -> bool:
    """Whether :class:`Int8L2Search` can be built (numba importable)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True
