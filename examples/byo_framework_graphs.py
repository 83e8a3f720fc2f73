"""Bring your own graph (3): graphs you already built with LlamaIndex or LangChain.

* A LlamaIndex property graph -- a ``PropertyGraphIndex`` or any ``PropertyGraphStore``
  (``SimplePropertyGraphStore`` here) -> ``from_llama_index(...)``. Entity
  labels become node types, ``ChunkNode`` texts and ``triplet_source_id`` become provenance.
* LangChain ``GraphDocument``\\ s (what ``LLMGraphTransformer`` returns) ->
  ``from_graph_documents(...)``. Node types and source documents are kept.

Both graphs are built here in memory with the frameworks' own classes (no LLM, no server), then
queried with SimGRAG's LLM-free pattern retrieval; the retrieved triple is traced back to the
text it came from (``kg.annotations``). Loads the packaged MiniLM (about 10 s).

A graph that the frameworks wrote into Neo4j needs no conversion: see docs/graph-databases.md,
"Graphs the frameworks wrote" (``data_model="auto"``).

    python examples/byo_framework_graphs.py
"""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_neo4j.graphs.graph_document import GraphDocument, Node, Relationship
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import ChunkNode, EntityNode, Relation

from kgrag import KnowledgeGraph
from kgrag.embed import default_embedder
from kgrag.graph import from_graph_documents, from_llama_index
from kgrag.methods.simgrag import SimGRAG


def llama_index_graph() -> KnowledgeGraph:
    store = SimplePropertyGraphStore()  # or index.property_graph_store, or a Neo4j store
    text = "Paprika (2006) was directed by Satoshi Kon, who was born in Sapporo."
    store.upsert_nodes([
        ChunkNode(text=text, id_="chunk-1"),
        EntityNode(name="Paprika", label="FILM", properties={"triplet_source_id": "chunk-1"}),
        EntityNode(name="Satoshi Kon", label="PERSON",
                   properties={"triplet_source_id": "chunk-1"}),
        EntityNode(name="Sapporo", label="CITY", properties={"triplet_source_id": "chunk-1"}),
    ])
    store.upsert_relations([
        Relation(label="DIRECTED_BY", source_id="Paprika", target_id="Satoshi Kon",
                 properties={"triplet_source_id": "chunk-1"}),
        Relation(label="BORN_IN", source_id="Satoshi Kon", target_id="Sapporo",
                 properties={"triplet_source_id": "chunk-1"}),
    ])
    return from_llama_index(store)


def langchain_graph() -> KnowledgeGraph:
    film, director = Node(id="Paprika", type="Film"), Node(id="Satoshi Kon", type="Person")
    city = Node(id="Sapporo", type="City")
    source = Document(page_content="Paprika was directed by Satoshi Kon, born in Sapporo.",
                      metadata={"id": "doc-1"})
    docs = [GraphDocument(nodes=[film, director, city], source=source, relationships=[
        Relationship(source=film, target=director, type="DIRECTED_BY"),
        Relationship(source=director, target=city, type="BORN_IN")])]
    return from_graph_documents(docs)


def main(embedder=None) -> dict:
    embedder = embedder or default_embedder()
    out = {}
    for name, kg in (("llama_index", llama_index_graph()), ("langchain", langchain_graph())):
        sim = SimGRAG(kg, embedder=embedder)
        result = sim.retrieve_pattern([("Paprika", "directed by", "UNKNOWN person 1"),
                                       ("UNKNOWN person 1", "born in", "UNKNOWN city 1")])
        best = result.items[0]
        first = best.triples[0]
        sources = kg.annotations.texts_of_edge(first.head, first.relation, first.tail)
        print(f"{name}: {kg!r}, types {kg.annotations.nodes_by_type()}")
        print(f"  best subgraph: {[t.as_tuple() for t in best.triples]}")
        print(f"  source of {first.as_tuple()}: {sources}")
        out[name] = {"triples": [t.as_tuple() for t in best.triples], "sources": sources,
                     "types": kg.annotations.nodes_by_type()}
    return out


if __name__ == "__main__":
    main()
