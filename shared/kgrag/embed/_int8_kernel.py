"""Numba kernels of :class:`kgrag.embed.exact_l2.Int8L2Search` (imported only when that index is
built, so numba stays optional).

One pass over a block of int8 rows scores every row against all of a batch's int16 query
vectors while the row is in L1, in exact integer arithmetic, and writes each row's lower and
upper bound of ``|x_i|^2 - 2 q . x_i`` directly, so the caller makes no further pass over the
rows. ``nogil=True`` lets the row blocks run on :mod:`kgrag.embed.similarity`'s thread pool.

Two interchangeable integer dot products (same int32 results, so the same bounds):

* :func:`scan_bounds` -- portable: LLVM vectorises ``int16 * int8`` into ``vpmaddwd``.
* :func:`scan_bounds_vnni` -- AVX-512 VNNI (``vpdpbusd``: 64 unsigned-by-signed byte products
  per instruction). The int16 query is split into bytes, ``q = 256 (h - 128) + l`` with ``h``
  and ``l`` in 0..255, so ``q . x = 256 (h . x - 128 sum(x)) + l . x`` with ``sum(x)`` stored per
  row; about a third of the instructions of the portable loop. Needs rows padded to 64 bytes.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@njit(nogil=True, cache=True)
def _finish(center, size, residual, norm, q_norm, q_error):  # pragma: no cover - compiled
    """The bound of ``center``: ``2 (|q~| r_i + |q - q~| |x_i|)`` plus a relative 1e-6 slack
    that covers the float64 arithmetic and the float32 rounding of the stored bounds."""
    return 2.0 * (q_norm * residual + q_error * norm) + 1e-6 * size * size + 1e-30


@njit(nogil=True, cache=True)
def scan_bounds(codes, scales, sq_norms, norms, residuals, row_sums, queries, q_scales, q_norms,
                q_errors, lower, upper, lo, hi):  # pragma: no cover - compiled; tested via caller
    """Rows ``lo:hi``: ``lower[k, i] <= |x_i|^2 - 2 q_k . x_i <= upper[k, i]``.

    ``codes`` (n, d) int8 with ``x_i ~ scales[i] * codes[i]``; ``residuals[i] >= |x_i - that|``;
    ``norms[i] >= |x_i|``; ``sq_norms[i] = |x_i|^2`` (float64). ``queries`` (m, d) int16 with
    ``q_k ~ q_scales[k] * queries[k]``, ``q_norms[k] >= |that|``, ``q_errors[k] >= |q_k - that|``.
    The exact value is ``center +- 2 (|q~| r_i + |q - q~| |x_i|)`` (Cauchy-Schwarz on both
    quantisation errors). ``row_sums`` is unused here (same signature as the VNNI kernel).
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
            bound = _finish(center, n + r + q_norms[k] + q_errors[k], r, n, q_norms[k],
                            q_errors[k])
            lower[k, i] = center - bound
            upper[k, i] = center + bound


def _vnni_sums(context, builder, signature, args):
    """LLVM IR of the shared loop: two ``vpdpbusd`` accumulators (high and low query bytes)
    over the same code loads; returns the two 16-lane int32 vectors and the reduce function."""
    high_arr, low_arr, q_off, codes_arr, x_off, n_blocks = args
    v16 = ir.VectorType(ir.IntType(32), 16)

    def pointer(arr, arg_type, offset):
        data = context.make_array(arg_type)(context, builder, arr).data
        return builder.bitcast(builder.gep(data, [offset]), v16.as_pointer())

    ph = pointer(high_arr, signature.args[0], q_off)
    pl = pointer(low_arr, signature.args[1], q_off)
    px = pointer(codes_arr, signature.args[3], x_off)
    vnni = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(v16, [v16, v16, v16]), "llvm.x86.avx512.vpdpbusd.512")
    acc_h = cgutils.alloca_once_value(builder, ir.Constant(v16, None))
    acc_l = cgutils.alloca_once_value(builder, ir.Constant(v16, None))
    with cgutils.for_range(builder, n_blocks) as loop:
        x = builder.load(builder.gep(px, [loop.index]), align=1)
        h = builder.load(builder.gep(ph, [loop.index]), align=1)
        low_v = builder.load(builder.gep(pl, [loop.index]), align=1)
        builder.store(builder.call(vnni, [builder.load(acc_h), h, x]), acc_h)
        builder.store(builder.call(vnni, [builder.load(acc_l), low_v, x]), acc_l)
    reduce = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.IntType(32), [v16]), "llvm.vector.reduce.add.v16i32")
    return builder.load(acc_h), builder.load(acc_l), reduce


@intrinsic
def _dot_u8s8_pair(typingctx, high, low, q_offset, codes, x_offset, blocks):
    """``(sum(high[q:q+64b] * codes[x:x+64b]), sum(low[...] * codes[...]))``: unsigned query
    bytes times signed code bytes, two ``vpdpbusd`` accumulators over the same code loads."""
    pair = types.UniTuple(types.int32, 2)
    sig = pair(high, low, types.intp, codes, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        acc_h, acc_l, reduce = _vnni_sums(context, builder, signature, args)
        sums = (builder.call(reduce, [acc_h]), builder.call(reduce, [acc_l]))
        return context.make_tuple(builder, signature.return_type, sums)

    return sig, codegen


@intrinsic
def _dot_u8s8_joined(typingctx, high, low, q_offset, codes, x_offset, blocks):
    """``256 * sum(high . codes) + sum(low . codes)`` over the same bytes as
    :func:`_dot_u8s8_pair`, joined lane by lane before one horizontal sum (half the
    reductions). Each lane holds at most ``blocks * 4`` products of at most 255 * 127, so the
    joined lane stays below 2**31 for rows up to 4,096 bytes (the caller checks)."""
    sig = types.int32(high, low, types.intp, codes, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        acc_h, acc_l, reduce = _vnni_sums(context, builder, signature, args)
        shift = ir.Constant(acc_h.type, [ir.Constant(ir.IntType(32), 8)] * 16)
        return builder.call(reduce, [builder.add(builder.shl(acc_h, shift), acc_l)])

    return sig, codegen


@njit(nogil=True, cache=True)
def scan_bounds_vnni(codes, scales, sq_norms, norms, residuals, row_sums, queries, q_scales,
                     q_norms, q_errors, lower, upper, lo, hi):  # pragma: no cover - compiled
    """:func:`scan_bounds` with AVX-512 VNNI; ``codes`` rows padded with zeros to a multiple of
    64 bytes, ``row_sums[i] = sum(codes[i])``. ``queries`` is the int16 query codes, padded to
    the same width; the same int32 products, so the same bounds."""
    m, width = queries.shape
    blocks = width // 64
    joined = width <= 4096  # lanes of the joined sum stay in int32 (_dot_u8s8_joined)
    high = np.empty((m, width), dtype=np.uint8)
    low = np.empty((m, width), dtype=np.uint8)
    for k in range(m):
        for j in range(width):
            v = np.int32(queries[k, j])
            low[k, j] = np.uint8(v & 255)
            high[k, j] = np.uint8((v >> 8) + 128)
    flat_codes = codes.reshape(-1)
    flat_high = high.reshape(-1)
    flat_low = low.reshape(-1)
    for i in range(lo, hi):
        scale = np.float64(scales[i])
        n = np.float64(norms[i])
        r = np.float64(residuals[i])
        base = sq_norms[i]
        offset = 128 * np.int64(row_sums[i])
        for k in range(m):
            if joined:
                acc = np.int64(_dot_u8s8_joined(flat_high, flat_low, k * width, flat_codes,
                                                i * width, blocks)) - 256 * offset
            else:
                acc_h, acc_l = _dot_u8s8_pair(flat_high, flat_low, k * width, flat_codes,
                                              i * width, blocks)
                acc = 256 * (np.int64(acc_h) - offset) + np.int64(acc_l)
            center = base - 2.0 * (np.float64(acc) * (scale * q_scales[k]))
            bound = _finish(center, n + r + q_norms[k] + q_errors[k], r, n, q_norms[k],
                            q_errors[k])
            lower[k, i] = center - bound
            upper[k, i] = center + bound


def has_vnni() -> bool:
    """Whether this CPU runs :func:`scan_bounds_vnni` (AVX-512 BW + VNNI)."""
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    return bool(features.get("avx512vnni")) and bool(features.get("avx512bw"))
