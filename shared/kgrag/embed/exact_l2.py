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

import functools
import math
import threading
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from kgrag.compiled import compiled_module
from kgrag.embed.similarity import get_pool, matvecs, workers

#: float32 unit roundoff.
UNIT = 2.0 ** -24

#: Bytes of rows re-scored at a time (gathered, differenced and summed while in L2).
RESCORE_BYTES = 1 << 19

#: Row ranges per scan thread of the int8 scan (see :meth:`Int8L2Search._bounds`).
SCAN_PARTS_PER_THREAD = 4

#: Rows in the strided sample that sets an int8 search's limit (:meth:`Int8L2Search._bands`);
#: a search over fewer than four times as many rows scans every row's bounds instead.
SAMPLE_ROWS = 32_768

#: Room for kept rows per part: ``CAP_SLACK`` times the sample's estimate of them, plus
#: ``CAP_MIN`` rows.
CAP_SLACK = 2.0
CAP_MIN = 4096

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
    agrees with ranking every row. The routine is the compiled loop of
    :mod:`kgrag.embed._rescore` when numba is installed, else numpy's ``einsum`` (the two may
    differ in the last bits: one process always uses the same one). ``parallel=False``: one
    thread (for a caller that is already running on the scans' pool).
    """
    ids = np.asarray(ids, dtype=np.int64)
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    query = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
    if len(ids) and (ids.min() < 0 or ids.max() >= len(matrix)):
        raise IndexError(f"row ids must be in 0..{len(matrix) - 1}")
    out = np.empty(len(ids), dtype=np.float32)
    parts = workers() if parallel and len(ids) * matrix.shape[1] >= (1 << 21) else 1
    bounds = np.linspace(0, len(ids), parts + 1).astype(np.int64)
    compiled = _compiled_rows()
    step = max(1, RESCORE_BYTES // max(1, matrix.shape[1] * 4))

    def rescore(p: int) -> None:
        lo, hi = int(bounds[p]), int(bounds[p + 1])
        if compiled is not None:
            compiled(matrix, ids, query, out, lo, hi)
            return
        # numpy: in cache-sized chunks, so rows are read from memory once
        buf = np.empty((min(step, hi - lo), matrix.shape[1]), np.float32)
        for start in range(lo, hi, step):
            stop = min(hi, start + step)
            diff = buf[:stop - start]
            np.take(matrix, ids[start:stop], axis=0, out=diff)
            diff -= query
            np.einsum("ij,ij->i", diff, diff, out=out[start:stop])

    if parts == 1:
        rescore(0)
    else:
        list(get_pool().map(rescore, range(parts)))
    return out


def _compiled_rows() -> Callable[..., None] | None:
    """:func:`kgrag.embed._rescore.squared_rows`, or None without numba."""
    module = compiled_module("kgrag.embed._rescore")
    return None if module is None else module.squared_rows


def kth_smallest(values: np.ndarray, k: int, *, sample: int = 32768) -> float:
    """The k-th smallest of ``values`` (1-based), exactly; a strided sample narrows the
    partition to the values under an estimated threshold, with a full partition whenever the
    sample misleads (as :func:`kgrag.methods.simgrag.candidates.smallest_k`)."""
    n = len(values)
    step = n // sample
    if step >= 4 and k < n // 2:
        probe = values[::step]
        expected = k * len(probe) / n
        rank = min(len(probe) - 1, sample_rank(expected))
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

    def _buffer(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A C-contiguous scratch array of ``shape``, kept per thread and name between searches
        (grown when too small): a fresh 10 MB-per-query array is paged in on first touch (page
        faults, ~15 ms per 60 MB), which is as slow as the int8 scan itself."""
        size = math.prod(shape)
        kept = getattr(self._scratch, name, None)
        if kept is None or kept.size < size or kept.dtype != dtype:
            kept = np.empty(max(size, 0 if kept is None else kept.size), dtype=dtype)
            setattr(self._scratch, name, kept)
        return kept[:size].reshape(shape)

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
        bands = self._bands(queries, k)
        for row, band in enumerate(bands):
            dist = squared_distances(self.vectors, band, queries[row])
            order = top_k_order(dist, k)  # band ids ascend: ties are broken by id
            ids[row], squared[row] = band[order], dist[order]
        self.last_band_sizes = [len(band) for band in bands]
        return squared, ids

    def _bands(self, queries: np.ndarray, k: int) -> list[np.ndarray]:
        """Per query, the ascending ids of the rows that can be among its ``k`` nearest, from
        every row's bounds."""
        lower, upper, margin = self._bounds(queries)
        upper = lower if upper is None else upper

        def band_of(row: int) -> np.ndarray:
            top = kth_smallest(upper[row], k) + float(margin[row])
            return np.flatnonzero(lower[row] <= self._cut(top, float(margin[row]),
                                                          queries[row]))

        # the queries' band selections side by side (one thread each)
        return [band_of(0)] if len(queries) == 1 else list(get_pool().map(band_of,
                                                                          range(len(queries))))

    def _cut(self, top: float, margin: float, query: np.ndarray) -> np.float32:
        """The largest lower bound a row of the answer can have, when ``top`` (margin included)
        is at least the k-th smallest upper bound: a row whose float32 lower bound is above the
        returned float32 cannot be among the ``k`` nearest."""
        grow = 1.0 + 1e-9  # the few float64 operations below
        q64 = query.astype(np.float64)
        q_sq = float(np.dot(q64, q64))
        # every answer row's reported distance is <= limit ...
        limit = (q_sq + top) * (1.0 + self.metric_error) * grow
        # ... and a row whose lower bound is above it cannot be in the answer
        cut = (limit / (1.0 - self.metric_error)) * grow - q_sq + margin
        return _round_up32(cut + abs(cut) * 1e-9)


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
        rank = matvecs(self.vectors, queries,  # q.x
                       out=self._buffer("rank", (len(queries), len(self)), np.float32))
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
        #: queries of the last search whose band came from a full scan of every row's bounds
        self.last_full_scans = 0
        #: ``(step, arrays)`` of the strided sample (:meth:`_sample_rows`), made on first use
        self._sample: tuple[int, tuple[np.ndarray, ...]] | None = None

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

    def _rows(self, ids: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """The per-row arrays a kernel reads (of the rows ``ids`` only: a copy)."""
        arrays = (self.codes, self.scales, self.sq_norms, self.norms, self.residuals,
                  self.row_sums)
        return arrays if ids is None else tuple(np.ascontiguousarray(a[ids]) for a in arrays)

    def _query_codes(self, queries: np.ndarray) -> tuple[np.ndarray, ...]:
        """The per-query arrays a kernel reads: int16 codes, scales, code norms and errors."""
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
        return codes, q_scales.astype(np.float64), q_norms, q_errors

    def _scan(self, rows: tuple[np.ndarray, ...], query_codes: tuple[np.ndarray, ...],
              limits: np.ndarray, cap: int | None, name: str = "all") -> tuple[np.ndarray, ...]:
        """One pass of the kernel over ``rows``: ``(ids, lower, upper, counts, bases)``, in
        the scratch arrays ``name`` (valid until the next scan of that name on this thread).

        ``cap=None``: every row, at its own position (``limits`` must be +inf); else each of
        the parts writes its rows with ``lower <= limits[k]`` from ``bases[p]``, at most
        ``cap`` of them (``counts[p, k]`` counts them all)."""
        m, n = len(limits), len(rows[0])
        parts = self._scan_parts(n, m)
        bounds = np.linspace(0, n, parts + 1).astype(np.int64)
        if cap is None:
            width, bases, caps = n, bounds[:-1], np.diff(bounds)
        else:
            width, bases, caps = parts * cap, np.arange(parts) * cap, np.full(parts, cap)
        ids = self._buffer(f"{name}_ids", (m, width), np.int64)
        lower = self._buffer(f"{name}_lower", (m, width), np.float32)
        upper = self._buffer(f"{name}_upper", (m, width), np.float32)
        counts = np.zeros((parts, m), dtype=np.int64)

        def run(p: int) -> None:
            self._kernel(*rows, *query_codes, limits, ids, lower, upper, counts[p],
                         int(bases[p]), int(caps[p]), int(bounds[p]), int(bounds[p + 1]))

        if parts == 1:
            run(0)
        else:
            for future in [get_pool().submit(run, p) for p in range(parts)]:
                future.result()
        return ids, lower, upper, counts, bases

    def _scan_parts(self, n: int, m: int) -> int:
        """Row ranges a scan of ``n`` rows for ``m`` query vectors is cut into: several per
        thread, so that on a shared machine a thread that loses its core for a while no longer
        holds the whole scan back (the others take its remaining ranges)."""
        parts = SCAN_PARTS_PER_THREAD * workers() if n * self.dim * m >= (1 << 22) else 1
        return max(1, min(parts, n // 4096))

    def _bounds(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        every = np.full(len(queries), np.inf, dtype=np.float32)
        _, lower, upper, _, _ = self._scan(self._rows(), self._query_codes(queries), every,
                                           None)
        return lower, upper, np.zeros(len(queries))

    def _bands(self, queries: np.ndarray, k: int) -> list[np.ndarray]:
        """The bands without a full-length array: a scan of a strided sample of the rows sets
        each query's limit a little above where its band should end, the scan over all rows
        keeps only the rows under it, and the k-th upper bound is then taken among those.

        Exact whatever the sample: if at least ``k`` kept rows have their *upper* bound under
        the limit, every row with an upper bound up to the true k-th smallest one was kept (its
        lower bound is smaller still), so the k-th smallest kept upper bound *is* that value;
        and if the cut it gives is under the limit, every band row was kept. A query for which
        either fails (a sample that misled, or more rows than the estimate allowed for) is
        scanned again in full (``last_full_scans`` counts them)."""
        n, m = len(self), len(queries)
        step = n // SAMPLE_ROWS
        self.last_full_scans = 0
        if step < 4 or k >= n // 4:  # small: the full scan is as cheap
            self.last_full_scans = m
            return super()._bands(queries, k)
        query_codes = self._query_codes(queries)
        sample = self._sample_rows(step)
        every = np.full(m, np.inf, dtype=np.float32)
        _, s_lower, s_upper, _, _ = self._scan(sample, query_codes, every, None, "sample")
        size = len(sample[0])
        rank = min(size - 1, sample_rank(k * size / n))
        limits = np.empty(m, dtype=np.float32)
        for row in range(m):
            top = float(np.partition(s_upper[row], rank)[rank])
            limits[row] = self._cut(top, 0.0, queries[row])
        kept = max(int((s_lower[row] <= limits[row]).sum()) for row in range(m))
        cap = int(CAP_SLACK * kept * (n / size) / self._scan_parts(n, m)) + CAP_MIN
        ids, lower, upper, counts, bases = self._scan(self._rows(), query_codes, limits, cap,
                                                      "kept")
        bands: list[np.ndarray | None] = []
        for row in range(m):
            if (counts[:, row] > cap).any():
                bands.append(None)
                continue
            pieces = [slice(int(b), int(b + c)) for b, c in zip(bases, counts[:, row])]
            got_ids = np.concatenate([ids[row, p] for p in pieces])  # ascending: parts in order
            got_lower = np.concatenate([lower[row, p] for p in pieces])
            got_upper = np.concatenate([upper[row, p] for p in pieces])
            bands.append(band_under_limit(got_ids, got_lower, got_upper, limits[row], k,
                                          functools.partial(self._cut, margin=0.0,
                                                            query=queries[row])))
        missing = [row for row, band in enumerate(bands) if band is None]
        if missing:
            self.last_full_scans = len(missing)
            for row, band in zip(missing, super()._bands(queries[missing], k)):
                bands[row] = band
        return cast(list[np.ndarray], bands)  # every None replaced just above

    def _sample_rows(self, step: int) -> tuple[np.ndarray, ...]:
        """Every ``step``-th row's arrays (a copy, made once: ~13 MB for 2.5M x 384 rows)."""
        kept = self._sample
        if kept is None or kept[0] != step:
            kept = self._sample = (step, self._rows(np.arange(0, len(self), step)))
        return kept[1]


def band_under_limit(ids: np.ndarray, lower: np.ndarray, upper: np.ndarray, limit: np.float32,
                     k: int, cut_of: Callable[[float], np.float32]) -> np.ndarray | None:
    """The band from the rows a scan kept -- those with ``lower <= limit``, ids ascending --
    or None when they may not hold it: fewer than ``k`` kept rows with ``upper <= limit`` (then
    the k-th smallest upper bound of *all* rows may lie above the limit, among rows not kept),
    or a cut (``cut_of`` the k-th smallest upper bound) above the limit (band rows not kept)."""
    if np.count_nonzero(upper <= limit) < k:
        return None
    cut = cut_of(kth_smallest(upper, k))
    return ids[lower <= cut] if cut <= limit else None


def sample_rank(expected: float) -> int:
    """The rank in the sample whose upper bound sets the limit, for a sample expected to hold
    ``expected`` answer rows: four standard deviations (and 8 rows) above, so that the full
    scan almost never needs to run again."""
    return int(expected + 4.0 * math.sqrt(expected) + 8)


def int8_available() -> bool:
    """Whether :class:`Int8L2Search` can be built (numba importable)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True
