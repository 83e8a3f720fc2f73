"""numba is optional (the ``fast`` extra): :func:`compiled_module` imports one of kgrag's modules
of compiled kernels, or gives None when numba (or llvmlite) is missing, so that the caller runs
its numpy path instead. Any other import error is a bug and is raised."""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

#: what a compiled-kernel module needs that a plain install may lack
OPTIONAL = frozenset({"numba", "llvmlite"})


@functools.lru_cache(maxsize=None)
def compiled_module(name: str) -> ModuleType | None:
    """The module ``name`` (e.g. ``"kgrag.graph._kernels"``), or None without numba."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in OPTIONAL:
            raise
        return None
