"""``kgrag ultrag`` and UltRAG's step of ``kgrag demo`` (both offline: queries written by hand).

``kgrag ultrag GRAPH QUERY`` executes a DSL (or BetaE tuple) query over the whole graph and prints
the top entities with their memberships (``--executor neural``, the default: UltraQuery;
``--executor symbolic``: exact traversal); ``--prompt QUESTION`` prints the query-generation
prompt an LLM would receive instead.
"""

from __future__ import annotations

import argparse
from typing import Any

DEMO_QUERY = 'AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by'


def _cmd_ultrag(args: argparse.Namespace) -> int:
    from kgrag.commands.common import graph_from_args
    from kgrag.methods.ultrag.pipeline import UltRAG

    kg = graph_from_args(args)
    method = UltRAG(kg, linking=args.linking, projection=args.projection, logic=args.logic,
                    top_k=args.top, executor=args.executor, threads=args.threads,
                    weights=args.weights)
    if args.prompt:
        print(method.query_prompt(args.prompt))
        return 0
    if not args.query:
        raise SystemExit("give a QUERY to execute, or --prompt QUESTION")
    execution = method.run(args.query)
    print(f"query: {execution.query_text}")
    ranked = method.ranked(execution.scores)
    print(f"{int((execution.scores != 0).sum())} entities with non-zero membership; top "
          f"{len(ranked)}:")
    for entity in ranked:
        print(f"  {entity.score:.3f}  {entity.name}  [{entity.metadata['entity_id']}]")
    return 0


def register(subparsers: Any) -> None:
    from kgrag.commands.common import add_graph_arguments

    parser = subparsers.add_parser(
        "ultrag", help="execute an UltRAG logical query (no LLM)",
        description="Execute a logical query such as 'AND(\"Animation\" -> has_genre_inv, "
                    "\"Japan\" -> country_of_inv) -> directed_by' over the whole graph and print "
                    "the entities by fuzzy membership.")
    add_graph_arguments(parser)
    parser.add_argument("query", nargs="?", help="DSL or BetaE tuple query")
    parser.add_argument("--prompt", metavar="QUESTION",
                        help="print the query-generation prompt for QUESTION instead")
    parser.add_argument("--top", type=int, default=20, help="entities shown")
    parser.add_argument("--linking", choices=("exact", "dense"), default="exact",
                        help="how quoted mentions are resolved (dense = Eq. 2 over MiniLM)")
    parser.add_argument("--executor", choices=("neural", "symbolic"), default="neural",
                        help="neural = UltraQuery with the packaged checkpoint (the paper's "
                             "executor, default); symbolic = exact fuzzy traversal")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads for the neural executor")
    parser.add_argument("--weights", default=None,
                        help="another UltraQuery checkpoint (.npz, same layout)")
    parser.add_argument("--projection", choices=("max", "noisy_or", "sum"), default="max",
                        help="symbolic projection")
    parser.add_argument("--logic", choices=("product", "godel", "lukasiewicz"),
                        default="product")
    parser.set_defaults(func=_cmd_ultrag)


def _demo_step(ctx: Any) -> None:
    from kgrag.methods.ultrag.pipeline import UltRAG
    from kgrag.methods.ultrag.query import parse_query, to_tuple_text

    method = UltRAG(ctx.kg, linking="exact")  # neural: UltraQuery, the packaged checkpoint
    ctx.out("Question: Who directed the Japanese animated films?")
    ctx.out(f"Logical query (as UltRAG's LLM would write it): {DEMO_QUERY}")
    ctx.out(f"  same query in the BetaE tuple form: {to_tuple_text(parse_query(DEMO_QUERY))}")
    found = method.execute(DEMO_QUERY, top_k=5)
    ctx.out("  executed by UltraQuery (neural, zero-shot) over the whole graph:")
    for entity in found:
        ctx.out(f"    {entity.score:.2f}  {entity.name}")
    symbolic = UltRAG(ctx.kg, linking="exact", executor="symbolic").execute(DEMO_QUERY, top_k=5)
    ctx.out("  executed symbolically (exact traversal, the paper's ablation):")
    for entity in symbolic:
        ctx.out(f"    {entity.score:.2f}  {entity.name}")
    prompt = method.query_prompt("Who directed the Japanese animated films?")
    ctx.out(f"  (with an LLM, the query prompt lists all {ctx.kg.num_relations} relations: "
            f"{len(prompt)} characters)")


def demo_steps() -> list:
    from kgrag.demo import DemoStep

    return [DemoStep("UltRAG: a logical query executed as fuzzy sets", _demo_step)]
