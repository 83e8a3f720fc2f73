"""Deprecated: moved to :mod:`kgrag.commands.ketrag_demo` (the command line is the application layer,
which methods never import; ``tests/test_import_graph.py`` lists this module as a shim).

Importing it warns (``DeprecationWarning``) and gives the moved module's names, so code written
against ``kgrag.methods.ketrag.demo`` keeps working for now.
"""

from __future__ import annotations

from kgrag.commands import ketrag_demo as _moved
from kgrag.commands.ketrag_demo import PHRASES, demo_steps, movie_paragraphs
from kgrag.methods.moved import forward_to

__all__ = ["PHRASES", "demo_steps", "movie_paragraphs"]
__getattr__ = forward_to(__name__, _moved)
