"""The application layer: every ``kgrag`` subcommand, and :data:`COMMANDS`, the one list of them.

One module per command (``kgrag.commands.ask``, ``kgrag.commands.simgrag`` ...; ``load-db``
and ``index-db`` share ``kgrag.commands.db``). A command module defines
``register(subparsers)``, which adds its parser with ``subparsers.add_parser(...)`` (see
:func:`kgrag.commands.common.add_command`) and sets ``parser.set_defaults(func=handler)``,
where ``handler(args)`` returns an exit code (or ``None`` for 0). A module whose entry says
``demo=True`` also defines ``demo_steps() -> list[DemoStep]``, its steps in ``kgrag demo``.

:mod:`kgrag.cli` (the ``kgrag`` entry point) reads :data:`COMMANDS` and nothing else to build
the command line; ``kgrag demo`` reads it for the method steps. Modules are named by dotted
path and imported only when the command line is built, so ``import kgrag.cli`` stays light.
Everything here sits above :mod:`kgrag.methods` and :mod:`kgrag.eval`: no lower layer imports
a command.

>>> [command.name for command in COMMANDS if command.demo]
['byokg', 'simgrag', 'ultrag', 'graphraft', 'ketrag']
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COMMANDS", "Command"]


@dataclass(frozen=True)
class Command:
    """One ``kgrag`` subcommand: its name and the module whose ``register`` adds it."""

    #: what the user types: ``kgrag <name> ...``
    name: str
    #: dotted path of the module whose ``register(subparsers)`` adds it (one module may add
    #: several commands: it is imported and called once)
    module: str
    #: whether the command (each of its subcommands) embeds names or texts: then it gets
    #: ``--cache-dir`` / ``--no-cache`` for the shared embedding cache
    embeds: bool = False
    #: whether the module's ``demo_steps()`` extend ``kgrag demo`` (after the core steps, in
    #: this list's order)
    demo: bool = False


#: Every ``kgrag`` subcommand, in the order ``kgrag --help`` lists them. A new command (a new
#: method's own command too) is a module in this package plus one entry here.
COMMANDS: list[Command] = [
    Command("info", "kgrag.commands.info"),
    Command("link", "kgrag.commands.link", embeds=True),
    Command("demo", "kgrag.commands.demo"),
    Command("byokg", "kgrag.commands.byokg", embeds=True, demo=True),
    Command("simgrag", "kgrag.commands.simgrag", embeds=True, demo=True),
    Command("ultrag", "kgrag.commands.ultrag", embeds=True, demo=True),
    Command("graphraft", "kgrag.commands.graphraft", embeds=True, demo=True),
    Command("ketrag", "kgrag.commands.ketrag", embeds=True, demo=True),
    Command("load-db", "kgrag.commands.db"),
    Command("index-db", "kgrag.commands.db"),
    Command("eval", "kgrag.commands.eval", embeds=True),
    Command("ask", "kgrag.commands.ask", embeds=True),
    Command("finetune", "kgrag.commands.finetune"),
]
