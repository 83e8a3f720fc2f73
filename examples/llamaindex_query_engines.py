"""LlamaIndex: one query engine per kgrag method, each answering a question it suits.

Every engine is a LlamaIndex ``RetrieverQueryEngine``: ``engine.query(q)`` returns a ``Response``
whose ``source_nodes`` are the retrieved triples / subgraphs / entities / text units and whose
``metadata`` has the parsed answers and the LLM calls and tokens spent. Run::

    python examples/llamaindex_query_engines.py

Each engine gets a scripted stand-in LLM (``scripted_llms.py``) that replays what a model would
reply to that method's prompts, in order; replace ``scripted_llama(...)`` with your own LlamaIndex
LLM, e.g. ``OpenAI(model="gpt-4o-mini")`` or ``Ollama(model="llama3.1")``, and drop the replies.
The retrieval itself is real. The packaged MiniLM embedding model is loaded once (about 10 s).
"""

from __future__ import annotations

import sys
from pathlib import Path

from llama_index.core import Document

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_llms import scripted_llama

from kgrag import KnowledgeGraph
from kgrag.embed import default_embedder
from kgrag.graph import read_triples
from llama_index_kgrag import (
    ByoKGQueryEngine,
    GraphRAFTQueryEngine,
    KETRAGQueryEngine,
    SimGRAGQueryEngine,
    UltRAGQueryEngine,
)

DATA = Path(__file__).resolve().parent / "data" / "movies.tsv"

FILM_NOTES = [
    ("Tokyo Godfathers is a 2003 animated film by Satoshi Kon about three homeless people who "
     "find an abandoned baby on Christmas Eve in Tokyo."),
    "Satoshi Kon was born in Sapporo in 1963. Before directing, he worked as a manga artist.",
    "Spirited Away was directed by Hayao Miyazaki and released by Studio Ghibli in 2001.",
]


def engines(kg: KnowledgeGraph, embedder) -> dict:
    """``{name: (engine, question)}``; the scripted replies follow each method's prompts."""
    return {
        # ByoKG-RAG: the KG-Linker writes entities, relation paths and draft answers; the graph
        # tools ground them; a second iteration stops; then one answer call.
        "ByoKG-RAG": (ByoKGQueryEngine.from_graph(
            kg, embedder=embedder, triplet_retrieval="none", text_top_k=0, iterations=2,
            llm=scripted_llama(
                "<entities>\nTokyo Godfathers\n</entities>\n<paths>\ndirected_by -> born_in\n"
                "</paths>\n<answers>\nSapporo\n</answers>",
                "<entities>FINISH</entities>",
                "<answers>\nSapporo\n</answers>")),
            "Where was the director of Tokyo Godfathers born?"),
        # SimGRAG: the LLM writes a pattern of triples, then answers from the matched subgraphs.
        "SimGRAG": (SimGRAGQueryEngine.from_graph(
            kg, embedder=embedder, top_k=3, llm=scripted_llama(
                '{"divided": ["the thriller directed by Satoshi Kon"], "triples": '
                '[("UNKNOWN film 1", "directed by", "Satoshi Kon"), '
                '("UNKNOWN film 1", "genre", "Thriller")]}',
                "Graph [1] matches both facts.\nAnswer: Perfect Blue")),
            "Which thriller did Satoshi Kon direct?"),
        # UltRAG: the LLM writes a logical query; kgrag executes it over the whole graph; the
        # LLM arbitrator picks the answers among the top entities.
        "UltRAG": (UltRAGQueryEngine.from_graph(
            kg, linking="exact", llm=scripted_llama(
                '<query>AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) '
                "-> directed_by</query>",
                "<answers>\nSatoshi Kon\nHayao Miyazaki\n</answers>")),
            "Who directed the Japanese animated films?"),
        # GraphRAFT: LLM-free query selection (embedding similarity); the LLM only answers.
        "GraphRAFT": (GraphRAFTQueryEngine.from_graph(
            kg, embedder=embedder, top_k=5, answer_llm=scripted_llama("Tokyo Godfathers")),
            "Which films directed by Satoshi Kon are set in Tokyo?"),
        # KET-RAG over text: budget=0 builds the LLM-free keyword index; the LLM only answers.
        "KET-RAG": (KETRAGQueryEngine.from_documents(
            [Document(text=t) for t in FILM_NOTES], embedder=embedder, budget=0,
            chunk_size=60, splits=1, progress=False,
            llm=scripted_llama("Answer: Sapporo")),
            "Where was the director of Tokyo Godfathers born?"),
    }


def main(embedder=None) -> dict:
    kg = read_triples(DATA)
    embedder = embedder or default_embedder()
    responses = {}
    for name, (engine, question) in engines(kg, embedder).items():
        response = engine.query(question)
        responses[name] = response
        print(f"[{name}] {question}")
        for node in response.source_nodes[:3]:
            print(f"    source: {node.node.get_content()[:100]}")
        print(f"    answers: {response.metadata['answers']}   (LLM calls: "
              f"{response.metadata['usage']['calls']})")
    return responses


if __name__ == "__main__":
    main()
