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
