"""LlamaIndex: a ``RouterQueryEngine`` choosing between two kgrag methods per question.

* UltRAG suits set questions -- "which entities satisfy these conditions" -- because it executes
  a logical query (projections, intersections) over the whole graph;
* SimGRAG suits questions about one specific fact pattern, matched approximately (names and
  relations need not be spelled as in the graph).

An ``LLMSingleSelector`` reads both tool descriptions and picks one engine per question. Run::

    python examples/llamaindex_router.py

All LLMs here are scripted stand-ins (``scripted_llms.py``): the selector's choices and each
engine's replies. Replace them with your own LlamaIndex LLM (one model can serve all three).
"""

from __future__ import annotations

import sys
from pathlib import Path

from llama_index.core.query_engine import RouterQueryEngine
from llama_index.core.selectors import LLMSingleSelector
from llama_index.core.tools import QueryEngineTool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_llms import scripted_llama

from kgrag import KnowledgeGraph
from kgrag.embed import default_embedder
from kgrag.graph import read_triples
from llama_index_kgrag import SimGRAGQueryEngine, UltRAGQueryEngine

DATA = Path(__file__).resolve().parent / "data" / "movies.tsv"
SET_QUESTION = "Who directed the Japanese animated films?"
FACT_QUESTION = "Which thriller did Satoshi Kon direct?"


def build_router(kg: KnowledgeGraph, embedder) -> RouterQueryEngine:
    # executor="symbolic": exact traversal (the source nodes are the answer set); the default
    # neural executor (UltraQuery) would rank every entity instead
    ultrag = UltRAGQueryEngine.from_graph(kg, linking="exact", executor="symbolic",
                                          llm=scripted_llama(
        '<query>AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by'
        "</query>",
        "<answers>\nSatoshi Kon\nHayao Miyazaki\n</answers>"))
    simgrag = SimGRAGQueryEngine.from_graph(kg, embedder=embedder, top_k=3, llm=scripted_llama(
        '{"divided": ["the thriller directed by Satoshi Kon"], "triples": '
        '[("UNKNOWN film 1", "directed by", "Satoshi Kon"), '
        '("UNKNOWN film 1", "genre", "Thriller")]}',
        "Answer: Perfect Blue"))
    tools = [
        QueryEngineTool.from_defaults(
            ultrag, name="logical_query",
            description="Questions asking for all entities that satisfy several conditions "
                        "(e.g. films with a genre from a country, their directors)."),
        QueryEngineTool.from_defaults(
            simgrag, name="fact_pattern",
            description="Questions about one specific fact or a few connected facts, such as "
                        "the film that a given person directed in a given genre."),
    ]
    selector_llm = scripted_llama(  # replace with your own LLM
        '[{"choice": 1, "reason": "It asks for every director satisfying two conditions."}]',
        '[{"choice": 2, "reason": "It asks for one film matching a specific fact pattern."}]')
    # llm= is the router's own model (it only summarises when a multi-selector picks several)
    return RouterQueryEngine(selector=LLMSingleSelector.from_defaults(llm=selector_llm),
                             query_engine_tools=tools, llm=selector_llm)


def main(embedder=None) -> dict:
    kg = read_triples(DATA)
    router = build_router(kg, embedder or default_embedder())
    routed = {}
    for question in (SET_QUESTION, FACT_QUESTION):
        response = router.query(question)
        chosen = response.metadata["selector_result"].selections[0]
        routed[question] = (chosen.index, response)
        print(f"Question: {question}")
        print(f"  routed to engine {chosen.index + 1}: {chosen.reason}")
        print(f"  sources: {[n.node.get_content() for n in response.source_nodes][:3]}")
        print(f"  answer: {response.response}")
    return routed


if __name__ == "__main__":
    main()
