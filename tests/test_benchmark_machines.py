"""Every benchmark result says which CPU it ran on (issue 26: speed depends on the instruction
set, so a number is only comparable with one from a CPU with the same SIMD features)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
#: modules in benchmarks/ that write no result JSON of their own
HELPERS = {"hash_embedder.py", "synthetic.py", "machine_info.py", "make_table.py",
           "ultrag_hybrid_table.py"}


def test_there_are_results():
    assert len(RESULTS) > 50


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_result_records_the_cpu(path: Path):
    """``machine.cpu_model`` and ``machine.simd`` (the flags); a result measured before the
    flags were recorded says so in ``machine.simd_note`` instead of leaving them out."""
    machine = json.loads(path.read_text(encoding="utf-8")).get("machine")
    assert isinstance(machine, dict), "no machine record"
    assert "cpu_model" in machine
    if machine.get("simd") is None:
        assert "not recorded" in machine.get("simd_note", "")
    else:
        assert isinstance(machine["simd"], list)
        assert machine["cpu_model"]


SCRIPTS = [p for p in sorted((ROOT / "benchmarks").glob("*.py")) if p.name not in HELPERS]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_stamps_its_machine(path: Path):
    """Every benchmark script records the machine (``machine_info.stamp``) in what it writes."""
    text = path.read_text(encoding="utf-8")
    assert "stamp(" in text or "machine_info(" in text


def test_machine_record_names_instruction_set_overrides(monkeypatch):
    """A run that forces a narrower instruction set (e.g. the AVX2 kernels on an AVX-512 CPU)
    says so next to the CPU's own flags, and a run without any override has no such key."""
    import sys

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    sys.modules.pop("machine_info", None)
    import machine_info

    for name in machine_info.ISA_OVERRIDES:
        monkeypatch.delenv(name, raising=False)
    assert "isa_overrides" not in machine_info.machine_info()
    monkeypatch.setenv("KGRAG_INT8_KERNEL", "avx2")
    monkeypatch.setenv("NUMBA_CPU_NAME", "haswell")
    assert machine_info.machine_info()["isa_overrides"] == {"KGRAG_INT8_KERNEL": "avx2",
                                                           "NUMBA_CPU_NAME": "haswell"}


AVX2_PROBE = """
import re, numpy as np
from kgrag.embed import _int8_kernel

m, n, d = 2, 64, 48
f32 = lambda size: np.ones(size, np.float32)
scan = _int8_kernel.scan_bounds  # the portable loop: LLVM vectorises it for the target
scan(np.ones((n, d), np.int8), f32(n), np.ones(n), f32(n), f32(n), np.zeros(n, np.int32),
     np.ones((m, d), np.int16), np.ones(m), np.ones(m), np.ones(m),
     np.full(m, np.inf, np.float32), np.empty((m, n), np.int64), np.empty((m, n), np.float32),
     np.empty((m, n), np.float32), np.zeros(m, np.int64), 0, n, 0, n)
asm = scan.inspect_asm(scan.signatures[0])
from numpy._core._multiarray_umath import __cpu_features__ as numpy_simd
print(len(re.findall(r"%zmm|vpdp", asm)), _int8_kernel.best_kernel(),
      numpy_simd.get("X86_V4", numpy_simd.get("AVX512_SKX", False)))
"""


def test_as_avx2_compiles_no_avx512(tmp_path):
    """``benchmarks/as_avx2.sh`` makes numba compile for AVX2: no 512-bit registers and no VNNI
    dot products in the machine code, and the int8 scan picks its AVX2 kernel -- with the CPU
    name alone numba still passed the host's features to LLVM (it emitted both) -- and numpy
    dispatches none of its AVX-512 kernels (its sorts used them)."""
    import platform
    import subprocess
    import sys

    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("x86 only")
    from kgrag.embed._int8_kernel import has_avx2

    if not has_avx2():
        pytest.skip("needs AVX2")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("NUMBA_",
                                                                                  "KGRAG_"))}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run(["bash", str(ROOT / "benchmarks" / "as_avx2.sh"), sys.executable, "-c",
                          AVX2_PROBE], env=env, capture_output=True, text=True, timeout=300,
                         check=True).stdout.split()
    assert out == ["0", "avx2", "False"]
