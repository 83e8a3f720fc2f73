"""What every benchmark JSON records about the machine it ran on (``"machine"``).

Speed-ups here depend on the instruction set (the int8 scan has AVX-512 VNNI, AVX2 and portable
kernels; bfloat16 embedding needs AVX512-BF16 or AMX), so a number is only comparable with
numbers from a CPU with the same SIMD features: :func:`machine_info` gives the CPU model, its
SIMD flags, core count, Python, numpy and the load average, for ``report["machine"]``.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np

#: /proc/cpuinfo flags worth recording (vector instructions the kernels or BLAS can use)
SIMD_FLAGS = (
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw", "avx512vl",
    "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_int8", "amx_tile",
    # ARM ("Features" line)
    "asimd", "asimddp", "sve", "sve2", "bf16", "i8mm",
)


#: environment variables that restrict or pick the instruction set a library uses: a run with
#: any of them set measures that instruction set's code path on this CPU (e.g. AVX2 kernels on
#: an AVX-512 machine), not everything the CPU has, so the JSON says which were set
ISA_OVERRIDES = (
    "KGRAG_INT8_KERNEL",  # kgrag's int8 scan kernel
    "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES",  # numba's code generation target
    "ATEN_CPU_CAPABILITY",  # PyTorch's kernels (default, avx2, avx512)
    "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA",  # oneDNN (PyTorch's matrix products)
    "OPENBLAS_CORETYPE",  # numpy's OpenBLAS kernels
    "NPY_DISABLE_CPU_FEATURES",  # numpy's own SIMD dispatch
    "MKL_ENABLE_INSTRUCTIONS",
    "ORT_DISABLE_AVX512",
)


def isa_overrides() -> dict[str, str]:
    """The :data:`ISA_OVERRIDES` set in this process's environment."""
    return {name: os.environ[name] for name in ISA_OVERRIDES if os.environ.get(name)}


def _cpuinfo() -> tuple[str | None, set[str]]:
    """(model name, flags) from /proc/cpuinfo (Linux); (None, empty) elsewhere."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, set()
    model, flags = None, set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if model is None and key in ("model name", "cpu model", "hardware"):
            model = value.strip()
        elif not flags and key in ("flags", "features"):
            flags = set(value.split())
    return model, flags


def cpu_model() -> str:
    """The CPU's model name (e.g. ``AMD EPYC``), or the best the platform says."""
    model, _ = _cpuinfo()
    return model or platform.processor() or platform.machine()


def simd_flags() -> list[str]:
    """The CPU's SIMD features among :data:`SIMD_FLAGS` (from /proc/cpuinfo; elsewhere from
    numpy's own CPU detection, named as numpy names them)."""
    _, flags = _cpuinfo()
    if flags:
        return [f for f in SIMD_FLAGS if f in flags]
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # pragma: no cover - older numpy
        return []
    return sorted(name.lower() for name, on in features.items() if on)


def machine_info(**extra: object) -> dict:
    """``{"cpu_model", "simd", "arch", "cpus", "python", "numpy", "load_average",
    "isa_overrides" (only when any is set), ...extra}``
    (``extra``: what the benchmark adds, e.g. its own load averages or a description)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    info: dict = {
        "cpu_model": cpu_model(),
        "simd": simd_flags(),
        "arch": platform.machine(),
        "cpus": usable,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    overrides = isa_overrides()
    if overrides:
        info["isa_overrides"] = overrides
    info.update(extra)
    return info


def stamp(report: dict) -> dict:
    """``report["machine"] = machine_info()`` plus what the benchmark had put there (a dict's
    keys win; a string is kept as ``"description"``); returns ``report``."""
    prior = report.get("machine")
    extra = prior if isinstance(prior, dict) else {} if prior is None else {"description": prior}
    report["machine"] = {**machine_info(), **extra}
    return report


if __name__ == "__main__":
    import json

    print(json.dumps(machine_info(), indent=2))
