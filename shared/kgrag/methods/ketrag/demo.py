"""Deprecated: moved to :mod:`kgrag.commands.ketrag_demo` (the command line is the application layer,
which methods never import; ``tests/test_import_graph.py`` lists this module as a shim).

Importing it warns (``DeprecationWarning``) and gives the moved module's names, so code written
against ``kgrag.methods.ketrag.demo`` keeps working for now.
"""

from __future__ import annotations

import warnings
from typing import Any

from kgrag.commands import ketrag_demo as _moved
from kgrag.commands.ketrag_demo import PHRASES, demo_steps, movie_paragraphs

warnings.warn("kgrag.methods.ketrag.demo moved to kgrag.commands.ketrag_demo; import from there", DeprecationWarning,
              stacklevel=2)

__all__ = ["PHRASES", "demo_steps", "movie_paragraphs"]


def __getattr__(name: str) -> Any:
    """The moved module's other names (e.g. its private command functions)."""
    return getattr(_moved, name)
