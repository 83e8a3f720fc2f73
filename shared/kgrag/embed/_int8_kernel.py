"""Numba kernels of :class:`kgrag.embed.exact_l2.Int8L2Search` (imported only when that index is
built, so numba stays optional), and the choice among them.

One pass over a block of int8 rows scores every row against all of a batch's int16 query
vectors while the row is in L1, in exact integer arithmetic, turns the products into each row's
lower and upper bound of ``|x_i|^2 - 2 q . x_i`` and keeps only the rows whose lower bound is
under the caller's limit (every row with an infinite limit), so the caller makes no further
pass over the rows. ``nogil=True`` lets the row blocks run on :mod:`kgrag.embed.similarity`'s
thread pool.

Three interchangeable integer dot products (same int32 results, so the same bounds):

* :func:`scan_bounds` -- portable (any CPU numba supports): a plain loop LLVM vectorises as it
  can (on x86 it widens to 32-bit multiplies: about 2.5x slower than the AVX2 kernel).
* ``scan_bounds_avx2`` -- AVX2 (x86-64 from 2013 on, AMD since 2015): ``vpmaddwd``, 16
  ``int16 * int16`` products summed in pairs per instruction, on the row's bytes sign-extended
  once for every query vector (:mod:`kgrag.embed._int8_x86`).
* ``scan_bounds_vnni`` -- AVX-512 VNNI (``vpdpbusd``: 64 unsigned-by-signed byte products per
  instruction; :mod:`kgrag.embed._int8_x86`).

:func:`best_kernel` picks the fastest this CPU runs; the x86 module (LLVM x86 intrinsics) is
imported only when it picks one of its kernels, so nothing x86-specific is compiled or imported
on ARM or other CPUs.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from kgrag.embed._int8_bounds import ROW_BLOCK, _prefetch_row, select_block

#: the kernels, fastest first (each needs the CPU features :func:`best_kernel` checks)
KERNELS = ("vnni", "avx2", "portable")
#: machine names of x86-64 CPUs, as ``platform.machine()`` reports them
X86_MACHINES = frozenset({"x86_64", "amd64", "x64", "i386", "i686"})


@njit(nogil=True, cache=True)
def scan_bounds(codes, scales, sq_norms, norms, residuals, row_sums, queries, q_scales, q_norms,
                q_errors, limits, ids, lower, upper, counts, base, cap, lo,
                hi):  # pragma: no cover - compiled; tested via caller
    """Rows ``lo:hi``: ``lower <= |x_i|^2 - 2 q_k . x_i <= upper`` for every row and query, and
    the rows with ``lower <= limits[k]`` kept (:func:`~kgrag.embed._int8_bounds.select_block`).

    ``codes`` (n, d) int8 with ``x_i ~ scales[i] * codes[i]``; ``residuals[i] >= |x_i - that|``;
    ``norms[i] >= |x_i|``; ``sq_norms[i] = |x_i|^2`` (float64). ``queries`` (m, d) int16 with
    ``q_k ~ q_scales[k] * queries[k]``, ``q_norms[k] >= |that|``, ``q_errors[k] >= |q_k - that|``.
    The exact value is ``center +- 2 (|q~| r_i + |q - q~| |x_i|)`` (Cauchy-Schwarz on both
    quantisation errors). ``row_sums`` is unused here (same signature as the VNNI kernel).
    """
    m, d = queries.shape
    flat_codes = codes.reshape(-1)
    end = flat_codes.size
    dots = np.empty((m, ROW_BLOCK), dtype=np.int32)
    scratch = np.empty((2, ROW_BLOCK), dtype=np.float32)
    for start in range(lo, hi, ROW_BLOCK):
        stop = min(hi, start + ROW_BLOCK)
        for i in range(start, stop):
            _prefetch_row(flat_codes, i * d, d, end)
            for k in range(m):
                acc = np.int32(0)
                for j in range(d):
                    acc += np.int32(queries[k, j]) * np.int32(codes[i, j])
                dots[k, i - start] = acc
        select_block(dots, start, stop, scales, sq_norms, norms, residuals, q_scales, q_norms,
                     q_errors, limits, ids, lower, upper, counts, base, cap, scratch)


#: numba's own variable for the features it compiles for (default: the host's)
NUMBA_FEATURES_ENV = "NUMBA_CPU_FEATURES"


def cpu_features() -> dict[str, bool]:
    """The x86 features the kernels may use: those LLVM sees on this CPU (``{}`` on other
    architectures, without asking LLVM: no x86 kernel is ever considered there), narrowed to
    the ones ``NUMBA_CPU_FEATURES`` switches on when it is set -- numba then compiles for that
    list, and an intrinsic outside it would not compile (an AVX2-only build of the code on an
    AVX-512 machine: ``benchmarks/as_avx2.sh``)."""
    if platform.machine().lower() not in X86_MACHINES:
        return {}
    import llvmlite.binding as llvm

    try:
        features = llvm.get_host_cpu_features()
    except RuntimeError:  # LLVM could not read them (some hosts): assume nothing
        return {}
    host = {name: bool(on) for name, on in features.items()}
    target = os.environ.get(NUMBA_FEATURES_ENV, "").strip()
    if not target:
        return host
    enabled = {item.strip()[1:] for item in target.split(",") if item.strip().startswith("+")}
    return {name: on and name in enabled for name, on in host.items()}


def has_vnni() -> bool:
    """Whether this CPU runs ``scan_bounds_vnni`` (AVX-512 BW + VNNI)."""
    features = cpu_features()
    return features.get("avx512vnni", False) and features.get("avx512bw", False)


def has_avx2() -> bool:
    """Whether this CPU runs ``scan_bounds_avx2``."""
    return cpu_features().get("avx2", False)


#: environment variable that picks the kernel ``kernel="auto"`` uses instead of the fastest
KERNEL_ENV = "KGRAG_INT8_KERNEL"


def best_kernel() -> str:
    """The fastest kernel this CPU runs: ``"vnni"``, ``"avx2"`` or ``"portable"``.

    ``KGRAG_INT8_KERNEL`` (one of :data:`KERNELS`) overrides the choice: a virtual machine may
    report an instruction set its hypervisor traps (as AMX did for llama.cpp on a KVM guest),
    and a benchmark may run an AVX2 machine's kernel on an AVX-512 one. A kernel this CPU does
    not run is refused rather than left to crash on its first scan."""
    forced = os.environ.get(KERNEL_ENV, "").strip().lower()
    if forced and forced != "auto":
        runs = {"vnni": has_vnni, "avx2": has_avx2, "portable": lambda: True}
        if forced not in runs:
            raise ValueError(f"{KERNEL_ENV}={forced!r}: expected one of auto, "
                             f"{', '.join(KERNELS)}")
        if not runs[forced]():
            raise ValueError(f"{KERNEL_ENV}={forced!r}: this CPU lacks the instructions of "
                             f"that kernel")
        return forced
    if has_vnni():
        return "vnni"
    return "avx2" if has_avx2() else "portable"


def row_width(kernel: str, dim: int) -> int:
    """Bytes per stored code row: the VNNI kernel reads 64 bytes at a time and the AVX2 kernel
    16 (rows padded with zeros, which add nothing to the products); the portable loop ``dim``."""
    block = {"vnni": 64, "avx2": 16}.get(kernel, 1)
    return -(-dim // block) * block


def load(kernel: str) -> Callable[..., Any]:
    """The scan function of ``kernel`` (imports the x86 module only for an x86 kernel)."""
    if kernel == "portable":
        return scan_bounds
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    from kgrag.embed import _int8_x86

    return _int8_x86.scan_bounds_vnni if kernel == "vnni" else _int8_x86.scan_bounds_avx2
