"""Deprecated: moved to :mod:`kgrag.commands.ultrag` (the command line is the application layer,
which methods never import; ``tests/test_import_graph.py`` lists this module as a shim).

Importing it warns (``DeprecationWarning``) and gives the moved module's names, so code written
against ``kgrag.methods.ultrag.cli`` keeps working for now.
"""

from __future__ import annotations

from kgrag.commands import ultrag as _moved
from kgrag.commands.ultrag import DEMO_QUERY, demo_steps, register
from kgrag.methods.moved import forward_to

__all__ = ["DEMO_QUERY", "demo_steps", "register"]
__getattr__ = forward_to(__name__, _moved)
