"""Deprecated: moved to :mod:`kgrag.commands.byokg` (the command line is the application layer,
which methods never import; ``tests/test_import_graph.py`` lists this module as a shim).

Importing it warns (``DeprecationWarning``) and gives the moved module's names, so code written
against ``kgrag.methods.byokg.cli`` keeps working for now.
"""

from __future__ import annotations

from kgrag.commands import byokg as _moved
from kgrag.commands.byokg import demo_steps, register, scripted_linker
from kgrag.methods.moved import forward_to

__all__ = ["demo_steps", "register", "scripted_linker"]
__getattr__ = forward_to(__name__, _moved)
