"""``kgrag info GRAPH``: counts, duplicate / self-loop statistics and the relation histogram."""

from __future__ import annotations

import argparse
from typing import Any

from kgrag.commands.common import add_command, add_graph_arguments, graph_from_args


def _cmd_info(args: argparse.Namespace) -> int:
    kg = graph_from_args(args)
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


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "info", help="counts and relation histogram of a graph",
        description="Counts, duplicate and self-loop statistics and the relation histogram of "
                    "a graph.",
        examples=["kgrag info examples/data/movies.tsv --top 5"])
    add_graph_arguments(parser)
    parser.add_argument("--top", type=int, default=20,
                        help="relations to list, most frequent first (0 = all; default 20)")
    parser.set_defaults(func=_cmd_info)
