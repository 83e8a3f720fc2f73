"""x86 kernels of :class:`kgrag.embed.exact_l2.Int8L2Search` (LLVM x86 intrinsics through numba).

Imported by :func:`kgrag.embed._int8_kernel.load` only when :func:`~kgrag.embed._int8_kernel.
best_kernel` (or the caller) picks one of them on a CPU that has the instructions; everything
else uses the portable loop. Both give exactly the portable kernel's int32 products, hence the
same bounds bit for bit (tested against it).

* :func:`scan_bounds_avx2` -- AVX2. Per 16 code bytes: one ``vpmovsxbw`` (bytes to int16,
  shared by every query vector) and per query vector one ``vpmaddwd`` (16 ``int16 * int16``
  products added in pairs into 8 int32 lanes) and one ``vpaddd``. An int16 query times an int8
  code is at most ``32767 * 127``, a pair twice that: no lane can overflow for rows up to
  ``2**31 / (2 * 32767 * 127)`` = 258 pairs per lane, i.e. 4,128 dimensions (the caller's
  query scale keeps ``d * 127 * QMAX`` inside int32, which bounds every partial sum too).
  Rows are scored two at a time (:func:`_avx2_rows`: each query block is loaded once for
  both rows, so the loads no longer limit the loop) and in blocks; the bounds of a block are
  then computed and selected by the shared :func:`~kgrag.embed._int8_bounds.select_block`.
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

from kgrag.embed._int8_bounds import ROW_BLOCK, _prefetch_row, select_block


def _avx2_dots(count: int):
    """An intrinsic ``(queries, q_offset, q_stride, codes, x_offset, y_offset, blocks) ->
    2 * count int32``: the products of two code rows (``blocks`` x 16 bytes from ``x_offset``
    and from ``y_offset``) with ``count`` int16 query rows (from ``q_offset``, ``q_stride``
    apart), the first row's ``count`` first. Each code block is loaded and sign-extended once
    for all queries, and each query block loaded once for both rows."""

    @intrinsic
    def dots(typingctx, queries, q_offset, q_stride, codes, x_offset, y_offset, blocks):
        sig = types.UniTuple(types.int32, 2 * count)(queries, types.intp, types.intp, codes,
                                                     types.intp, types.intp, types.intp)

        def codegen(context, builder, signature, args):
            q_arr, q_off, q_step, c_arr, x_off, y_off, n_blocks = args
            i64 = ir.IntType(64)
            v16i8 = ir.VectorType(ir.IntType(8), 16)
            v16i16 = ir.VectorType(ir.IntType(16), 16)
            v8i32 = ir.VectorType(ir.IntType(32), 8)
            q_data = context.make_array(signature.args[0])(context, builder, q_arr).data
            c_data = context.make_array(signature.args[3])(context, builder, c_arr).data
            code_rows = [builder.bitcast(builder.gep(c_data, [off]), v16i8.as_pointer())
                         for off in (x_off, y_off)]
            pqs = [builder.bitcast(builder.gep(q_data, [builder.add(
                q_off, builder.mul(q_step, ir.Constant(i64, k)))]), v16i16.as_pointer())
                for k in range(count)]
            madd = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(v8i32, [v16i16, v16i16]),
                "llvm.x86.avx2.pmadd.wd")
            accs = [[cgutils.alloca_once_value(builder, ir.Constant(v8i32, None))
                     for _ in range(count)] for _ in code_rows]
            with cgutils.for_range(builder, n_blocks) as loop:
                xs = [builder.sext(builder.load(builder.gep(px, [loop.index]), align=1), v16i16)
                      for px in code_rows]
                for k, pq in enumerate(pqs):
                    q = builder.load(builder.gep(pq, [loop.index]), align=2)
                    for x, row_accs in zip(xs, accs):
                        acc = row_accs[k]
                        builder.store(builder.add(builder.load(acc),
                                                  builder.call(madd, [x, q])), acc)
            reduce = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.IntType(32), [v8i32]),
                "llvm.vector.reduce.add.v8i32")
            sums = [builder.call(reduce, [builder.load(acc)]) for row_accs in accs
                    for acc in row_accs]
            return context.make_tuple(builder, signature.return_type, sums)

        return sig, codegen

    return dots


_pair1, _pair2, _pair3, _pair4 = (_avx2_dots(c) for c in (1, 2, 3, 4))


@njit(nogil=True, cache=True)
def _avx2_rows(flat_q, width, flat_codes, x_offset, y_offset, blocks, m, dots, column):
    """Every query's product with the code rows at ``x_offset`` and ``y_offset`` into
    ``dots[:, column]`` and ``dots[:, column + 1]``, four queries at a time (each row read from
    L1 once per group of four)."""
    k = 0
    while k < m:
        rest = m - k
        if rest >= 4:
            a, b, c, d, e, f, g, h = _pair4(flat_q, k * width, width, flat_codes, x_offset,
                                            y_offset, blocks)
            dots[k, column], dots[k + 1, column] = a, b
            dots[k + 2, column], dots[k + 3, column] = c, d
            dots[k, column + 1], dots[k + 1, column + 1] = e, f
            dots[k + 2, column + 1], dots[k + 3, column + 1] = g, h
            k += 4
        elif rest == 3:
            a, b, c, d, e, f = _pair3(flat_q, k * width, width, flat_codes, x_offset,
                                      y_offset, blocks)
            dots[k, column], dots[k + 1, column], dots[k + 2, column] = a, b, c
            dots[k, column + 1], dots[k + 1, column + 1], dots[k + 2, column + 1] = d, e, f
            k += 3
        elif rest == 2:
            a, b, c, d = _pair2(flat_q, k * width, width, flat_codes, x_offset, y_offset,
                                blocks)
            dots[k, column], dots[k + 1, column] = a, b
            dots[k, column + 1], dots[k + 1, column + 1] = c, d
            k += 2
        else:
            a, b = _pair1(flat_q, k * width, width, flat_codes, x_offset, y_offset, blocks)
            dots[k, column], dots[k, column + 1] = a, b
            k += 1


@njit(nogil=True, cache=True)
def scan_bounds_avx2(codes, scales, sq_norms, norms, residuals, row_sums, queries, q_scales,
                     q_norms, q_errors, limits, ids, lower, upper, counts, base, cap, lo,
                     hi):  # pragma: no cover - compiled
    """:func:`~kgrag.embed._int8_kernel.scan_bounds` with AVX2; ``codes`` and the int16
    ``queries`` padded with zeros to a multiple of 16 columns. The same int32 products, so the
    same bounds. ``row_sums`` is unused (same signature as the other kernels)."""
    m, width = queries.shape
    blocks = width // 16
    flat_codes = codes.reshape(-1)
    flat_q = queries.reshape(-1)
    # one spare column: a range's last row, when it has no partner, is scored as a pair with
    # itself (its duplicate lands there, once per range)
    dots = np.empty((m, ROW_BLOCK + 1), dtype=np.int32)
    scratch = np.empty((2, ROW_BLOCK), dtype=np.float32)
    end = flat_codes.size
    for start in range(lo, hi, ROW_BLOCK):
        stop = min(hi, start + ROW_BLOCK)
        for i in range(start, stop, 2):  # two rows at a time
            partner = i + 1 if i + 1 < stop else i
            _prefetch_row(flat_codes, i * width, width, end)
            _prefetch_row(flat_codes, partner * width, width, end)
            _avx2_rows(flat_q, width, flat_codes, i * width, partner * width, blocks, m, dots,
                       i - start)
        select_block(dots, start, stop, scales, sq_norms, norms, residuals, q_scales, q_norms,
                     q_errors, limits, ids, lower, upper, counts, base, cap, scratch)


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
                     q_norms, q_errors, limits, ids, lower, upper, counts, base, cap, lo,
                     hi):  # pragma: no cover - compiled
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
    dots = np.empty((m, ROW_BLOCK), dtype=np.int32)
    scratch = np.empty((2, ROW_BLOCK), dtype=np.float32)
    end = flat_codes.size
    for start in range(lo, hi, ROW_BLOCK):
        stop = min(hi, start + ROW_BLOCK)
        for i in range(start, stop):
            _prefetch_row(flat_codes, i * width, width, end)
            offset = 128 * np.int64(row_sums[i])
            for k in range(m):
                if joined:
                    acc = np.int64(_dot_u8s8_joined(flat_high, flat_low, k * width, flat_codes,
                                                    i * width, blocks)) - 256 * offset
                else:
                    acc_h, acc_l = _dot_u8s8_pair(flat_high, flat_low, k * width, flat_codes,
                                                  i * width, blocks)
                    acc = 256 * (np.int64(acc_h) - offset) + np.int64(acc_l)
                dots[k, i - start] = np.int32(acc)  # |q . x| <= d 127 QMAX < 2**31
        select_block(dots, start, stop, scales, sq_norms, norms, residuals, q_scales, q_norms,
                     q_errors, limits, ids, lower, upper, counts, base, cap, scratch)
