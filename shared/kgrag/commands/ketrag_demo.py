"""The KET-RAG step of ``kgrag demo``: a keyword-only (beta = 0, LLM-free) index over short
paragraphs written from the bundled movie graph, and one two-hop question."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kgrag.context.types import Chunk

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
    from kgrag.demo import DemoStep

    return [DemoStep("KET-RAG keyword channel over text (no LLM)", _ketrag_step)]
