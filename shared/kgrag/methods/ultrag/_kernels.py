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

**Layer norm, ReLU and short-cut** (:func:`norm_relu_add`). After each layer's two matrix
products (PyTorch), ``relu(layer_norm(lin)) + h`` is one pass per row here instead of three
PyTorch operations that each read and write the block (and a new tensor for the layer norm):
8,192 rows 0.86 -> 0.27-0.36 ms on one thread. The row sums are reordered for vector lanes
(``fastmath``), so a row differs from PyTorch's by float32 rounding (about 2e-6). An earlier
per-row version without reordering measured slower than PyTorch; the reordering is what pays.
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


#: the model's state width: a batch of one is summed with loops of this constant length,
#: which LLVM unrolls and vectorises fully (MetaQA, one layer's sums: 10-13 -> 6.5 ms, with
#: the single-sender slots below)
STATE_WIDTH = 64


@njit(nogil=True, cache=True, inline="always")
def _receive(h, flat, per_type, start, into, v, node_start, slot_start, slot_types, senders,
             acc, bag, width):  # pragma: no cover - compiled; inlined into both kernels below
    """``into = start + sum over v's slots of per_type[type] * sum of the slot's senders' h``
    (``acc`` / ``bag``: row-sized scratch; ``width``: the row length, a constant where the
    caller passes one). A slot with one sender (two thirds of MetaQA's) scales that sender's
    row directly, without the bag: the same products and sums."""
    edges = senders.shape[0]
    for j in range(width):
        acc[j] = 0.0
    for s in range(node_start[v], node_start[v + 1]):
        first, end = slot_start[s], slot_start[s + 1]
        for e in range(first, end):
            if e + AHEAD < edges:
                base = senders[e + AHEAD] * width
                for line in range(0, width, LINE_FLOATS):
                    prefetch(flat, base + line)
        kind = per_type[slot_types[s]]
        if end - first == 1:
            row = h[senders[first]]
            for j in range(width):
                acc[j] += row[j] * kind[j]
            continue
        for j in range(width):
            bag[j] = 0.0
        for e in range(first, end):
            row = h[senders[e]]
            for j in range(width):
                bag[j] += row[j]
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
    if width == STATE_WIDTH:
        for v in range(lo, hi):
            _receive(h, flat, per_type, boundary[v], out[v], v, node_start, slot_start,
                     slot_types, senders, acc, bag, STATE_WIDTH)
    else:
        for v in range(lo, hi):
            _receive(h, flat, per_type, boundary[v], out[v], v, node_start, slot_start,
                     slot_types, senders, acc, bag, width)


@njit(nogil=True, cache=True)
def typed_sum_rows(h, per_type, boundary, out, rows, node_start, slot_start, slot_types,
                   senders):  # pragma: no cover - compiled; tested through TypedAdjacency
    """:func:`typed_sum` for the receivers ``rows`` only, into ``out[i]`` for ``rows[i]``
    (``out``: ``(len(rows), width)``): the same sums in the same order, row by row."""
    width = h.shape[1]
    flat = h.reshape(-1)
    acc = np.empty(width, dtype=np.float32)
    bag = np.empty(width, dtype=np.float32)
    if width == STATE_WIDTH:
        for i in range(rows.shape[0]):
            _receive(h, flat, per_type, boundary[rows[i]], out[i], rows[i], node_start,
                     slot_start, slot_types, senders, acc, bag, STATE_WIDTH)
    else:
        for i in range(rows.shape[0]):
            _receive(h, flat, per_type, boundary[rows[i]], out[i], rows[i], node_start,
                     slot_start, slot_types, senders, acc, bag, width)


@njit(nogil=True, cache=True, fastmath=True, inline="always")
def _norm_relu_row(x, gamma, beta, eps, short_scale, short, into):  # pragma: no cover - compiled
    """``into = relu(layer_norm(x) * gamma + beta) + short_scale * short`` for one row."""
    width = x.shape[0]
    inv = np.float32(1.0 / width)
    zero = np.float32(0.0)
    total = zero
    for k in range(width):
        total += x[k]
    mean = total * inv
    spread = zero
    for k in range(width):
        d = x[k] - mean
        spread += d * d
    scale = np.float32(1.0) / np.sqrt(spread * inv + np.float32(eps))
    for k in range(width):
        y = (x[k] - mean) * scale * gamma[k] + beta[k]
        into[k] = (y if y > zero else zero) + short_scale * short[k]


@njit(nogil=True, cache=True, fastmath=True)
def norm_relu_add(lin, gamma, beta, eps, h, out):  # pragma: no cover - compiled; tested via model
    """``out = relu(layer_norm(lin) * gamma + beta) + h`` row by row (PyTorch's layer norm: the
    biased variance, ``eps`` inside the square root); ``lin`` / ``h`` / ``out``: ``(rows,
    width)`` float32, ``out`` may be ``lin``."""
    one = np.float32(1.0)
    for i in range(lin.shape[0]):
        _norm_relu_row(lin[i], gamma, beta, eps, one, h[i], out[i])


@njit(nogil=True, cache=True, fastmath=True)
def first_layer(x, bias, direct, per_type, query, gamma, beta, eps, out, node_start, slot_start,
                slot_types, senders, lo, hi):  # pragma: no cover - compiled; tested via model
    """Receivers ``lo:hi`` of the first entity layer from a dense input set, factorised.

    The first layer's states are the boundary ``h[v] = x[v] q`` (one scalar per node times the
    query vector), so its message sums need the inputs' scalars only: ``update[v] = x[v] q +
    sum over v's slots of c_slot (rel[type] * q)`` with ``c_slot`` the sum of ``x`` over the
    slot's senders, and the linear layer ``b + Ws h[v] + Wu update[v]`` becomes ``bias +
    x[v] direct + sum over slots of c_slot per_type[type]``, where ``direct = (Ws + Wu) q`` and
    ``per_type[t] = Wu (rel[t] * q)`` are computed once per batch row. Then the layer norm,
    ReLU and the short-cut ``x[v] q``. ``x``: ``(batch, nodes)``; ``direct`` / ``query``:
    ``(batch, width)``; ``per_type``: ``(batch, types, width)``; ``out``: ``(nodes, batch,
    width)``. The same sums as the plain layer, grouped differently (float rounding)."""
    batch, width = x.shape[0], bias.shape[0]
    lin = np.empty(width, dtype=np.float32)
    for v in range(lo, hi):
        for j in range(batch):
            own = x[j, v]
            for k in range(width):
                lin[k] = bias[k] + own * direct[j, k]
            for s in range(node_start[v], node_start[v + 1]):
                total = np.float32(0.0)
                for e in range(slot_start[s], slot_start[s + 1]):
                    total += x[j, senders[e]]
                kind = per_type[j, slot_types[s]]
                for k in range(width):
                    lin[k] += total * kind[k]
            _norm_relu_row(lin, gamma, beta, eps, own, query[j], out[v, j])
