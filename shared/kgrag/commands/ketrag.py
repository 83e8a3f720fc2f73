"""``kgrag ketrag index DIR`` and ``kgrag ketrag ask INDEX "question"``.

``index`` reads every ``.txt`` / ``.md`` file under ``DIR`` (or one file), builds the KET-RAG
index with progress bars, saves it (default ``DIR.ketrag``) and prints its size and indexing
cost, including the projection to full extraction (beta = 1). Without ``--llm`` it builds the
LLM-free keyword-only index (beta = 0). ``--llm package.module:factory`` names a function
returning a LangChain chat model or LlamaIndex LLM (e.g. one that builds ``ChatOpenAI``);
``--embedder`` likewise names an embedder factory (default: the packaged MiniLM). LLM
replies are cached in ``--cache-dir`` (default ``<out>.cache``) so an interrupted run resumes.

``ask`` prints the retrieved context (no LLM), or the answer when ``--llm`` is given.

KET-RAG's step of ``kgrag demo`` (:func:`demo_steps`) indexes short paragraphs written from the
bundled movie graph (:func:`movie_paragraphs`) with the keyword channel only (beta = 0, no LLM)
and asks one two-hop question.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from kgrag.commands.common import add_command, add_model_arguments, load_factory
from kgrag.context.types import Chunk

TEXT_SUFFIXES = (".txt", ".md")
KETRAG_LLM_HELP = "package.module:factory returning a LangChain/LlamaIndex LLM"


def read_documents(path: Path) -> list[dict[str, Any]]:
    """The text files under ``path`` (sorted) as ``{"id", "text", "metadata"}`` documents."""
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.rglob("*")
                       if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)
    else:
        raise FileNotFoundError(f"no file or directory at {path}")
    if not files:
        raise FileNotFoundError(f"no .txt or .md files under {path}")
    docs = []
    for f in files:
        text = f.read_text(encoding="utf-8", errors="replace")
        rel = str(f.relative_to(path)) if path.is_dir() else f.name
        docs.append({"id": rel, "text": text, "metadata": {"source": rel}})
    return docs


def _cmd_index(args: argparse.Namespace) -> int:
    from kgrag.methods.ketrag import build_index

    source = Path(args.directory)
    out = Path(args.out) if args.out else source.with_name(source.name.rstrip("/") + ".ketrag")
    llm = load_factory(args.llm)
    embedder = load_factory(args.embedder, "--embedder")
    budget = args.budget if args.budget is not None else (0.8 if llm is not None else 0.0)
    docs = read_documents(source)
    print(f"KET-RAG: indexing {len(docs)} document(s) from {source} "
          f"(beta={budget:g}{'' if llm is not None else ', LLM-free keyword index'})")
    index = build_index(docs, llm=llm, embedder=embedder, budget=budget, chunk_size=args.chunk_size,
                        splits=args.splits, neighbor_top_k=args.k, max_workers=args.workers,
                        cache_dir=args.cache_dir or str(out) + ".cache",
                        progress=not args.no_progress)
    index.save(out)
    print(f"saved to {out}")
    print("index: " + ", ".join(f"{k} {v}" for k, v in index.summary().items()))
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in index.timings.items()))
    total = index.cost["llm"]["total"]
    print(f"LLM: {total['calls']} calls ({total['cached_calls']} from cache), "
          f"{total['prompt_tokens']} prompt + {total['completion_tokens']} completion tokens")
    for beta in sorted({budget, 0.8, 1.0}):
        p = index.projected_cost(beta)
        line = (f"projected extraction at beta={beta:g}: {p['first_extraction_calls']} calls "
                f"(+ up to {p['max_gleaning_calls']} gleanings), "
                f"{p['first_extraction_prompt_tokens']} first-pass prompt tokens")
        if "estimated_total" in p:
            e = p["estimated_total"]
            line += (f"; estimated total {e['calls']} calls, {e['prompt_tokens']} prompt + "
                     f"{e['completion_tokens']} completion tokens")
        print(line)
    return 0


def _cmd_ask(args: argparse.Namespace) -> int:
    from kgrag.methods.ketrag import KETRAG

    params = {}
    if args.context_tokens is not None:
        params["context_tokens"] = args.context_tokens
    if args.graph_share is not None:
        params["graph_share"] = args.graph_share
    llm = load_factory(args.llm)
    method = KETRAG.load(args.index, llm=llm, embedder=load_factory(args.embedder, "--embedder"),
                         **params)
    if llm is not None:
        answer = method.answer(args.question)
        result = answer.retrieval
        if args.json:
            print(json.dumps({"answer": answer.text, "answers": answer.answers,
                              "usage": answer.usage.as_dict(),
                              "context_tokens": result.metadata["context_tokens"]}))
            return 0
        print(f"Answer: {answer.text}")
        if args.show_context:
            print(result.metadata["context"])
        return 0
    result = method.retrieve(args.question)
    if args.json:
        print(json.dumps({"items": [{"id": i.chunk_id, "score": i.score, **i.metadata,
                                     "text": i.text} for i in _chunks(result)],
                          "context_tokens": result.metadata["context_tokens"]}, default=str))
        return 0
    print(result.metadata["context"] or "(nothing retrieved)")
    print(f"\n[{len(result.items)} items, {result.metadata['context_tokens']} tokens; "
          "pass --llm module:factory for an answer]")
    return 0


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "ketrag", help="KET-RAG: index documents, ask questions",
        description="KET-RAG over your own documents: 'index' builds the index from a folder of "
                    "text files, 'ask' retrieves from it (and answers, with an LLM).",
        examples=["kgrag ketrag index docs/ --out docs.ketrag",
                  'kgrag ketrag ask docs.ketrag "Who founded the company?"'])
    sub = parser.add_subparsers(dest="ketrag_command", metavar="SUBCOMMAND", title="commands")
    sub.required = True

    index = add_command(
        sub, "index", help="index a folder of .txt/.md files",
        description="""
            Reads every .txt / .md file under DIR (or one file), builds the KET-RAG index
            with progress bars, saves it (default DIR.ketrag) and prints its size and
            indexing cost, including the projection to full extraction (beta = 1).

            Without --llm it builds the LLM-free keyword-only index (beta = 0). --llm
            package.module:factory names a function returning a LangChain chat model or a
            LlamaIndex LLM (for example one that builds ChatOpenAI); --embedder likewise
            names an embedder factory (default: the packaged all-MiniLM-L6-v2). LLM replies
            are cached (default OUT.cache) so an interrupted run resumes.""",
        examples=["kgrag ketrag index docs/ --no-progress",
                  "kgrag ketrag index docs/ --llm mymodels:chat --budget 0.8"])
    index.add_argument("directory", metavar="DIR", help="folder of text files (or one file)")
    index.add_argument("--out", help="index directory to write (default: DIR.ketrag)")
    add_model_arguments(index, llm_help=KETRAG_LLM_HELP,
                        embedder_help="package.module:factory returning an embedder "
                                      "(LangChain, LlamaIndex or kgrag); default: the packaged "
                                      "all-MiniLM-L6-v2")
    index.add_argument("--budget", type=float, default=None,
                       help="beta, share of chunks sent to the LLM "
                            "(default 0.8 with --llm, else 0)")
    index.add_argument("--chunk-size", type=int, default=1200,
                       help="l, tokens per chunk (default 1200)")
    index.add_argument("--splits", type=int, default=3,
                       help="m, halvings into sub-chunks (default 3)")
    index.add_argument("-k", type=int, default=2,
                       help="lexical and semantic KNN neighbours per chunk (default 2)")
    index.add_argument("--workers", type=int, default=4,
                       help="concurrent LLM calls (default 4)")
    index.add_argument("--cache-dir", metavar="DIR",
                       help="cache folder: the LLM replies (llm_cache.jsonl, so an interrupted "
                            "run resumes) and the embedding cache (default: LLM replies in "
                            "OUT.cache, embeddings in $KGRAG_CACHE_DIR or the user cache "
                            "directory)")
    index.add_argument("--no-cache", action="store_true",
                       help="neither read nor write cached vectors (embed again); LLM replies "
                            "are still cached, so an interrupted run still resumes")
    index.add_argument("--no-progress", action="store_true", help="hide progress bars")
    index.set_defaults(func=_cmd_index)

    ask = add_command(
        sub, "ask", help="retrieve (and answer with --llm) from a saved index",
        description="Prints the context KET-RAG retrieves for the question from a saved index "
                    "(no LLM), or the answer when --llm is given.",
        examples=['kgrag ketrag ask docs.ketrag "Where was Ada Lovelace born?" --json'])
    ask.add_argument("index", metavar="INDEX", help="index directory written by 'index'")
    ask.add_argument("question", metavar="QUESTION", help="the question, in words")
    add_model_arguments(ask, llm_help=KETRAG_LLM_HELP,
                        embedder_help="package.module:factory of the embedder the index was "
                                      "built with")
    ask.add_argument("--context-tokens", type=int, default=None,
                     help="L, the context budget in tokens (default 12000)")
    ask.add_argument("--graph-share", type=float, default=None,
                     help="lambda, the share of the context for the graph channel (default "
                          "0.5)")
    ask.add_argument("--show-context", action="store_true",
                     help="with --llm: print the context too")
    ask.add_argument("--json", action="store_true", help="machine-readable output")
    ask.set_defaults(func=_cmd_ask)


def _chunks(result: Any) -> list[Chunk]:
    """KET-RAG's retrieved items: context units, each a :class:`~kgrag.context.types.Chunk`."""
    return [item for item in result.items if isinstance(item, Chunk)]


# ---------------------------------------------------------------------- demo
PHRASES = {"directed_by": "was directed by", "written_by": "was written by",
           "release_year": "was released in", "in_language": "is in",
           "set_in": "is set in", "country_of": "comes from", "has_genre": "is a film of genre",
           "born_in": "was born in", "located_in": "is located in"}


def movie_paragraphs(kg: Any, limit: int = 60) -> list[str]:
    """One short paragraph per subject: its facts verbalised as sentences."""
    facts: dict[str, list[str]] = defaultdict(list)
    for t in kg.triples():
        phrase = PHRASES.get(t.relation)
        if phrase:
            facts[t.head].append(f"{t.head} {phrase} {t.tail}.")
    return [" ".join(sentences) for _, sentences in sorted(facts.items())[:limit]]


def _quiet_default_embedder() -> Any:
    """The packaged MiniLM, loaded with the model-loading progress bar kept off the demo output."""
    import contextlib
    import io

    from kgrag.embed import default_embedder

    embedder = default_embedder()
    with contextlib.redirect_stderr(io.StringIO()):
        embedder.embed_query("warm up")
    return embedder


def _ketrag_step(ctx: Any) -> None:
    from kgrag.methods.ketrag import KETRAG

    docs = movie_paragraphs(ctx.kg, limit=10_000)
    method = KETRAG.from_documents(docs, embedder=_quiet_default_embedder(), budget=0,
                                   chunk_size=120, splits=1, progress=False, context_tokens=400)
    summary = method.index.summary()
    ctx.out(f"Indexed {len(docs)} paragraphs: {summary['chunks']} chunks, "
            f"{summary['sub_chunks']} sub-chunks, {summary['keywords']} keywords (no LLM).")
    p8, p1 = method.index.projected_cost(0.8), method.index.projected_cost(1.0)
    ctx.out(f"Skeleton extraction would cost {p8['first_extraction_calls']} calls at beta=0.8 "
            f"vs {p1['first_extraction_calls']} at beta=1 "
            f"({p8['first_extraction_prompt_tokens']} vs {p1['first_extraction_prompt_tokens']} "
            "first-pass prompt tokens).")
    question = "Where was the director of Tokyo Godfathers born?"
    result = method.retrieve(question)
    ctx.out(f"Question: {question}")
    chunks = [item for item in result.items if isinstance(item, Chunk)]  # every KET-RAG item
    for item in chunks[:3]:
        ctx.out(f"  [{item.metadata['channel']} {item.score:.2f}] {item.text[:110]}")
    second_hop = next((rank for rank, item in enumerate(chunks)
                       if "Satoshi Kon was born in" in item.text), None)
    ctx.out(f"  {len(result.items)} sub-chunks, {result.metadata['context_tokens']} tokens; the "
            "second hop ('Satoshi Kon was born in ...') is "
            + (f"item {second_hop + 1}" if second_hop is not None else "not in the context"))


def demo_steps() -> list:
    from kgrag.commands.demo import DemoStep

    return [DemoStep("KET-RAG keyword channel over text (no LLM)", _ketrag_step)]
