"""Deprecated: moved to :mod:`kgrag.commands.ketrag` (the command line is the application layer,
which methods never import; ``tests/test_import_graph.py`` lists this module as a shim).

Importing it warns (``DeprecationWarning``) and gives the moved module's names, so code written
against ``kgrag.methods.ketrag.cli`` keeps working for now.
"""

from __future__ import annotations

from kgrag.commands import ketrag as _moved
from kgrag.commands.ketrag import TEXT_SUFFIXES, load_llm, read_documents, register
from kgrag.methods.moved import forward_to

__all__ = ["TEXT_SUFFIXES", "load_llm", "read_documents", "register"]
__getattr__ = forward_to(__name__, _moved)
