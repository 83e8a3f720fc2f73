"""``kgrag ask GRAPH "question" --method M [--show out.png|out.html]``: one retrieval, printed
and optionally drawn with :mod:`kgrag.viz`.

Without an LLM every method runs offline:

* ``byokg`` -- ByoKG-RAG's LLM-free mode (question n-grams linked to entities, scored
  triplets and paths, ranked answer candidates);
* ``graphraft`` -- GraphRAFT without an LLM (n-gram linking, candidate queries chosen by
  embedding similarity);
* ``simgrag`` -- needs the query pattern an LLM would write: ``--pattern '[("UNKNOWN film 1",
  "directed by", "Satoshi Kon")]'`` (parsed as a literal, never evaluated);
* ``ultrag`` -- needs the logical query an LLM would write: ``--query '"Japan" -> country_of_inv'``.

``--llm package.module:factory`` names a function returning a LangChain chat model or a
LlamaIndex LLM; with it, SimGRAG and UltRAG write their own pattern / query and ByoKG-RAG and
GraphRAFT run their LLM modes. The packaged MiniLM is loaded for byokg, graphraft and simgrag.
"""

from __future__ import annotations

import argparse
from typing import Any

from kgrag.commands.common import add_command, load_factory
from kgrag.context.types import ScoredEntity
from kgrag.errors import KgragError

def graph_methods() -> list[str]:
    """The ``--method`` choices: every registered method built from a graph."""
    from kgrag.methods.registry import method_names

    return method_names("graph")

def retrieve(kg: Any, question: str, method: str, *, llm: Any = None, pattern: str | None = None,
             query: str | None = None, top: int = 10, on_unusable_reply: str | None = None
             ) -> Any:
    """Run ``method`` on ``question`` as the command line does; returns the RetrievalResult.
    ``on_unusable_reply``: the method's policy (default: see :func:`_policy`)."""
    if method == "simgrag":
        from kgrag.llm.parsing import parse_literal
        from kgrag.methods.simgrag import SimGRAG

        if not pattern and llm is None:  # checked before the (costly) index is built
            raise KgragError("SimGRAG needs a query pattern: pass --pattern '[(\"UNKNOWN x 1\", "
                             "\"relation\", \"Entity\")]' or an LLM with --llm module:factory")
        simgrag = SimGRAG(kg, llm=llm, k=min(top, 3),
                          on_unusable_reply=_policy(on_unusable_reply, SimGRAG))
        if pattern:
            return simgrag.retrieve_pattern(parse_literal(pattern), question)
        return simgrag.retrieve(question)
    if method == "ultrag":
        from kgrag.methods.ultrag.pipeline import UltRAG

        if not query and llm is None:
            raise KgragError("UltRAG needs a logical query: pass --query '\"Entity\" -> relation' "
                             "or an LLM with --llm module:factory")
        ultrag = UltRAG(kg, llm=llm, linking="exact", top_k=top,
                        on_unusable_reply=_policy(on_unusable_reply, UltRAG))
        if query:
            return ultrag.retrieve_query(query, question)
        return ultrag.retrieve(question)
    from kgrag.methods.registry import METHODS

    spec = METHODS.get(method)
    if spec is None or spec.builds_from != "graph":
        raise KgragError(f"unknown method {method!r}; choose one of "
                         f"{', '.join(graph_methods())}")
    # any other method: its LLM-free mode (or its LLM mode with --llm) from the question text
    params = dict(spec.ask_params)
    if spec.ask_top_param:
        params[spec.ask_top_param] = top
    if llm is not None:
        params["on_unusable_reply"] = _policy(on_unusable_reply, spec.method_class())
    return spec.build(kg, llm=llm, **params).retrieve(question)


def _policy(requested: str | None, cls: Any) -> str:
    """``--on-unusable-reply``; by default ``"fallback"`` (the LLM-free retrieval) for a method
    that has an LLM-free mode, so a weak model's unusable reply still gives an answer, else
    ``"raise"`` (the error is printed)."""
    if requested:
        return requested
    return "fallback" if getattr(cls, "has_llm_free_mode", False) else "raise"

def _check_method_inputs(method: str, pattern: str | None, query: str | None) -> None:
    """Fail on a malformed ``--pattern`` / ``--query`` in milliseconds, not after the graph is
    loaded and its names embedded."""
    if method == "simgrag" and pattern:
        from kgrag.llm.parsing import parse_literal
        from kgrag.methods.simgrag.pattern import Pattern, PatternError

        try:
            Pattern.from_triples(parse_literal(pattern))
        except PatternError:
            raise
        except KgragError as exc:
            raise PatternError(f"--pattern is not a list of triples: {exc}") from None
    if method == "ultrag" and query:
        from kgrag.methods.ultrag.query import parse_query

        parse_query(query)


def ranked(result: Any) -> Any:
    """``result`` as ``kgrag ask`` prints and draws it: in the method's own rank order, the
    order the LangChain and LlamaIndex adapters return, so the command line and the API put
    the same answer first (every method's scores are monotone with that order)."""
    return result


def _cmd_ask(args: argparse.Namespace) -> int:
    from kgrag.commands.common import graph_from_args

    if args.top < 1:
        raise KgragError("--top must be at least 1")
    if args.show and not args.show.lower().endswith((".png", ".html", ".htm")):
        raise KgragError(f"--show needs a .png or .html file name, got {args.show!r}")
    if args.pattern and args.method != "simgrag":
        raise KgragError("--pattern is SimGRAG's query pattern: use it with --method simgrag")
    if args.query and args.method != "ultrag":
        raise KgragError("--query is UltRAG's logical query: use it with --method ultrag")
    _check_method_inputs(args.method, args.pattern, args.query)  # before the graph and model
    kg = graph_from_args(args)
    result = ranked(retrieve(kg, args.question, args.method,
                             llm=load_factory(args.llm, "--llm"), pattern=args.pattern,
                             query=args.query, top=args.top,
                             on_unusable_reply=args.on_unusable_reply))
    print(f"question: {result.question}")
    print(f"method: {result.method}  items: {len(result.items)}  "
          f"LLM calls: {result.usage.calls}  (best first)")
    if result.metadata.get("fallback"):
        print(f"unusable LLM reply ({result.metadata['fallback']}): LLM-free retrieval")
    elif result.metadata.get("error"):
        print(f"error: {result.metadata['error']}")
    elif not result.items and result.metadata.get("empty_reason"):
        print(f"nothing retrieved: {result.metadata['empty_reason']}")
    for rank, item in enumerate(result.items[: args.top], start=1):
        score = getattr(item, "score", None)
        shows_score = ((isinstance(item, ScoredEntity) and item.show_score)
                       or not isinstance(score, (int, float)))
        score_text = "" if shows_score else f"[{score:.3f}] "
        print(f"  {rank}. {score_text}{item.verbalize()}")
    if len(result.items) > args.top:
        print(f"  ... {len(result.items) - args.top} more (--top)")
    if args.show:
        from kgrag.viz import render

        path = render(result, args.show, graph=kg, max_items=args.top)
        print(f"wrote {path}")
    return 0


def register(subparsers: Any) -> None:
    from kgrag.commands.common import add_graph_arguments, add_model_arguments

    parser = add_command(
        subparsers, "ask", help="retrieve for one question with a method; optionally draw it",
        description="""
            One retrieval for a question with one method, printed best first and optionally
            drawn to a PNG or HTML file. Without an LLM every method runs offline: byokg and
            graphraft in their LLM-free modes (question n-grams linked to the graph);
            simgrag needs the query pattern an LLM would write (--pattern), ultrag the
            logical query (--query).

            --llm package.module:factory names a function returning a LangChain chat model
            or a LlamaIndex LLM; with it, SimGRAG and UltRAG write their own pattern / query
            and ByoKG-RAG and GraphRAFT run their LLM modes.""",
        examples=['kgrag ask examples/data/movies.tsv "Who directed Tokyo Godfathers?" '
                  "--method graphraft --top 5",
                  'kgrag ask examples/data/movies.tsv "Who directed Paprika?" --method ultrag '
                  "--query '\"Paprika\" -> directed_by' --show paprika.html"])
    add_graph_arguments(parser)
    parser.add_argument("question", metavar="QUESTION", help="the question, in words")
    parser.add_argument("--method", choices=graph_methods(), default="byokg",
                        help="retrieval method (default byokg)")
    parser.add_argument("--show", metavar="FILE",
                        help="draw the retrieval to FILE (.png or .html)")
    parser.add_argument("--pattern", help="SimGRAG query pattern (a list of triples) instead of "
                                          "an LLM, e.g. '[(\"UNKNOWN film 1\", "
                                          "\"directed_by\", \"Satoshi Kon\")]'")
    parser.add_argument("--query", help="UltRAG logical query (DSL) instead of an LLM, e.g. "
                                        "'\"Japan\" -> country_of_inv'")
    add_model_arguments(parser, embedder_help=None)
    parser.add_argument("--top", type=int, default=10, help="items printed and drawn (default 10)")
    parser.add_argument("--on-unusable-reply", choices=("raise", "empty", "fallback"),
                        default=None,
                        help="an LLM reply the method cannot use: raise (an error), empty (an "
                             "empty result) or fallback (the LLM-free retrieval); default "
                             "fallback for byokg and graphraft, raise for the others")
    parser.set_defaults(func=_cmd_ask)
