"""``kgrag simgrag GRAPH`` and the SimGRAG demo step.

Without an LLM, give the pattern yourself::

    kgrag simgrag movies.tsv --pattern '[("UNKNOWN film 1", "directed by", "Satoshi Kon"),
                                         ("UNKNOWN film 1", "genre", "Thriller")]'

With ``--llm package.module:factory`` (a function returning a LangChain chat model or LlamaIndex
LLM) and ``--question``, the LLM writes the pattern and, with ``--answer``, answers from the
retrieved subgraphs. The pattern is parsed as a Python/JSON literal (never evaluated as code).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from kgrag.commands.common import load_factory
from kgrag.errors import LLMOutputError
from kgrag.methods.simgrag.pattern import Pattern, PatternError


def _print_result(result: Any, out: Any = print) -> None:
    out(f"pattern: {result.metadata['pattern']}")
    if not result.items:
        out("no matching subgraph")
    for i, sub in enumerate(result.items, 1):
        triples = ", ".join(f"({t.head}, {t.relation}, {t.tail})" for t in sub.triples)
        out(f"graph [{i}] GSD {sub.metadata['gsd']:.3f}: {triples}")
    out(f"vector search {1000 * result.metadata['vector_search_seconds']:.1f} ms, matching "
        f"{1000 * result.metadata['matching_seconds']:.1f} ms")


def _parse_pattern(text: str) -> Pattern:
    """``--pattern`` as a :class:`Pattern` (a literal, never evaluated); raises PatternError."""
    from kgrag.llm.parsing import parse_literal

    try:
        triples = parse_literal(text)
    except LLMOutputError as exc:
        raise PatternError(f"--pattern is not a list of triples: {exc}") from None
    return Pattern.from_triples(triples)


def _cmd_simgrag(args: argparse.Namespace) -> int:
    from kgrag.commands.common import open_graph
    from kgrag.methods.simgrag import SimGRAG

    if not args.pattern and not args.question:
        raise PatternError("give --pattern (no LLM) or --question with --llm")
    pattern = _parse_pattern(args.pattern) if args.pattern else None  # before anything slow
    for option in ("k", "k_nodes", "k_relations"):
        if getattr(args, option) != "auto" and getattr(args, option) < 1:
            raise PatternError(f"--{option.replace('_', '-')} must be at least 1")
    kg = open_graph(args.graph, sep={"\\t": "\t", "tab": "\t"}.get(args.sep, args.sep))
    choices: dict[str, bool | str] = {"yes": True, "no": False, "prefer": "prefer"}
    injective = choices[args.injective]
    method = SimGRAG(kg, llm=load_factory(args.llm, "--llm"),
                     embedder=load_factory(args.embedder, "--embedder"), k=args.k,
                     k_nodes=args.k_nodes, k_relations=args.k_relations, injective=injective,
                     task=args.task)
    if pattern is not None:
        _print_result(method.retrieve_pattern(pattern))
        return 0
    if args.answer:
        answer = method.answer(args.question)
        _print_result(answer.retrieval)
        print(answer.text)
        print(json.dumps({"answers": answer.answers, "usage": answer.usage.as_dict()}))
        return 0
    _print_result(method.retrieve(args.question))
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simgrag", help="SimGRAG: top-k subgraphs most similar to a pattern",
        description=__doc__.split("\n\n")[0])
    parser.add_argument("graph", metavar="GRAPH", help="triples file or saved graph directory")
    parser.add_argument("--sep", default=None, help="field separator of a triples file")
    parser.add_argument("--pattern", help='triples, e.g. \'[("A", "r", "UNKNOWN x 1")]\'')
    parser.add_argument("--question", help="a question (needs --llm)")
    parser.add_argument("--answer", action="store_true", help="also answer (needs --llm)")
    parser.add_argument("--llm", help="package.module:factory returning an LLM")
    parser.add_argument("--embedder", help="package.module:factory (default: packaged MiniLM)")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--k-nodes", type=int, default=16)
    parser.add_argument("--k-relations", type=_k_relations, default="auto",
                        help="nearest relations per pattern relation, or 'auto' (all up to 512)")
    parser.add_argument("--injective", choices=("yes", "no", "prefer"), default="prefer")
    parser.add_argument("--task", choices=("qa", "fact"), default="qa")
    parser.set_defaults(func=_cmd_simgrag)


def _demo_step(ctx: Any) -> None:
    from kgrag.methods.simgrag import SimGRAG

    method = SimGRAG(ctx.kg, k=3)  # packaged MiniLM, offline
    pattern = [("UNKNOWN film 1", "directed by", "Satoshi Kon"),
               ("UNKNOWN film 1", "genre", "Thriller")]
    ctx.out(f"Pattern written by code (no LLM): {pattern}")
    _print_result(method.retrieve_pattern(pattern), ctx.out)


def demo_steps() -> list:
    from kgrag.demo import DemoStep

    return [DemoStep("SimGRAG: top-k subgraphs by Graph Semantic Distance for a pattern (no LLM)",
                     _demo_step)]


def _k_relations(text: str) -> int | str:
    return "auto" if text == "auto" else int(text)
