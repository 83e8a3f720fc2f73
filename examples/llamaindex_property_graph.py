"""kgrag methods as sub-retrievers of a LlamaIndex ``PropertyGraphIndex``.

A ``PropertyGraphIndex`` retrieves through sub-retrievers over its own property graph store.
``KGPGRetriever`` makes any kgrag graph method one of them, next to LlamaIndex's own
``LLMSynonymRetriever`` / ``VectorContextRetriever``; ``PGRetriever`` merges their nodes.

Offline: the index is built from entity nodes and relations directly (no LLM extraction), the
embeddings are LlamaIndex's ``MockEmbedding`` for the index and the packaged MiniLM for kgrag,
and the two LLMs are scripted (replace them with your own).

Run::

    python examples/llamaindex_property_graph.py
"""

from __future__ import annotations

import sys
from typing import Any

from llama_index.core import PropertyGraphIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import EntityNode, Relation
from llama_index.core.indices.property_graph import LLMSynonymRetriever

from llama_index_kgrag import KGPGRetriever
from llama_index_kgrag.testing import ScriptedLLM

# one-word names: LlamaIndex's LLMSynonymRetriever capitalises the keywords it looks up
# ("Bob tanaka"), as its own extractors store names
FACTS = [("Bob", "REPORTS_TO", "Alice"), ("Alice", "REPORTS_TO", "Hannah"),
         ("Carol", "REPORTS_TO", "Alice"), ("Bob", "WORKS_ON", "Falcon"),
         ("Falcon", "USES", "Rust"), ("Alice", "LEADS", "Falcon")]
QUESTION = "Who does Bob report to?"


def build_index() -> PropertyGraphIndex:
    """A PropertyGraphIndex over a store filled directly with entities and relations."""
    store = SimplePropertyGraphStore()
    names = sorted({n for h, _, t in FACTS for n in (h, t)})
    store.upsert_nodes([EntityNode(name=n, label="ENTITY") for n in names])
    store.upsert_relations([Relation(label=r, source_id=h, target_id=t) for h, r, t in FACTS])
    return PropertyGraphIndex.from_existing(property_graph_store=store,
                                            embed_model=MockEmbedding(embed_dim=8),
                                            llm=ScriptedLLM(replies=[]))


def main(*_: str) -> dict[str, Any]:
    index = build_index()
    store = index.property_graph_store
    simgrag_llm = ScriptedLLM(replies=[  # replace with your LLM: it writes SimGRAG's pattern
        '{"divided": ["Bob reports to someone"], '
        '"triples": [("Bob", "REPORTS_TO", "UNKNOWN person 1")]}'])
    retriever = index.as_retriever(sub_retrievers=[
        # LlamaIndex's own: the LLM names keywords, the store returns their triplets
        LLMSynonymRetriever(store, llm=ScriptedLLM(replies=["BOB^REPORT"]), include_text=False),
        # kgrag: GraphRAFT without an LLM, and SimGRAG with one
        KGPGRetriever(store, "graphraft", llm=False, similarity_top_k=3),
        KGPGRetriever(store, "simgrag", llm=simgrag_llm, top_k=1, humanize_relations=False),
    ])
    nodes = retriever.retrieve(QUESTION)
    print(f"Question: {QUESTION}")
    for node in nodes:
        method = node.node.metadata.get("method", "llama_index")
        score = "" if node.score is None else f"{node.score:.3f}"
        print(f"  [{method:10}] {score:>6}  {node.node.get_content()}")
    return {"nodes": nodes}


if __name__ == "__main__":
    main(*sys.argv[1:2])
