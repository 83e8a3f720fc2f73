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

from kgrag.commands.common import (
    add_command,
    add_graph_arguments,
    add_model_arguments,
    graph_from_args,
    in_rank_order,
    load_factory,
)
from kgrag.errors import ConfigurationError
from kgrag.methods.simgrag.pattern import Pattern, PatternError, pattern_from_text


def _print_result(result: Any, out: Any = print) -> None:
    out(f"pattern: {result.metadata['pattern']}")
    if not result.items:
        out("no matching subgraph")
    for i, sub in enumerate(in_rank_order(result.items), 1):
        triples = ", ".join(f"({t.head}, {t.relation}, {t.tail})" for t in sub.triples)
        out(f"graph [{i}] GSD {sub.metadata['gsd']:.3f}: {triples}")
    out(f"vector search {1000 * result.metadata['vector_search_seconds']:.1f} ms, matching "
        f"{1000 * result.metadata['matching_seconds']:.1f} ms")


def _check_args(args: argparse.Namespace) -> Pattern | None:
    """Every argument check that needs neither the graph nor a model (milliseconds); the
    parsed ``--pattern``, if given."""
    if not args.pattern and not args.question:
        raise PatternError("give --pattern (no LLM) or --question with --llm")
    if args.answer and not args.question:
        raise ConfigurationError("--answer needs the --question to answer")
    if (args.answer or not args.pattern) and not args.llm:
        raise ConfigurationError("--question without --pattern, and --answer, need --llm "
                                 "package.module:factory (without an LLM, give --pattern)")
    pattern = pattern_from_text(args.pattern) if args.pattern else None
    for option in ("k", "k_nodes", "k_relations"):
        if getattr(args, option) != "auto" and getattr(args, option) < 1:
            raise PatternError(f"--{option.replace('_', '-')} must be at least 1")
    return pattern


def _cmd_simgrag(args: argparse.Namespace) -> int:
    from kgrag.methods.simgrag import SimGRAG

    pattern = _check_args(args)  # before anything slow
    kg = graph_from_args(args)
    choices: dict[str, bool | str] = {"yes": True, "no": False, "prefer": "prefer"}
    injective = choices[args.injective]
    method = SimGRAG(kg, llm=load_factory(args.llm, "--llm"),
                     embedder=load_factory(args.embedder, "--embedder"), top_k=args.k,
                     node_top_k=args.k_nodes, relation_top_k=args.k_relations, injective=injective,
                     task=args.task)
    if pattern is not None:
        result = method.retrieve_pattern(pattern, args.question or "")
        _print_result(result)
        if args.answer:
            _print_answer(method.answer_from(args.question, result))
        return 0
    if args.answer:
        answer = method.answer(args.question)
        _print_result(answer.retrieval)
        _print_answer(answer)
        return 0
    _print_result(method.retrieve(args.question))
    return 0


def _print_answer(answer: Any) -> None:
    print(answer.text)
    print(json.dumps({"answers": answer.answers, "usage": answer.usage.as_dict()}))


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "simgrag", help="SimGRAG: top-k subgraphs most similar to a pattern",
        description="""
            SimGRAG retrieval: the k subgraphs of the graph closest to a query pattern by
            Graph Semantic Distance (lower is closer), best first.

            Without an LLM, give the pattern yourself with --pattern: a list of
            (head, relation, tail) triples where unknown entities are named "UNKNOWN <type>
            <n>". It is parsed as a Python/JSON literal, never evaluated as code. With
            --llm package.module:factory (a function returning a LangChain chat model or a
            LlamaIndex LLM) and --question, the LLM writes the pattern; with --answer it also
            answers from the retrieved subgraphs.""",
        examples=["kgrag simgrag examples/data/movies.tsv --pattern "
                  "'[(\"UNKNOWN film 1\", \"directed_by\", \"Satoshi Kon\"), "
                  "(\"UNKNOWN film 1\", \"has_genre\", \"Thriller\")]'",
                  "kgrag simgrag GRAPH --question 'Who directed Paprika?' --llm mymodels:chat "
                  "--answer"])
    add_graph_arguments(parser)
    parser.add_argument("--pattern", help='the query pattern, a list of triples, e.g. '
                                          '\'[("UNKNOWN film 1", "directed_by", "Satoshi Kon")]\'')
    parser.add_argument("--question", help="a question; the LLM writes the pattern (needs --llm)")
    parser.add_argument("--answer", action="store_true",
                        help="also answer the question from the subgraphs (needs --llm)")
    add_model_arguments(parser)
    parser.add_argument("--k", type=int, default=3,
                        help="subgraphs to return, best first (default 3)")
    parser.add_argument("--k-nodes", type=int, default=16,
                        help="nearest graph entities per named pattern entity (default 16)")
    parser.add_argument("--k-relations", type=_k_relations, default="auto",
                        help="nearest relations per pattern relation, or 'auto' (all up to 512; "
                             "default)")
    parser.add_argument("--injective", choices=("yes", "no", "prefer"), default="prefer",
                        help="yes: a graph entity matches at most one pattern entity; no: "
                             "reuse allowed; prefer (default): the best one-to-one match first, "
                             "then the best reusing one")
    parser.add_argument("--task", choices=("qa", "fact"), default="qa",
                        help="the paper's prompts: qa (question answering, default) or fact "
                             "(fact verification)")
    parser.set_defaults(func=_cmd_simgrag)


def _demo_step(ctx: Any) -> None:
    from kgrag.methods.simgrag import SimGRAG

    method = SimGRAG(ctx.kg, top_k=3)  # packaged MiniLM, offline
    pattern = [("UNKNOWN film 1", "directed by", "Satoshi Kon"),
               ("UNKNOWN film 1", "genre", "Thriller")]
    ctx.out(f"Pattern written by code (no LLM): {pattern}")
    _print_result(method.retrieve_pattern(pattern), ctx.out)


def demo_steps() -> list:
    from kgrag.commands.demo import DemoStep

    return [DemoStep("SimGRAG: top-k subgraphs by Graph Semantic Distance for a pattern (no LLM)",
                     _demo_step)]


def _k_relations(text: str) -> int | str:
    return "auto" if text == "auto" else int(text)
