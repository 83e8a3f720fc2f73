"""``kgrag ultrag`` and UltRAG's step of ``kgrag demo`` (both offline: queries written by hand).

``kgrag ultrag GRAPH QUERY`` executes a DSL (or BetaE tuple) query over the whole graph and prints
the top entities with their memberships (``--executor hybrid``, the default: exact traversal plus
UltraQuery's guesses where the graph has no answer; ``neural``: UltraQuery; ``symbolic``: exact
traversal), and says why fewer than ``--top`` rows came; ``--prompt QUESTION`` prints the
query-generation prompt an LLM would receive instead.
"""

from __future__ import annotations

import argparse
from typing import Any

from kgrag.commands.common import add_command, add_graph_arguments, graph_from_args, in_rank_order
from kgrag.errors import ConfigurationError

DEMO_QUERY = 'AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by'


def _check_args(args: argparse.Namespace) -> None:
    """The checks that need neither the graph nor the executor (milliseconds)."""
    if not args.query and not args.prompt:
        raise ConfigurationError("give a QUERY to execute, or --prompt QUESTION")
    if args.query and args.prompt:
        raise ConfigurationError("give either a QUERY to execute or --prompt QUESTION, not both")
    if args.top < 1:
        raise ConfigurationError("--top must be at least 1")
    if args.threads is not None and args.threads < 1:
        raise ConfigurationError("--threads must be at least 1")
    if args.query:
        from kgrag.methods.ultrag.query import parse_query

        parse_query(args.query)  # a malformed query fails before the graph is read


def _cmd_ultrag(args: argparse.Namespace) -> int:
    from kgrag.methods.ultrag.pipeline import UltRAG

    _check_args(args)
    kg = graph_from_args(args)
    method = UltRAG(kg, linking=args.linking, projection=args.projection, logic=args.logic,
                    top_k=args.top, executor=args.executor, threads=args.threads,
                    weights=args.weights,
                    **({} if args.min_membership is None
                       else {"min_membership": args.min_membership}))
    if args.prompt:
        print(method.query_prompt(args.prompt))
        return 0
    result = method.retrieve_query(args.query)
    print(f"query: {result.metadata['query']}")
    summary = result.metadata["executor"]
    if summary["kind"] == "hybrid":
        neural = (f"neural guesses added ({summary['reason']})" if summary["neural"] else
                  "no neural guesses needed (every step of the query has facts)")
        print(f"executor: hybrid -- {summary['exact_answers']} answers proved by the graph; "
              f"{neural}")
    ranked = in_rank_order(list(result.items))
    support = result.metadata["support_size"]
    print(f"{support} entities with non-zero membership; top {len(ranked)}:")
    for entity in ranked:
        source = {"exact": "proved", "neural": "guess"}.get(entity.metadata.get("source"), "")
        print(f"  {entity.score:.3f}  {entity.name}  [{entity.metadata['entity_id']}]"
              + (f"  {source}" if source else ""))
    if len(ranked) < args.top:
        cut = result.metadata["below_min_membership"]
        reason = (f"{cut} more scored below --min-membership {method.config.min_membership:g} "
                  "(0 lists every non-zero score)" if cut else
                  f"only {support} entit{'y has' if support == 1 else 'ies have'} a non-zero "
                  "membership")
        print(f"(--top {args.top}: {len(ranked)} shown; {reason})")
    return 0


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "ultrag", help="execute an UltRAG logical query (no LLM)",
        description=f"""
            Execute a logical query over the whole graph and print the entities by fuzzy
            membership, best first. A query names entities in double quotes and follows
            relations with ->; AND(...), OR(...) and NOT(...) combine branches; a relation
            ending in _inv is followed backwards. Example: {DEMO_QUERY}

            --executor hybrid (default) answers from the graph's facts and adds the guesses
            of UltraQuery, the paper's neural executor (checkpoint shipped in the package,
            offline, CPU), only where a step of the query finds no fact; each row says
            "proved" or "guess". --executor neural runs UltraQuery alone, --executor
            symbolic exact fuzzy traversal alone. --prompt QUESTION prints the
            query-generation prompt an LLM would receive instead of executing anything.""",
        examples=[f"kgrag ultrag examples/data/movies.tsv '{DEMO_QUERY}' --top 4",
                  "kgrag ultrag examples/data/movies.tsv '\"Paprika\" -> directed_by' "
                  "--executor symbolic",
                  "kgrag ultrag examples/data/movies.tsv --prompt 'Who directed Paprika?'"])
    add_graph_arguments(parser)
    parser.add_argument("query", metavar="QUERY", nargs="?",
                        help="the logical query: DSL as above, or a BetaE tuple "
                             "(required unless --prompt is given)")
    parser.add_argument("--prompt", metavar="QUESTION",
                        help="print the query-generation prompt for QUESTION instead")
    parser.add_argument("--top", type=int, default=20, help="entities shown (default 20)")
    parser.add_argument("--linking", choices=("exact", "dense"), default="exact",
                        help="how quoted entity names are resolved: exact (default) or dense "
                             "(nearest name by MiniLM embedding, the paper's Eq. 2)")
    parser.add_argument("--executor", choices=("hybrid", "neural", "symbolic"),
                        default="hybrid",
                        help="hybrid (default) = exact traversal, plus UltraQuery's guesses "
                             "where the graph has no answer; neural = UltraQuery with the "
                             "packaged checkpoint (the paper's executor); symbolic = exact "
                             "fuzzy traversal only")
    parser.add_argument("--min-membership", type=float, default=None,
                        help="leave out entities scoring below this (default 0.001; 0 lists "
                             "every non-zero score)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads for the neural executor (default: torch's)")
    parser.add_argument("--weights", metavar="FILE", default=None,
                        help="another UltraQuery checkpoint (.npz, same layout)")
    parser.add_argument("--projection", choices=("max", "noisy_or", "sum"), default="max",
                        help="symbolic executor: how memberships combine over a relation's "
                             "edges (default max)")
    parser.add_argument("--logic", choices=("product", "godel", "lukasiewicz"),
                        default="product",
                        help="fuzzy logic of AND / OR, both executors (default product)")
    parser.set_defaults(func=_cmd_ultrag)


def _demo_step(ctx: Any) -> None:
    from kgrag.methods.ultrag.pipeline import UltRAG
    from kgrag.methods.ultrag.query import parse_query, to_tuple_text

    method = UltRAG(ctx.kg, linking="exact", executor="neural")  # the packaged checkpoint
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
    from kgrag.commands.demo import DemoStep

    return [DemoStep("UltRAG: a logical query executed as fuzzy sets", _demo_step)]
