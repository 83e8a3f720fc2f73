"""Numba kernel of :class:`kgrag.embed.exact_l2.Int8L2Search` (imported only when that index is
built, so numba stays optional).

One pass over a block of int8 rows scores every row against all of a batch's int16 query
vectors while the row is in L1 (``acc = Q . X_i`` in exact int32 arithmetic; LLVM turns the loop
into ``vpmaddwd`` multiply-adds), and writes each row's lower and upper bound of
``|x_i|^2 - 2 q . x_i`` directly, so the caller makes no further pass over the rows.
``nogil=True`` lets the row blocks run on :mod:`kgrag.embed.similarity`'s thread pool.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def scan_bounds(codes, scales, sq_norms, norms, residuals, queries, q_scales, q_norms, q_errors,
                lower, upper, lo, hi):  # pragma: no cover - compiled; tested through the caller
    """Rows ``lo:hi``: ``lower[k, i] <= |x_i|^2 - 2 q_k . x_i <= upper[k, i]``.

    ``codes`` (n, d) int8 with ``x_i ~ scales[i] * codes[i]``; ``residuals[i] >= |x_i - that|``;
    ``norms[i] >= |x_i|``; ``sq_norms[i] = |x_i|^2`` (float64). ``queries`` (m, d) int16 with
    ``q_k ~ q_scales[k] * queries[k]``, ``q_norms[k] >= |that|``, ``q_errors[k] >= |q_k - that|``.
    The exact value is ``center +- 2 (|q~| r_i + |q - q~| |x_i|)``; a relative 1e-6 slack covers
    the float64 arithmetic here and the float32 rounding of the stored bounds.
    """
    m, d = queries.shape
    for i in range(lo, hi):
        scale = np.float64(scales[i])
        n = np.float64(norms[i])
        r = np.float64(residuals[i])
        base = sq_norms[i]
        for k in range(m):
            acc = np.int32(0)
            for j in range(d):
                acc += np.int32(queries[k, j]) * np.int32(codes[i, j])
            center = base - 2.0 * (np.float64(acc) * (scale * q_scales[k]))
            size = n + r + q_norms[k] + q_errors[k]
            bound = 2.0 * (q_norms[k] * r + q_errors[k] * n) + 1e-6 * size * size + 1e-30
            lower[k, i] = center - bound
            upper[k, i] = center + bound
