"""Helpers every ``kgrag`` subcommand shares: graph arguments and user factories."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from kgrag.errors import ConfigurationError
from kgrag.graph.files import open_graph

__all__ = ["add_graph_arguments", "graph_from_args", "load_factory", "open_graph"]


def load_factory(spec: str | None, option: str = "--llm") -> Any:
    """The object named by ``package.module:factory`` (called when callable); ``None`` for no spec.

    This is how every command takes a user's LLM or embedder (``--llm mymodels:chat``), so the
    command line never needs to know about providers or API keys.
    """
    if not spec:
        return None
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"{option} must look like package.module:factory, got {spec!r}")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(f"{option} {spec!r}: {exc}") from None
    return factory() if callable(factory) else factory


def add_graph_arguments(parser: argparse.ArgumentParser) -> None:
    """``GRAPH``, ``--sep`` and ``--on-error``: how every command names its graph."""
    parser.add_argument("graph", metavar="GRAPH",
                        help="triples file (CSV/TSV/pipe) or a saved graph directory")
    parser.add_argument("--sep", default=None,
                        help="field separator of a triples file (default: detected)")
    parser.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                        help="malformed lines: stop with an error (default) or skip and count")


def graph_from_args(args: argparse.Namespace) -> Any:
    """The graph named by :func:`add_graph_arguments`' arguments."""
    # a tab is hard to type in a shell: accept "\t" and "tab" for it
    sep = {"\\t": "\t", "tab": "\t"}.get(args.sep, args.sep) if args.sep else None
    return open_graph(args.graph, sep=sep, on_error=args.on_error)
