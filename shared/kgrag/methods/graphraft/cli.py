"""Deprecated: moved to :mod:`kgrag.commands.graphraft` (the command line is the application layer,
which methods never import; ``tests/test_import_graph.py`` lists this module as a shim).

Importing it warns (``DeprecationWarning``) and gives the moved module's names, so code written
against ``kgrag.methods.graphraft.cli`` keeps working for now.
"""

from __future__ import annotations

import warnings
from typing import Any

from kgrag.commands import graphraft as _moved
from kgrag.commands.graphraft import DEMO_QUESTION, demo_steps, register

warnings.warn("kgrag.methods.graphraft.cli moved to kgrag.commands.graphraft; import from there", DeprecationWarning,
              stacklevel=2)

__all__ = ["DEMO_QUESTION", "demo_steps", "register"]


def __getattr__(name: str) -> Any:
    """The moved module's other names (e.g. its private command functions)."""
    return getattr(_moved, name)
