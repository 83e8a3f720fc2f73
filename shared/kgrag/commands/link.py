"""``kgrag link GRAPH MENTION...``: the top-k entity (or relation) links of each mention."""

from __future__ import annotations

import argparse
from typing import Any

from kgrag.commands.common import add_command, add_graph_arguments, graph_from_args, in_rank_order
from kgrag.errors import KgragError


def _cmd_link(args: argparse.Namespace) -> int:
    from kgrag.linking import EntityLinker, RelationLinker

    if args.top_k < 1:
        raise KgragError("--top-k must be at least 1")
    kg = graph_from_args(args)
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


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "link", help="link mentions to graph entities (or relations)",
        description="Top-k entity links with scores, best first. Exact and alias matches come "
                    "first, then the top-k of the mode: fuzzy (rapidfuzz), dense (packaged "
                    "MiniLM embeddings + FAISS; the graph's name vectors are embedded once and "
                    "then read from the embedding cache) or hybrid (both).",
        examples=['kgrag link examples/data/movies.tsv "tokyo godfather" "Kurosawa"',
                  'kgrag link examples/data/movies.tsv director --relations --top-k 2'])
    add_graph_arguments(parser)
    parser.add_argument("mentions", metavar="MENTION", nargs="+", help="text to link")
    parser.add_argument("--top-k", type=int, default=3, help="links per mention (default 3)")
    parser.add_argument("--mode", choices=("fuzzy", "dense", "hybrid"), default="fuzzy",
                        help="fuzzy (default; instant), dense or hybrid")
    parser.add_argument("--relations", action="store_true",
                        help="link to relation names instead of entities")
    parser.set_defaults(func=_cmd_link)
