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

Nothing here names a method: the ``--method`` choices, the options taking what a method's LLM
would write (``--pattern``, ``--query``), their errors and how the method runs on them come from
the method registry (``MethodSpec.written_input``, :class:`~kgrag.methods.registry.WrittenInput`).
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


def _graph_method(method: str) -> Any:
    """The registry entry of ``method``, a method built from a graph."""
    from kgrag.methods.registry import METHODS

    spec = METHODS.get(method)
    if spec is None or spec.builds_from != "graph":
        raise KgragError(f"unknown method {method!r}; choose one of "
                         f"{', '.join(graph_methods())}")
    return spec


def parse_written(method: str, text: str | None) -> Any:
    """``text``, the input ``method``'s LLM would write (its registry entry's
    :class:`~kgrag.methods.registry.WrittenInput`), parsed; ``None`` for no text. A malformed
    one fails here, in milliseconds, before the graph is loaded and its names embedded."""
    if not text:
        return None
    written = _graph_method(method).written_input
    if written is None:
        raise KgragError(f"method {method!r} takes no written input, only the question")
    return written.parser()(text)


def retrieve(kg: Any, question: str, method: str, *, llm: Any = None, written: Any = None,
             top: int = 10, on_unusable_reply: str | None = None,
             method_params: dict[str, Any] | None = None) -> Any:
    """Run ``method`` on ``question`` as the command line does; returns the RetrievalResult.

    ``written``: the input the method's LLM would write (SimGRAG's pattern, UltRAG's query:
    the registry entry's ``written_input``), as text or parsed; with it the method runs on it,
    without an LLM. A method that needs it gets it or an ``llm``. ``on_unusable_reply``: the
    method's policy (default: see :func:`_policy`). ``method_params``: more constructor
    parameters (a fine-tuned adapter's prompts or selector, :mod:`kgrag.finetune.use`)."""
    spec = _graph_method(method)
    hook = spec.written_input
    if isinstance(written, str) and not written:
        written = None
    if hook is not None and written is None and llm is None:  # before the (costly) index
        raise KgragError(f"{hook.owner} needs a {hook.kind}: pass --{hook.option} "
                         f"'{hook.sketch}' or an LLM with --llm module:factory")
    params = dict(spec.ask_params)
    if "top_k" in spec.method_class().config_class.field_names():  # the main result count
        cap = params.get("top_k")  # --top, or the lower of --top and the entry's own cap
        params["top_k"] = top if cap is None else min(top, cap)
    if llm is not None:
        params["on_unusable_reply"] = _policy(on_unusable_reply, spec.method_class())
    params.update(method_params or {})
    built = spec.build(kg, llm=llm, **params)
    if hook is not None and written is not None:
        parsed = hook.parser()(written) if isinstance(written, str) else written
        return getattr(built, hook.retrieve)(parsed, question)
    return built.retrieve(question)


def _policy(requested: str | None, cls: Any) -> str:
    """``--on-unusable-reply``; by default ``"fallback"`` (the LLM-free retrieval) for a method
    that has an LLM-free mode, so a weak model's unusable reply still gives an answer, else
    ``"raise"`` (the error is printed)."""
    if requested:
        return requested
    return "fallback" if getattr(cls, "has_llm_free_mode", False) else "raise"


def _written_option(args: argparse.Namespace) -> str | None:
    """The one written-input option given (``--pattern``, ``--query`` ...), checked against
    ``--method``; its text, or ``None``."""
    from kgrag.methods.registry import METHODS

    given = None
    for name, spec in METHODS.items():
        hook = spec.written_input if spec.builds_from == "graph" else None
        text = getattr(args, hook.option, None) if hook else None
        if hook is None or not text:
            continue
        if name != args.method:
            raise KgragError(f"--{hook.option} is {hook.owner}'s {hook.kind}: use it with "
                             f"--method {name}")
        given = text
    return given


def _cmd_ask(args: argparse.Namespace) -> int:
    from kgrag.commands.common import graph_from_args

    if args.top < 1:
        raise KgragError("--top must be at least 1")
    if args.show and not args.show.lower().endswith((".png", ".html", ".htm")):
        raise KgragError(f"--show needs a .png or .html file name, got {args.show!r}")
    written = parse_written(args.method, _written_option(args))  # before the graph and model
    kg = graph_from_args(args)
    from kgrag.finetune.use import finetuned_params  # --llm local:DIR, a fine-tuned adapter

    tuned = finetuned_params(args.llm, args.method) if written is None else {}
    result = retrieve(kg, args.question, args.method, llm=load_factory(args.llm, "--llm"),
                      written=written, top=args.top, on_unusable_reply=args.on_unusable_reply,
                      method_params=tuned)
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
    from kgrag.methods.registry import METHODS

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
    for spec in METHODS.values():  # each method's written input: --pattern, --query ...
        hook = spec.written_input
        if hook is not None and spec.builds_from == "graph":
            parser.add_argument(f"--{hook.option}", help=hook.help)
    add_model_arguments(parser, embedder_help=None)
    parser.add_argument("--top", type=int, default=10, help="items printed and drawn (default 10)")
    parser.add_argument("--on-unusable-reply", choices=("raise", "empty", "fallback"),
                        default=None,
                        help="an LLM reply the method cannot use: raise (an error), empty (an "
                             "empty result) or fallback (the LLM-free retrieval); default "
                             "fallback for byokg and graphraft, raise for the others")
    parser.set_defaults(func=_cmd_ask)
