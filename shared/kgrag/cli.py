"""The ``kgrag`` command line.

Core commands::

    kgrag info GRAPH                  counts, duplicate / self-loop stats, relation histogram
    kgrag link GRAPH MENTION...       top-k entity (or relation) links with scores
    kgrag demo                        the offline demo over the bundled movie graph
    kgrag --version

``GRAPH`` is a triples file (CSV / TSV / pipe) or a directory written by
:meth:`KnowledgeGraph.save <kgrag.graph.memory.KnowledgeGraph.save>`; see :func:`open_graph`.

Adding commands: a command module (``kgrag/commands/<method>.py``) defines ``register(subparsers)``, which adds its parser with
``subparsers.add_parser(...)`` and sets ``parser.set_defaults(func=handler)``, where
``handler(args)`` returns an exit code (or ``None`` for 0). A method's registry entry names its
module (``command_module``); other modules go in :data:`COMMAND_MODULES`. Modules are imported
only when the command line is built, so ``import kgrag``
stays light. Handlers raise :class:`~kgrag.errors.KgragError` (or ``FileNotFoundError``) for
user errors: :func:`main` prints those as one line and exits with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
import warnings
from typing import Any, Callable, Iterator, Sequence

from kgrag._version import __version__
from kgrag.commands.common import (
    CommandParser,
    add_command,
    add_graph_arguments,
    graph_from_args,
    in_rank_order,
    load_factory,
    open_graph,
)
from kgrag.errors import EmptyGraphWarning, KgragError

__all__ = ["COMMAND_MODULES", "OTHER_EMBEDDING_COMMANDS", "build_parser", "embedding_commands",
           "load_factory", "main", "open_graph"]

#: Dotted paths of modules that add subcommands through ``register(subparsers)``, besides the
#: registered methods' own (:mod:`kgrag.methods.registry`, ``command_module``).
COMMAND_MODULES: list[str] = [
    "kgrag.graph.db_cli",
    "kgrag.eval.cli",
    "kgrag.ask",
    "kgrag.commands.finetune",
]

#: Commands that embed names or texts and are not a method's own command; each of them (and
#: each of its sub-commands) gets ``--cache-dir`` / ``--no-cache`` from
#: :func:`add_cache_arguments`. A method's command gets them from its registry entry
#: (``MethodSpec.embeds``); :func:`embedding_commands` lists both.
OTHER_EMBEDDING_COMMANDS: tuple[str, ...] = ("link", "ask", "eval")


def command_modules() -> list[str]:
    """Every module that adds subcommands: the registered methods', then :data:`COMMAND_MODULES`."""
    from kgrag.methods.registry import METHODS

    registered = [spec.command_module for spec in METHODS.values() if spec.command_module]
    return list(dict.fromkeys(registered + COMMAND_MODULES))


def embedding_commands() -> tuple[str, ...]:
    """The commands that get the embedding-cache flags: every registered method whose entry says
    ``embeds=True`` (its command is ``kgrag <name>``), then :data:`OTHER_EMBEDDING_COMMANDS`."""
    from kgrag.methods.registry import METHODS

    methods = [spec.name for spec in METHODS.values() if spec.embeds and spec.command_module]
    return tuple(dict.fromkeys(methods + list(OTHER_EMBEDDING_COMMANDS)))


#: Exit status for user errors (bad input, missing files), as argparse uses for bad arguments.
USAGE_ERROR = 2


# the helpers every subcommand uses (kept importable from here as before)
_add_graph_arguments = add_graph_arguments
_graph_from_args = graph_from_args


# ---------------------------------------------------------------------- info
def _cmd_info(args: argparse.Namespace) -> int:
    kg = _graph_from_args(args)
    stats = kg.stats
    print(f"graph: {args.graph}")
    print(f"nodes: {kg.num_nodes}  edges: {kg.num_edges}  relations: {kg.num_relations}")
    print(f"input triples: {stats.get('input_edges', kg.num_edges)}  "
          f"duplicates dropped: {stats.get('duplicate_edges', 0)}  "
          f"self-loops: {stats.get('self_loops', 0)}  "
          f"malformed lines skipped: {stats.get('skipped_records', 0)}")
    histogram = kg.relation_histogram()
    shown = histogram if args.top <= 0 else histogram[: args.top]
    print("relation histogram:")
    width = max((len(name) for name, _ in shown), default=0)
    for name, count in shown:
        print(f"  {name:<{width}}  {count}")
    if len(shown) < len(histogram):
        print(f"  ... and {len(histogram) - len(shown)} more (use --top 0 for all)")
    return 0


def _register_info(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "info", help="counts and relation histogram of a graph",
        description="Counts, duplicate and self-loop statistics and the relation histogram of "
                    "a graph.",
        examples=["kgrag info examples/data/movies.tsv --top 5"])
    _add_graph_arguments(parser)
    parser.add_argument("--top", type=int, default=20,
                        help="relations to list, most frequent first (0 = all; default 20)")
    parser.set_defaults(func=_cmd_info)


# ---------------------------------------------------------------------- link
def _cmd_link(args: argparse.Namespace) -> int:
    from kgrag.linking import EntityLinker, RelationLinker

    if args.top_k < 1:
        raise KgragError("--top-k must be at least 1")
    kg = _graph_from_args(args)
    linker_cls = RelationLinker if args.relations else EntityLinker
    linker = linker_cls.from_graph(kg, mode=args.mode, top_m=args.top_k)
    for mention, found in zip(args.mentions, linker.link_many(args.mentions, args.top_k)):
        links = in_rank_order(found)
        print(f"{mention!r}:")
        if not links:
            print("  (no match)")
        width = max((len(link.name) for link in links), default=0)
        for rank, link in enumerate(links, start=1):
            print(f"  {rank}. {link.name:<{width}}  {link.score:.3f}  {link.source}")
    return 0


def _register_link(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "link", help="link mentions to graph entities (or relations)",
        description="Top-k entity links with scores, best first. Exact and alias matches come "
                    "first, then the top-k of the mode: fuzzy (rapidfuzz), dense (packaged "
                    "MiniLM embeddings + FAISS; the graph's name vectors are embedded once and "
                    "then read from the embedding cache) or hybrid (both).",
        examples=['kgrag link examples/data/movies.tsv "tokyo godfather" "Kurosawa"',
                  'kgrag link examples/data/movies.tsv director --relations --top-k 2'])
    _add_graph_arguments(parser)
    parser.add_argument("mentions", metavar="MENTION", nargs="+", help="text to link")
    parser.add_argument("--top-k", type=int, default=3, help="links per mention (default 3)")
    parser.add_argument("--mode", choices=("fuzzy", "dense", "hybrid"), default="fuzzy",
                        help="fuzzy (default; instant), dense or hybrid")
    parser.add_argument("--relations", action="store_true",
                        help="link to relation names instead of entities")
    parser.set_defaults(func=_cmd_link)


# ---------------------------------------------------------------------- demo
def _cmd_demo(args: argparse.Namespace) -> int:
    from kgrag.demo import run_demo

    if args.data_path:
        from kgrag.demo import demo_data_path

        print(demo_data_path())
        return 0
    print(f"kgrag {__version__} demo (offline; no LLM, no model download)")
    run_demo(print, data_path=args.data)
    return 0


def _register_demo(subparsers: Any) -> None:
    from kgrag.methods.registry import METHODS

    with_steps = ", ".join(spec.name for spec in METHODS.values() if spec.demo_module)
    parser = add_command(
        subparsers, "demo", help="run the offline demo on the bundled movie graph",
        description="Loads the bundled movie graph (a few hundred triples, shipped with the "
                    "package) and walks through it: entity linking, a question answered by "
                    "linking and one hop, relation paths and shortest paths, then one LLM-free "
                    f"step of each method that has one ({with_steps}). Offline: no LLM, no "
                    "model download, no API key.",
        examples=["kgrag demo", "kgrag demo --data my_triples.tsv",
                  "kgrag demo --data-path    # where the bundled movies.tsv is"],
        notes="On another graph (--data) the steps take their names from it: a fact of its "
              "most frequent relation, a question about it, its paths, then one LLM-free "
              "retrieval per method.")
    parser.add_argument("--data", default=None,
                        help="another triples file to run the demo on (default: "
                             "$KGRAG_DEMO_DATA, else the bundled movies.tsv)")
    parser.add_argument("--data-path", action="store_true",
                        help="print the path of the demo's triples file (the bundled "
                             "movies.tsv, or $KGRAG_DEMO_DATA) and exit")
    parser.set_defaults(func=_cmd_demo)


CORE_COMMANDS: list[Callable[[Any], None]] = [_register_info, _register_link, _register_demo]


# ---------------------------------------------------------------------- embedding cache
def add_cache_arguments(parser: argparse.ArgumentParser) -> None:
    """``--cache-dir DIR`` and ``--no-cache`` (the ones a command already has are kept)."""
    known = parser._option_string_actions
    if "--cache-dir" not in known:
        parser.add_argument(
            "--cache-dir", metavar="DIR", default=None,
            help="embedding cache: name vectors and the ONNX export of the model (default: "
                 "$KGRAG_CACHE_DIR or the user cache directory; safe to delete)")
    if "--no-cache" not in known:
        parser.add_argument("--no-cache", action="store_true",
                            help="neither read nor write cached vectors (embed again)")


def _leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not nested:
        return [parser]
    return [leaf for action in nested for sub in action.choices.values()
            for leaf in _leaf_parsers(sub)]


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


# ---------------------------------------------------------------------- entry point
def build_parser() -> argparse.ArgumentParser:
    """The full parser: core commands, then every module of :func:`command_modules`."""
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
    for register in CORE_COMMANDS:
        register(subparsers)
    for module_path in command_modules():
        importlib.import_module(module_path).register(subparsers)
    embedding = embedding_commands()
    for name, command in subparsers.choices.items():
        for leaf in _leaf_parsers(command):
            if name in embedding:
                add_cache_arguments(leaf)
            leaf.set_defaults(cli_prog=leaf.prog)  # "kgrag ketrag ask": the error prefix
    return parser


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
