"""LangChain: two kgrag retrievers fused by LangChain's ``EnsembleRetriever``.

* GraphRAFT (LLM-free mode): links the question's n-grams to graph entities, enumerates the
  executable one- and two-hop queries around them, picks the best by embedding similarity to the
  question and returns the nodes they yield;
* SimGRAG: an LLM rewrites the question as a pattern of triples with unknowns, and kgrag finds
  the graph subgraphs closest to it (Graph Semantic Distance).

``EnsembleRetriever`` merges both rankings with weighted Reciprocal Rank Fusion. Run::

    python examples/langchain_ensemble.py

The SimGRAG pattern writer is a scripted stand-in (``scripted_llms.py``); replace it with your own
chat model. The packaged MiniLM embedding model is loaded once (about 10 s).
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    from langchain_classic.retrievers import EnsembleRetriever
except ImportError:  # LangChain < 1.0 kept it in the main package
    from langchain.retrievers import EnsembleRetriever

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_llms import scripted_chat

from kgrag.context.metadata import unflatten
from kgrag.embed import default_embedder
from kgrag.graph import read_triples
from langchain_kgrag import GraphRAFTRetriever, SimGRAGRetriever

DATA = Path(__file__).resolve().parent / "data" / "movies.tsv"
QUESTION = "Which films directed by Satoshi Kon are set in Tokyo?"
# What an LLM would write for QUESTION (SimGRAG's pattern prompt asks for this JSON).
PATTERN_REPLY = ('{"divided": ["films directed by Satoshi Kon", "films set in Tokyo"], '
                 '"triples": [("UNKNOWN film 1", "directed by", "Satoshi Kon"), '
                 '("UNKNOWN film 1", "set in", "Tokyo")]}')


def main(question: str = QUESTION, embedder=None) -> list:
    kg = read_triples(DATA)
    embedder = embedder or default_embedder()  # or any LangChain Embeddings
    graphraft = GraphRAFTRetriever.from_graph(kg, embedder=embedder, top_k=5)
    simgrag = SimGRAGRetriever.from_graph(
        kg, llm=scripted_chat(PATTERN_REPLY),  # replace with your own chat model
        embedder=embedder, top_k=3)
    ensemble = EnsembleRetriever(retrievers=[simgrag, graphraft], weights=[0.6, 0.4])

    docs = ensemble.invoke(question)
    print(f"Question: {question}")
    # every Document carries its method's provenance (JSON under "retrieval"; unflatten decodes)
    provenance = {d.metadata["method"]: unflatten(d.metadata)["retrieval"] for d in docs}
    print(f"SimGRAG pattern: {provenance['simgrag']['pattern']}")
    print(f"GraphRAFT entities: {provenance['graphraft']['entities']}")
    print("Fused ranking (Reciprocal Rank Fusion, weights 0.6 / 0.4):")
    for rank, doc in enumerate(docs, start=1):
        print(f"  {rank}. [{doc.metadata.get('method', '?')}] {doc.page_content}")
    return docs


if __name__ == "__main__":
    main(*sys.argv[1:2])
