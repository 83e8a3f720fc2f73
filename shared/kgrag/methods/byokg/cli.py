"""Deprecated: moved to :mod:`kgrag.commands.byokg` (the command line is the application layer,
which methods never import; ``tests/test_import_graph.py`` lists this module as a shim).

Importing it warns (``DeprecationWarning``) and gives the moved module's names, so code written
against ``kgrag.methods.byokg.cli`` keeps working for now.
"""

from __future__ import annotations

import warnings
from typing import Any

from kgrag.commands import byokg as _moved
from kgrag.commands.byokg import demo_steps, register, scripted_linker

warnings.warn("kgrag.methods.byokg.cli moved to kgrag.commands.byokg; import from there", DeprecationWarning,
              stacklevel=2)

__all__ = ["demo_steps", "register", "scripted_linker"]


def __getattr__(name: str) -> Any:
    """The moved module's other names (e.g. its private command functions)."""
    return getattr(_moved, name)
