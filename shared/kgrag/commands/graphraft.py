"""``kgrag graphraft`` commands and GraphRAFT's step of ``kgrag demo`` (both LLM-free).

``kgrag graphraft export-training-data GRAPH QA_FILE OUT_DIR [--limit N]`` synthesises the
fine-tuning data of GraphRAFT (paper §4.1) from question/answer pairs alone: every candidate query
around each question's entities is executed, the best one (most gold hits, then fewest results;
recall 1, precision >= 0.1) becomes the query selector's label, and a context for the answer
model is assembled. It writes ``selector.jsonl``, ``answer.jsonl`` and ``summary.json``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from kgrag.commands.common import add_command, add_graph_arguments, graph_from_args
from kgrag.context.types import ScoredEntity
from kgrag.errors import ConfigurationError


def _cmd_export(args: argparse.Namespace) -> int:
    from kgrag.embed import CachedEmbedder, as_embedder
    from kgrag.methods.graphraft.pipeline import GraphRAFT
    from kgrag.methods.graphraft.training import export_training_data, read_qa_pairs

    for option, value in (("--limit", args.limit), ("--queries", args.queries),
                          ("--max-nodes", args.max_nodes)):
        if value is not None and value < 1:
            raise ConfigurationError(f"{option} must be at least 1")
    pairs = read_qa_pairs(args.qa_file, limit=args.limit, seed=args.seed)
    if not pairs:
        raise ConfigurationError(f"{args.qa_file} holds no questions")
    kg = graph_from_args(args)
    embedder = as_embedder(None)
    if args.cache_dir and not args.no_cache:
        embedder = CachedEmbedder(embedder, args.cache_dir, min_texts=100)
    method = GraphRAFT(kg, embedder=embedder, top_k=args.max_nodes)
    counts = export_training_data(method, pairs, args.out_dir, queries_per_context=args.queries,
                                  alpha=args.alpha, seed=args.seed,
                                  progress=not args.no_progress)
    print(json.dumps(counts))
    print(f"wrote {args.out_dir}/selector.jsonl ({counts['kept']} records), "
          f"{args.out_dir}/answer.jsonl ({counts['answer_records']} records)")
    return 0


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "graphraft", help="GraphRAFT tools (training-data export)",
        description="GraphRAFT tools. export-training-data synthesises the fine-tuning data of "
                    "GraphRAFT (paper section 4.1) from question/answer pairs alone.",
        examples=["kgrag graphraft export-training-data GRAPH QA_FILE OUT_DIR --limit 100"])
    commands = parser.add_subparsers(dest="graphraft_command", metavar="COMMAND",
                                     title="commands")
    commands.required = True
    export = add_command(
        commands, "export-training-data",
        help="fine-tuning data for the query selector and answer model",
        description="""
            Synthesises GraphRAFT's fine-tuning data from question/answer pairs alone: every
            candidate query around each question's entities is executed; the best one (most
            gold answers hit, then fewest results; recall 1, precision at least 0.1) becomes
            the query selector's label, and a context for the answer model is assembled. No
            LLM is needed when the QA file names the entities; otherwise question n-grams are
            linked to the graph.

            Writes selector.jsonl and answer.jsonl (chat format) and summary.json into
            OUT_DIR.""",
        examples=["kgrag graphraft export-training-data examples/data/movies.tsv qa.jsonl "
                  "out/ --limit 100 --no-progress"])
    add_graph_arguments(export)
    export.add_argument("qa_file", metavar="QA_FILE",
                        help="JSONL of {question, answers, entities?} or MetaQA lines "
                             "'question with [topic]<TAB>answer1|answer2'")
    export.add_argument("out_dir", metavar="OUT_DIR", help="directory for the JSONL files")
    export.add_argument("--limit", type=int, default=None,
                        help="a seeded random sample of N questions (default: all)")
    export.add_argument("--seed", type=int, default=0,
                        help="seed of the --limit sample and of the context sampling "
                             "(default 0)")
    export.add_argument("--queries", type=int, default=5,
                        help="candidate queries sampled per answer-model context (paper repo: 5)")
    export.add_argument("--alpha", type=float, default=0.1,
                        help="rank sampling exponent; small favours top ranks (paper repo: 0.1)")
    export.add_argument("--max-nodes", type=int, default=20,
                        help="context size in nodes (default 20)")
    export.add_argument("--cache-dir", metavar="DIR", default=None,
                        help="embedding cache: node-name vectors (reused across runs) and the "
                             "ONNX export of the model (default: $KGRAG_CACHE_DIR or the user "
                             "cache directory)")
    export.add_argument("--no-progress", action="store_true", help="no progress bar")
    export.set_defaults(func=_cmd_export)


# ---------------------------------------------------------------------- demo
DEMO_QUESTION = "Which films directed by Satoshi Kon are set in Tokyo?"


def _demo_step(ctx: Any) -> None:
    import contextlib
    import io

    from kgrag.embed import default_embedder
    from kgrag.methods.graphraft.enumeration import best_label
    from kgrag.methods.graphraft.pipeline import GraphRAFT

    embedder = default_embedder()
    with contextlib.redirect_stderr(io.StringIO()):  # keep model-loading output off the demo
        embedder.embed_query("warm up")
    method = GraphRAFT(ctx.kg, embedder=embedder, top_k=5)
    result = method.retrieve(DEMO_QUESTION)
    ctx.out(f"Question: {DEMO_QUESTION}")
    ctx.out(f"  linked entities: {result.metadata['entities']}")
    ctx.out(f"  {result.metadata['num_candidates']} executable candidate queries "
            "(1hop/2hop/2path); "
            "selected without an LLM (embedding similarity):")
    for text in result.metadata["selected_queries"][:3]:
        ctx.out(f"    {text}")
    ctx.out("  context nodes: " + ", ".join(
        f"{item.name} [{item.source}]" for item in result.items
        if isinstance(item, ScoredEntity)))
    cands = method.backend.enumerate(result.metadata["entities"], gold=["Tokyo Godfathers"])
    label = best_label(cands, 1)
    if label is not None:
        ctx.out("  training label for gold answer 'Tokyo Godfathers' (most hits, fewest results):")
        ctx.out(f"    {label.text}  (hits {label.hits}, results {label.total})")
        query, params = label.pattern.to_cypher()
        ctx.out(f"    as parameterised Cypher: {query}  {params}")


def demo_steps() -> list:
    from kgrag.commands.demo import DemoStep

    return [DemoStep("GraphRAFT: executable candidate queries and a training label (no LLM)",
                     _demo_step)]
