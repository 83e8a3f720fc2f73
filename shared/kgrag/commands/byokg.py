"""``kgrag byokg`` and ByoKG-RAG's step of ``kgrag demo`` (both offline, no LLM needed).

``kgrag byokg GRAPH QUESTION`` runs the LLM-free retriever (question n-grams -> linked entities,
text-scored triplets, 2-hop paths, ranked answer candidates); ``--path`` / ``--entity`` /
``--answer`` instead hand it the artifacts a KG-Linker would write and run one ByoKG-RAG
iteration with those (paths, shortest paths), so the graph tools can be tried without an LLM.
"""

from __future__ import annotations

import argparse
from typing import Any

from kgrag.commands.common import add_command, add_graph_arguments, graph_from_args
from kgrag.errors import ConfigurationError
from kgrag.methods.byokg.pipeline import ByoKGRAG


def scripted_linker(entities: list[str], paths: list[str], answers: list[str]) -> Any:
    """A stand-in KG-Linker that always writes the given artifacts, then FINISH."""
    first = ("<entities>\n" + "\n".join(entities) + "\n</entities>\n<paths>\n" + "\n".join(paths)
             + "\n</paths>\n<answers>\n" + "\n".join(answers) + "\n</answers>")

    def reply(prompt: str) -> str:
        return first if "Graph context:\n(none yet" in prompt else "<entities>FINISH</entities>"

    return reply


def _cmd_byokg(args: argparse.Namespace) -> int:
    for option, value in (("--top", args.top), ("--lines", args.lines)):
        if value < 1:
            raise ConfigurationError(f"{option} must be at least 1")
    kg = graph_from_args(args)
    cache_dir = None if args.no_cache else args.cache_dir
    if args.entity or args.path or args.answer:
        method = ByoKGRAG(kg, llm=scripted_linker(args.entity, args.path, args.answer),
                          linking_mode=args.linking, triplet_retrieval="none", text_top_k=0,
                          iterations=1, cache_dir=cache_dir)
        result = method.retrieve(args.question)
        log = result.metadata["iterations"][0]
        print(f"linked entities: {log['linked_entities']}")
        print(f"linked answers:  {log['linked_answers']}")
        for followed in log.get("followed_paths", []):
            note = " (prefix only)" if followed["partial"] else ""
            print(f"path {followed['metapath']!r}: {followed['walks']} walk(s){note}")
    else:
        method = ByoKGRAG(kg, linking_mode=args.linking, cache_dir=cache_dir)
        result = method.retrieve(args.question)
        print(f"entities in the question: {result.metadata['entities']}")
        print(f"answer candidates: {result.metadata['answer_candidates'][:args.top]}")
    print("context:")
    for line in result.metadata["context"].splitlines()[: args.lines]:
        print(f"  {line}")
    return 0


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "byokg", help="ByoKG-RAG retrieval without an LLM",
        description="""
            ByoKG-RAG retrieval without an LLM: question n-grams are linked to entities,
            triples are scored against the question text, 2-hop paths are followed, and the
            answer candidates are ranked.

            With --entity / --path / --answer, the artifacts a KG-Linker (the LLM) would
            write are given on the command line instead, and one ByoKG-RAG iteration runs
            with them (linking, relation paths, shortest paths), so the graph tools can be
            tried without an LLM.""",
        examples=['kgrag byokg examples/data/movies.tsv "Who directed Tokyo Godfathers?" '
                  "--linking fuzzy",
                  'kgrag byokg examples/data/movies.tsv "Where was the director of Tokyo '
                  'Godfathers born?" --entity "Tokyo Godfathers" --path "directed_by -> '
                  'born_in" --linking fuzzy'])
    add_graph_arguments(parser)
    parser.add_argument("question", metavar="QUESTION", help="the question, in words")
    parser.add_argument("--entity", action="append", default=[],
                        help="a question entity, as a KG-Linker would write it (repeatable)")
    parser.add_argument("--path", action="append", default=[],
                        help="a relation path 'r1 -> r2' to follow from the entities "
                             "(repeatable)")
    parser.add_argument("--answer", action="append", default=[],
                        help="a draft answer to link to the graph (repeatable)")
    parser.add_argument("--linking", choices=("fuzzy", "dense", "hybrid"), default="hybrid",
                        help="entity linking: fuzzy (rapidfuzz, instant), dense (MiniLM "
                             "embeddings) or hybrid (both; default)")
    parser.add_argument("--cache-dir", metavar="DIR", default=None,
                        help="embedding cache: name vectors and the ONNX export of the model "
                             "(default: $KGRAG_CACHE_DIR or the user cache directory)")
    parser.add_argument("--top", type=int, default=10,
                        help="answer candidates shown (default 10)")
    parser.add_argument("--lines", type=int, default=30, help="context lines shown (default 30)")
    parser.set_defaults(func=_cmd_byokg)


def _demo_step(ctx: Any) -> None:
    question = "Where was the director of Tokyo Godfathers born?"
    artifacts = {"entities": ["Tokyo Godfathers"], "paths": ["directed_by -> born_in"],
                 "answers": ["Sapporo"]}
    ctx.out(f"Question: {question}")
    ctx.out(f"KG-Linker artifacts (scripted, as an LLM would write them): {artifacts}")
    method = ByoKGRAG(ctx.kg, llm=scripted_linker(**artifacts), linker=ctx.linker,
                      triplet_retrieval="none", text_top_k=0)
    result = method.retrieve(question)
    ctx.out(f"  LLM calls: {result.usage.calls}; stop: {result.metadata['stop_reason']}")
    ctx.out("  graph context:")
    for line in result.metadata["context"].splitlines():
        ctx.out(f"    {line}")


def demo_steps() -> list:
    from kgrag.commands.demo import DemoStep

    return [DemoStep("ByoKG-RAG: KG-Linker artifacts grounded by graph tools", _demo_step)]
