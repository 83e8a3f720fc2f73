"""Modules that moved out of ``kgrag.methods``: one way for their deprecation shims to forward.

The per-method command-line modules moved to :mod:`kgrag.commands` (the application layer). Each
old module (``kgrag.methods.<method>.cli``, ``kgrag.methods.ketrag.demo``) is a shim that imports
its new home, calls :func:`forward_to` and keeps working, with a ``DeprecationWarning``.
"""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any, Callable


def forward_to(old_name: str, moved: ModuleType) -> Callable[[str], Any]:
    """Warn that ``old_name`` moved to ``moved``, and return the shim's module ``__getattr__``,
    which gives every name of the moved module (its private command functions too)."""
    warnings.warn(f"{old_name} moved to {moved.__name__}; import from there",
                  DeprecationWarning, stacklevel=3)

    def module_getattr(name: str) -> Any:
        return getattr(moved, name)

    return module_getattr
