"""Bounds and selection shared by every int8 scan kernel (:mod:`kgrag.embed._int8_kernel`'s
portable loop and :mod:`kgrag.embed._int8_x86`'s AVX2 / VNNI kernels): the same float64
arithmetic turns each row's exact integer product into its lower and upper bound, so all
kernels give the same bounds bit for bit, and the same test keeps the rows a search needs. A
module of its own so that neither kernel module imports the other. The code-row prefetch every
kernel issues is here too (:func:`kgrag.embed._prefetch.prefetch`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kgrag.embed._prefetch import prefetch


@njit(nogil=True, cache=True)
def _finish(center, size, residual, norm, q_norm, q_error):  # pragma: no cover - compiled
    """The bound of ``center``: ``2 (|q~| r_i + |q - q~| |x_i|)`` plus a relative 1e-6 slack
    that covers the float64 arithmetic and the float32 rounding of the stored bounds."""
    return 2.0 * (q_norm * residual + q_error * norm) + 1e-6 * size * size + 1e-30


#: rows scored before their bounds are computed and selected (the int32 products and the
#: float32 bounds of a block stay in L1)
ROW_BLOCK = 256


@njit(nogil=True, cache=True)
def select_block(dots, start, stop, scales, sq_norms, norms, residuals, q_scales, q_norms,
                 q_errors, limits, ids, lower, upper, counts, base, cap,
                 scratch):  # pragma: no cover - compiled; tested via callers
    """Rows ``start:stop`` from their exact integer products ``dots[k, i - start]``: each row's
    float32 bounds (the same arithmetic in every kernel, so the same bounds bit for bit),
    computed for the whole block at once so that LLVM vectorises it, then the rows whose lower
    bound is at most ``limits[k]`` appended for query ``k``: row id, lower and upper bound at
    ``[k, base + counts[k]]``, ``counts[k]`` incremented. Past ``cap`` rows a query's rows are
    counted but not written (the caller sees ``counts[k] > cap`` and scans again).

    With ``limits`` +inf, ``base = lo`` and ``cap = hi - lo`` every row of a range ``lo:hi`` is
    written at its own id: the full ``lower`` / ``upper`` arrays."""
    size = stop - start
    low = scratch[0]
    high = scratch[1]
    # the block's rows as views indexed from 0: numba then knows no index is negative and
    # LLVM loads them as vectors (indexed by the row id, each load was a scalar one behind a
    # negative-index check: 6 -> 1 ns per row and query)
    block_scales = scales[start:stop]
    block_sq_norms = sq_norms[start:stop]
    block_norms = norms[start:stop]
    block_residuals = residuals[start:stop]
    for k in range(dots.shape[0]):
        qs = q_scales[k]
        qn = q_norms[k]
        qe = q_errors[k]
        row_dots = dots[k]
        for j in range(size):
            n = np.float64(block_norms[j])
            r = np.float64(block_residuals[j])
            center = block_sq_norms[j] - 2.0 * (np.float64(row_dots[j])
                                                * (np.float64(block_scales[j]) * qs))
            bound = _finish(center, n + r + qn + qe, r, n, qn, qe)
            low[j] = center - bound
            high[j] = center + bound
        limit = limits[k]
        count = counts[k]
        for j in range(size):
            if low[j] <= limit:  # rare in a selecting scan: a well-predicted branch
                if count < cap:
                    at = base + count
                    ids[k, at] = start + j
                    lower[k, at] = low[j]
                    upper[k, at] = high[j]
                count += 1
        counts[k] = count


#: how far ahead of the row being scored its code bytes are prefetched. The hardware
#: prefetchers alone left the scan at 60 % of the memory bandwidth (2.5M x 384 codes, one query
#: vector, two threads: 83 ms against 50 ms for a plain sum of the same bytes); asking for the
#: lines ~10 rows ahead keeps enough loads in flight: 45 ms. 1.5 KB ahead gave 54 ms, 8 KB
#: 55 ms, 16 KB 65 ms (Sapphire Rapids guest; `benchmarks/int8_kernels.py`).
PREFETCH_AHEAD = 4096
#: bytes per cache line (one prefetch each)
LINE = 64


@njit(nogil=True, cache=True)
def _prefetch_row(flat_codes, row_offset, width, end):  # pragma: no cover - compiled
    """Prefetch the code row that starts :data:`PREFETCH_AHEAD` bytes after ``row_offset``
    (each of its cache lines), unless that is past ``end``."""
    ahead = row_offset + PREFETCH_AHEAD
    j = 0
    while j < width and ahead + j < end:
        prefetch(flat_codes, ahead + j)
        j += LINE
