"""Deprecated: moved to :mod:`kgrag.commands.ketrag` (the command line is the application layer,
which methods never import; ``tests/test_import_graph.py`` lists this module as a shim).

Importing it warns (``DeprecationWarning``) and gives the moved module's names, so code written
against ``kgrag.methods.ketrag.cli`` keeps working for now.
"""

from __future__ import annotations

import warnings
from typing import Any

from kgrag.commands import ketrag as _moved
from kgrag.commands.ketrag import TEXT_SUFFIXES, load_llm, read_documents, register

warnings.warn("kgrag.methods.ketrag.cli moved to kgrag.commands.ketrag; import from there", DeprecationWarning,
              stacklevel=2)

__all__ = ["TEXT_SUFFIXES", "load_llm", "read_documents", "register"]


def __getattr__(name: str) -> Any:
    """The moved module's other names (e.g. its private command functions)."""
    return getattr(_moved, name)
