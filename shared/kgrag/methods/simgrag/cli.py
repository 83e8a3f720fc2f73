"""Deprecated: moved to :mod:`kgrag.commands.simgrag` (the command line is the application layer,
which methods never import; ``tests/test_import_graph.py`` lists this module as a shim).

Importing it warns (``DeprecationWarning``) and gives the moved module's names, so code written
against ``kgrag.methods.simgrag.cli`` keeps working for now.
"""

from __future__ import annotations

from kgrag.commands import simgrag as _moved
from kgrag.commands.simgrag import demo_steps, register
from kgrag.methods.moved import forward_to

__all__ = ["demo_steps", "register"]
__getattr__ = forward_to(__name__, _moved)
