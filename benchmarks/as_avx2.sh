#!/usr/bin/env bash
# Run a command with every library kgrag's hot paths use restricted to AVX2 + FMA code, so that
# an AVX-512 machine measures the code path of an AVX2-only CPU (AMD EPYC before Zen 4, most
# laptops). It is the instruction set only: caches, memory bandwidth and clock stay this
# machine's, so a result is a stand-in for an AVX2 CPU, not a measurement of one. Each
# benchmark JSON lists the variables under machine.isa_overrides.
#
#   bash benchmarks/as_avx2.sh python benchmarks/simgrag_scale.py --edges 10000000 --dim 384 ...
set -euo pipefail
export KGRAG_INT8_KERNEL=avx2          # kgrag's int8 scan kernel
export NUMBA_CPU_NAME=haswell          # numba code generation (the fused kernels): the CPU
# name alone is not enough -- numba passes the *host's* feature list to LLVM unless this is set,
# so with the name only LLVM still emitted AVX-VNNI (vpdpwssd) and could emit AVX-512. The list
# is Haswell's (AVX2, FMA, BMI); the minus entries switch off everything an AVX-512 host adds.
export NUMBA_CPU_FEATURES="+64bit,+avx,+avx2,+bmi,+bmi2,+cmov,+cx16,+cx8,+f16c,+fma,+fxsr,\
+lzcnt,+mmx,+movbe,+pclmul,+popcnt,+sahf,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+xsave,\
-avx512f,-avxvnni,-avx512vnni,-avx512bf16,-avx512fp16,-amx-tile,-amx-int8,-amx-bf16"
export ATEN_CPU_CAPABILITY=avx2        # PyTorch's own kernels
export ONEDNN_MAX_CPU_ISA=AVX2         # oneDNN (PyTorch)
export MKL_ENABLE_INSTRUCTIONS=AVX2    # MKL (PyTorch's BLAS)
export OPENBLAS_CORETYPE=Haswell       # OpenBLAS (numpy's BLAS)
# numpy's own SIMD dispatch (sorts, searches, ufuncs): its AVX-512 targets, as numpy 2 names
# them (X86_V4, AVX512_ICL, AVX512_SPR) and as numpy 1 did (names it does not know are ignored)
export NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR AVX512F AVX512CD AVX512_KNL \
AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL"
exec "$@"
