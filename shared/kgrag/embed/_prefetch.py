"""A cache-line prefetch for numba kernels (:func:`prefetch`), shared by kgrag's compiled loops:
the int8 scans (:mod:`kgrag.embed._int8_bounds`) and UltraQuery's message sums
(:mod:`kgrag.methods.ultrag._kernels`).

``llvm.prefetch`` is target-independent: x86 ``prefetcht0``, ARM ``prfm``, nothing where a
target has none. Imported only by modules that need numba.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, offset):
    """Ask for the cache line holding ``array.ravel()[offset]`` (``llvm.prefetch``: read, keep
    in every cache level). A hint, never a fault: the callers keep ``offset`` inside the
    array anyway."""
    sig = types.void(array, types.intp)

    def codegen(context, builder, signature, args):
        arr, off = args
        data = context.make_array(signature.args[0])(context, builder, arr).data
        byte_ptr = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        # (address, read = 0, locality = 3: keep in all levels, data cache = 1)
        builder.call(fn, [builder.bitcast(builder.gep(data, [off]), byte_ptr),
                          ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen
