"""Fused passes of UltraQuery's forward pass (numba; used when the ``fast`` extra is installed).

**Message sums** (:func:`typed_sum`).

:meth:`kgrag.methods.ultrag.ultraquery.TypedAdjacency.aggregate` computes, per receiver ``v``,
``boundary[v] + sum over v's (type t) slots of rel[t] * (sum of h over the slot's senders)``.
Without numba that is five PyTorch operations per block of receivers (bag-sum, gather of the
slots' type vectors, product, second bag-sum, add), each writing a block-sized tensor that the
next one reads back. Here each receiver's row is built in two small accumulators that stay in
registers and L1, reading every sender's row once and writing the output row once: on MetaQA
(43k nodes, 267k typed edges, 64 floats) one layer's sums took 13.5-18.6 ms with the PyTorch
operations and 4-5 ms here when timed alone; whole projections, alternated with the PyTorch
path, 86-98 -> 72-87 ms (two threads).

The arithmetic is the same sums in the same order as the bag-sums (senders ascending within a
slot, a receiver's slots in type order, the boundary added last), so results agree with the
PyTorch path to float32 rounding (tests compare both and a per-edge reference).

Not fused: the layer norm, ReLU and short-cut after each layer's matrix products. A numba pass
over each row measured slower than PyTorch's three vectorised operations (a MetaQA layer's
update 9.5 against 7.9 ms; the row sums of a layer norm do not vectorise without reordering
them), so the update stays in PyTorch.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kgrag.embed._prefetch import prefetch

#: how many edges ahead a sender's row is prefetched. The senders' rows are gathered at
#: random from a table larger than L2 (MetaQA: 43k x 64 floats, 11 MB), so without it every
#: edge waits for its row: one MetaQA layer took 7-13 ms on one thread, 4.4-4.8 ms with rows
#: prefetched 8 edges ahead (4: 6-10 ms, 16: 5.6 ms, 32: 5.4-9 ms; Sapphire Rapids guest).
AHEAD = 8
#: float32 values per cache line
LINE_FLOATS = 16


@njit(nogil=True, cache=True, inline="always")
def _receive(h, flat, per_type, start, into, v, node_start, slot_start, slot_types, senders,
             acc, bag):  # pragma: no cover - compiled; inlined into both kernels below
    """``into = start + sum over v's slots of per_type[type] * sum of the slot's senders' h``
    (``acc`` / ``bag``: row-sized scratch)."""
    width = h.shape[1]
    edges = senders.shape[0]
    acc[:] = 0.0
    for s in range(node_start[v], node_start[v + 1]):
        bag[:] = 0.0
        for e in range(slot_start[s], slot_start[s + 1]):
            if e + AHEAD < edges:
                base = senders[e + AHEAD] * width
                for line in range(0, width, LINE_FLOATS):
                    prefetch(flat, base + line)
            row = h[senders[e]]
            for j in range(width):
                bag[j] += row[j]
        kind = per_type[slot_types[s]]
        for j in range(width):
            acc[j] += bag[j] * kind[j]
    for j in range(width):
        into[j] = acc[j] + start[j]


@njit(nogil=True, cache=True)
def typed_sum(h, per_type, boundary, out, node_start, slot_start, slot_types, senders,
              lo, hi):  # pragma: no cover - compiled; tested through TypedAdjacency
    """Receivers ``lo:hi`` of ``out = boundary + sum_slots per_type[type] * sum_senders h``.

    ``h`` / ``boundary`` / ``out``: ``(nodes, width)`` float32, C-contiguous; ``per_type``:
    ``(types, width)``; ``node_start[v]:node_start[v + 1]`` are ``v``'s slots,
    ``slot_start[s]:slot_start[s + 1]`` the positions of slot ``s``'s senders in ``senders``.
    """
    width = h.shape[1]
    flat = h.reshape(-1)
    acc = np.empty(width, dtype=np.float32)
    bag = np.empty(width, dtype=np.float32)
    for v in range(lo, hi):
        _receive(h, flat, per_type, boundary[v], out[v], v, node_start, slot_start, slot_types,
                 senders, acc, bag)


@njit(nogil=True, cache=True)
def typed_sum_rows(h, per_type, boundary, out, rows, node_start, slot_start, slot_types,
                   senders):  # pragma: no cover - compiled; tested through TypedAdjacency
    """:func:`typed_sum` for the receivers ``rows`` only, into ``out[i]`` for ``rows[i]``
    (``out``: ``(len(rows), width)``): the same sums in the same order, row by row."""
    width = h.shape[1]
    flat = h.reshape(-1)
    acc = np.empty(width, dtype=np.float32)
    bag = np.empty(width, dtype=np.float32)
    for i in range(rows.shape[0]):
        v = rows[i]
        _receive(h, flat, per_type, boundary[v], out[i], v, node_start, slot_start, slot_types,
                 senders, acc, bag)
