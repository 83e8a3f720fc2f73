"""The ``kgrag`` subcommands of each method and their ``kgrag demo`` steps (the application layer).

One module per method (``kgrag.commands.simgrag`` ...), each with ``register(subparsers)`` and,
for the demo, ``demo_steps()``; the method registry (:mod:`kgrag.methods.registry`) names them.
They sit above ``kgrag.methods``: a method never imports the command line or the demo.
Shared helpers (opening a graph, loading a user's LLM factory) are in :mod:`.common`.
"""
