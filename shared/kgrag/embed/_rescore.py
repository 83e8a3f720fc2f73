"""The compiled form of :func:`kgrag.embed.exact_l2.squared_distances` (numba; imported only
when numba is installed -- without it the same metric is a numpy ``einsum``).

An exact search re-scores its band -- ~35,000 of 2.5M rows of 384 float32 values for SimGRAG's
k(n) = 16384 -- rows scattered over a 3.8 GB matrix. numpy's gather, subtract and ``einsum``
make three passes over each chunk; this loop reads each row once and sums while it streams in:
15 -> 6 ms per 35,000-row band on two cores (AVX2 code on a Sapphire Rapids guest).
"""

from __future__ import annotations

import numpy as np
from numba import njit


# reassociation (a vectorised sum) and fused multiply-adds only: NaN and infinity keep their
# meaning. The error bound of the metric (gamma_{d+2}) holds in any summation order.
@njit(nogil=True, fastmath={"reassoc", "contract"}, cache=True)
def squared_rows(matrix, ids, query, out, lo, hi):  # pragma: no cover - compiled
    """``out[t] = |matrix[ids[t]] - query|^2`` (float32 sum) for ``t`` in ``lo:hi``. Each value
    depends only on its row and ``query`` (the same loop for every row)."""
    d = matrix.shape[1]
    for t in range(lo, hi):
        row = ids[t]
        total = np.float32(0.0)
        for j in range(d):
            diff = matrix[row, j] - query[j]
            total += diff * diff
        out[t] = total
