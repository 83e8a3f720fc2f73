"""The ``kgrag`` command line: the entry point of the console script (``kgrag = kgrag.cli:main``).

Every subcommand lives in :mod:`kgrag.commands`, one module each, listed in
:data:`kgrag.commands.COMMANDS`; :func:`build_parser` reads that list and nothing else.
``kgrag --help`` lists the commands; ``kgrag COMMAND --help`` gives a command's options and
examples. Handlers raise :class:`~kgrag.errors.KgragError` (or ``FileNotFoundError``) for user
errors: :func:`main` prints those as one line and exits with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import warnings
from typing import Iterator, Sequence

import kgrag.commands
from kgrag._version import __version__
from kgrag.commands.common import CommandParser, add_cache_arguments, leaf_parsers
from kgrag.errors import EmptyGraphWarning, KgragError

__all__ = ["USAGE_ERROR", "build_parser", "embedding_commands", "main"]

#: Exit status for user errors (bad input, missing files), as argparse uses for bad arguments.
USAGE_ERROR = 2


def embedding_commands() -> tuple[str, ...]:
    """The commands that get the embedding-cache flags (``embeds=True`` in
    :data:`~kgrag.commands.COMMANDS`)."""
    return tuple(command.name for command in kgrag.commands.COMMANDS if command.embeds)


def build_parser() -> argparse.ArgumentParser:
    """The full parser: every command of :data:`~kgrag.commands.COMMANDS`, in its order."""
    parser = CommandParser(
        prog="kgrag", description="Knowledge-graph RAG methods for LangChain and LlamaIndex.",
        epilog="Run 'kgrag COMMAND --help' for a command's options. Commands that embed keep "
               "the vectors in the embedding cache ($KGRAG_CACHE_DIR or the user cache "
               "directory; --cache-dir / --no-cache).")
    parser.add_argument("--version", action="version", version=f"kgrag {__version__}",
                        help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND",
                                       title="commands")
    subparsers.required = True
    registry = kgrag.commands.COMMANDS
    for module in dict.fromkeys(command.module for command in registry):
        before = set(subparsers.choices)
        importlib.import_module(module).register(subparsers)
        added = set(subparsers.choices) - before
        listed = {command.name for command in registry if command.module == module}
        if added != listed:
            raise RuntimeError(f"{module} adds the commands {sorted(added)}, but "
                               f"kgrag.commands.COMMANDS lists {sorted(listed)} for it")
    embedding = embedding_commands()
    for name, command in subparsers.choices.items():
        for leaf in leaf_parsers(command):
            if name in embedding:
                add_cache_arguments(leaf)
            leaf.set_defaults(cli_prog=leaf.prog)  # "kgrag ketrag ask": the error prefix
    return parser


@contextlib.contextmanager
def _warnings_to_stderr() -> Iterator[None]:
    """kgrag's log warnings on stderr while a command runs (``kgrag: warning: ...``), whatever
    the process's logging setup; removed afterwards (``main`` may run again in one process)."""
    import logging

    logger = logging.getLogger("kgrag")
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("kgrag: warning: %(message)s"))
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings():  # shown once, by the handler, not twice
            warnings.simplefilter("ignore", EmptyGraphWarning)
            yield
    finally:
        logger.removeHandler(handler)


@contextlib.contextmanager
def _embedding_setup(args: argparse.Namespace) -> Iterator[None]:
    """For a command that embeds: point the process's embedding cache where the command line
    says, and show one line on stderr when an embedding model is loaded or exported (it takes
    seconds); both undone afterwards (``main`` may be called again in the same process)."""
    if not hasattr(args, "no_cache"):
        yield
        return
    import logging

    from kgrag.embed.store import configure_cache

    logger = logging.getLogger("kgrag.embed")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("kgrag: %(message)s"))
    # the notes only: warnings reach stderr once, through _warnings_to_stderr
    handler.addFilter(lambda record: record.levelno < logging.WARNING)
    level = logger.level
    configure_cache(getattr(args, "cache_dir", None), enabled=not args.no_cache)
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        configure_cache(None)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    return str(exc) or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 usage or input error).

    Every user error ends the same way as argparse's own: one line ``kgrag COMMAND: error:
    ...`` on stderr and status 2. kgrag's warnings (a graph file without triples, skipped
    lines...) are shown on stderr as ``kgrag: warning: ...``.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = getattr(args, "cli_prog", f"kgrag {args.command}")
    try:
        with _warnings_to_stderr(), _embedding_setup(args):
            status = args.func(args)
    except (KgragError, FileNotFoundError) as exc:
        print(f"{prog}: error: {_describe(exc)}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print("kgrag: interrupted", file=sys.stderr)
        return 130
    return 0 if status is None else int(status)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
