"""kgrag's compiled kernels are optional: without numba the loader gives None (the callers run
their numpy paths, each tested in its own module); any other import error is raised."""

from __future__ import annotations

import sys

import pytest

from kgrag.compiled import compiled_module


def test_a_missing_numba_gives_none_and_other_errors_are_raised(tmp_path, monkeypatch):
    (tmp_path / "kgrag_probe_needs_numba.py").write_text("import numba\n", encoding="utf-8")
    (tmp_path / "kgrag_probe_broken.py").write_text("import no_such_module_xyz\n",
                                                    encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    compiled_module.cache_clear()
    try:
        with monkeypatch.context() as patch:
            patch.setitem(sys.modules, "numba", None)  # "not installed"
            assert compiled_module("kgrag_probe_needs_numba") is None
            with pytest.raises(ImportError, match="no_such_module_xyz"):
                compiled_module("kgrag_probe_broken")
    finally:
        compiled_module.cache_clear()
    pytest.importorskip("numba")
    assert compiled_module("kgrag.graph._kernels").__name__ == "kgrag.graph._kernels"
