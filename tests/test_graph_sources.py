"""Graph sources: LlamaIndex property graphs and LangChain GraphDocuments, with the real classes."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_neo4j.graphs.graph_document import GraphDocument, Node, Relationship
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import ChunkNode, EntityNode, Relation

from kgrag import KnowledgeGraph
from kgrag.errors import GraphFormatError
from kgrag.graph import as_graph_store, load_graph, save_graph
from kgrag.graph.sources.langchain import document_id, from_graph_documents
from kgrag.graph.sources.llama_index import from_llama_index


def _store() -> SimplePropertyGraphStore:
    store = SimplePropertyGraphStore()
    chunk = ChunkNode(text="Paprika is a 2006 film directed by Satoshi Kon.", id_="chunk-1")
    store.upsert_nodes([
        chunk,
        EntityNode(name="Paprika", label="MOVIE",
                   properties={"year": 2006, "triplet_source_id": "chunk-1",
                               "description": "a 2006 animated film"}),
        EntityNode(name="Satoshi Kon", label="PERSON", properties={"triplet_source_id": "chunk-1"}),
        EntityNode(name="Madhouse"),  # no relation: kept as an isolated node
    ])
    store.upsert_relations([
        Relation(label="DIRECTED_BY", source_id="Paprika", target_id="Satoshi Kon",
                 properties={"triplet_source_id": "chunk-1"}),
        Relation(label="BORN_IN", source_id="Satoshi Kon", target_id="Sapporo"),
    ])
    return store


def test_simple_property_graph_store_round_trip():
    kg = from_llama_index(_store())
    assert sorted(t.as_tuple() for t in kg.triples()) == [
        ("Paprika", "DIRECTED_BY", "Satoshi Kon"), ("Satoshi Kon", "BORN_IN", "Sapporo")]
    assert kg.has_node("Madhouse") and kg.num_nodes == 4  # chunks are not nodes
    assert kg.node_descriptions == {"Paprika": "a 2006 animated film"}
    notes = kg.annotations
    assert notes.node_types == {"Paprika": ["MOVIE"], "Satoshi Kon": ["PERSON"]}
    assert notes.node_properties == {"Paprika": {"year": 2006}}
    assert notes.chunks == {"chunk-1": "Paprika is a 2006 film directed by Satoshi Kon."}
    assert notes.node_chunks == {"Paprika": ["chunk-1"], "Satoshi Kon": ["chunk-1"]}
    assert notes.texts_of_edge("Paprika", "DIRECTED_BY", "Satoshi Kon") == [
        "Paprika is a 2006 film directed by Satoshi Kon."]
    assert notes.nodes_by_type() == {"MOVIE": ["Paprika"], "PERSON": ["Satoshi Kon"]}
    assert kg.stats["chunks"] == 1


def test_store_read_through_the_public_api_gives_the_same_graph():
    """Any PropertyGraphStore (e.g. Neo4jPropertyGraphStore) is read with get() and
    get_triplets(ids=...) -- the same graph as the direct read of the simple store."""
    store = _store()

    class PublicApiOnly:  # hides .graph: only the PropertyGraphStore methods remain
        def get(self, **kw):
            return store.get(**kw)

        def get_triplets(self, **kw):
            return store.get_triplets(**kw)

    direct, public = from_llama_index(store), from_llama_index(PublicApiOnly())
    assert sorted(t.as_tuple() for t in direct.triples()) == sorted(
        t.as_tuple() for t in public.triples())
    assert public.annotations == direct.annotations


def _property_graph_index():
    """A real PropertyGraphIndex whose SimpleLLMPathExtractor reads two chunks with a scripted
    LlamaIndex LLM (one triple each); the index and the LLM (its ``prompts``: what it was sent)."""
    from llama_index.core import PropertyGraphIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.indices.property_graph import SimpleLLMPathExtractor
    from llama_index.core.schema import TextNode
    from llm_fakes import ScriptedLlamaLLM

    llm = ScriptedLlamaLLM(replies=["(Paprika, directed by, Satoshi Kon)",
                                    "(Satoshi Kon, born in, Sapporo)"], prompts=[])
    extractor = SimpleLLMPathExtractor(llm=llm, num_workers=1)
    chunks = [TextNode(text="Paprika was directed by Satoshi Kon.", id_="n1"),
              TextNode(text="Satoshi Kon was born in Sapporo.", id_="n2")]
    index = PropertyGraphIndex(nodes=chunks, kg_extractors=[extractor], llm=llm,
                               embed_model=MockEmbedding(embed_dim=8), embed_kg_nodes=False,
                               property_graph_store=SimplePropertyGraphStore())
    return index, llm


def test_property_graph_index_with_a_scripted_extractor():
    index, llm = _property_graph_index()
    assert len(llm.prompts) == 2
    kg = from_llama_index(index)
    # LlamaIndex's default triplet parser capitalises each item ("Satoshi kon")
    assert sorted(t.as_tuple() for t in kg.triples()) == [
        ("Paprika", "Directed by", "Satoshi kon"), ("Satoshi kon", "Born in", "Sapporo")]
    notes = kg.annotations
    assert notes.texts_of_edge("Paprika", "Directed by", "Satoshi kon") == [
        "Paprika was directed by Satoshi Kon."]
    assert notes.node_chunks["Sapporo"] == ["n2"]
    # one EntityNode per name keeps one source; the relations add the other chunk
    assert sorted(notes.node_chunks["Satoshi kon"]) == ["n1", "n2"]
    assert set(notes.chunks) == {"n1", "n2"}


def test_llama_index_rejects_other_objects():
    with pytest.raises(GraphFormatError):
        from_llama_index(object())


def _graph_documents() -> list[GraphDocument]:
    paprika, kon = Node(id="Paprika", type="Movie"), Node(id="Satoshi Kon", type="Person")
    doc1 = Document(page_content="Paprika is directed by Satoshi Kon.", metadata={"id": "d1"})
    doc2 = Document(page_content="Satoshi Kon was born in Sapporo.")
    sapporo = Node(id="Sapporo", type="City", properties={"description": "a city in Japan",
                                                          "population": 1_950_000})
    return [
        GraphDocument(nodes=[paprika, kon], source=doc1, relationships=[
            Relationship(source=paprika, target=kon, type="DIRECTED_BY")]),
        GraphDocument(nodes=[kon, sapporo, Node(id="Madhouse", type="Company")], source=doc2,
                      relationships=[Relationship(source=kon, target=sapporo, type="BORN_IN")]),
    ]


def test_graph_documents_round_trip():
    docs = _graph_documents()
    kg = from_graph_documents(docs)
    assert sorted(t.as_tuple() for t in kg.triples()) == [
        ("Paprika", "DIRECTED_BY", "Satoshi Kon"), ("Satoshi Kon", "BORN_IN", "Sapporo")]
    assert kg.has_node("Madhouse")
    assert kg.node_descriptions == {"Sapporo": "a city in Japan"}
    notes = kg.annotations
    assert notes.node_types["Satoshi Kon"] == ["Person"]
    assert notes.nodes_by_type()["Company"] == ["Madhouse"]
    assert notes.node_properties == {"Sapporo": {"population": 1_950_000}}
    d2 = document_id(docs[1].source)  # the id Neo4jGraph.add_graph_documents would give it
    assert notes.chunks == {"d1": "Paprika is directed by Satoshi Kon.",
                            d2: "Satoshi Kon was born in Sapporo."}
    assert notes.node_chunks["Satoshi Kon"] == ["d1", d2]
    assert notes.edge_chunks[("Satoshi Kon", "BORN_IN", "Sapporo")] == [d2]
    assert kg.stats["graph_documents"] == 2


def test_graph_documents_errors_and_single_document():
    kg = from_graph_documents(_graph_documents()[0], include_sources=False)
    assert kg.num_edges == 1 and kg.annotations.chunks == {}
    assert kg.annotations.node_chunks["Paprika"] == ["d1"]
    with pytest.raises(GraphFormatError):
        from_graph_documents([object()])


def test_annotations_survive_save_and_load(tmp_path):
    kg = from_graph_documents(_graph_documents())
    save_graph(kg, tmp_path / "g")
    back = load_graph(tmp_path / "g")
    assert back.annotations == kg.annotations


def test_simgrag_retrieves_over_a_langchain_graph(minilm):
    from kgrag.methods.simgrag import SimGRAG

    kg = from_graph_documents(_graph_documents())
    sim = SimGRAG(kg, embedder=minilm)
    result = sim.retrieve_pattern([("Satoshi Kon", "born in", "UNKNOWN city 1")])
    assert result.items[0].triples[0].tail == "Sapporo"


def test_simgrag_uses_the_sources_node_types(minilm):
    """A pattern naming no entity gets its candidates from the graph documents' node types."""
    from kgrag.methods.simgrag import SimGRAG

    kg = from_graph_documents(_graph_documents())
    sim = SimGRAG(kg, embedder=minilm, type_top_k=1)
    assert sorted(sim.candidates.type_names) == ["City", "Company", "Movie", "Person"]
    result = sim.retrieve_pattern([("UNKNOWN movie 1", "directed by", "UNKNOWN person 1")])
    assert result.metadata["typed_nodes"] == ["UNKNOWN movie 1", "UNKNOWN person 1"]
    assert result.items[0].metadata["mapping"] == {"UNKNOWN movie 1": "Paprika",
                                                   "UNKNOWN person 1": "Satoshi Kon"}


# ---------------------------------------------------------------- as_graph_store / from_graph
def _triples(graph) -> list[tuple[str, str, str]]:
    return sorted(t.as_tuple() for t in graph.triples())


def test_as_graph_store_converts_each_framework_graph():
    import networkx as nx

    store, docs = _store(), _graph_documents()
    assert isinstance(as_graph_store(store), KnowledgeGraph)
    assert _triples(as_graph_store(store)) == _triples(from_llama_index(store))
    index, _ = _property_graph_index()
    assert _triples(as_graph_store(index)) == _triples(from_llama_index(index)) == [
        ("Paprika", "Directed by", "Satoshi kon"), ("Satoshi kon", "Born in", "Sapporo")]
    for given in (docs, tuple(docs)):
        assert _triples(as_graph_store(given)) == _triples(from_graph_documents(docs))
    assert _triples(as_graph_store(docs[0])) == [("Paprika", "DIRECTED_BY", "Satoshi Kon")]
    assert as_graph_store(docs).annotations.node_types["Satoshi Kon"] == ["Person"]
    nxg = nx.MultiDiGraph()
    nxg.add_edge("Paprika", "Satoshi Kon", relation="directed_by")
    assert _triples(as_graph_store(nxg)) == [("Paprika", "directed_by", "Satoshi Kon")]


def test_as_graph_store_keeps_stores_and_rejects_what_is_no_graph():
    kg = KnowledgeGraph.from_triples([("a", "r", "b")])
    assert as_graph_store(kg) is kg

    class NameLevelStore:  # part of the GraphStore protocol: methods use what they need
        def list_relations(self):
            return ["r"]

    partial = NameLevelStore()
    assert as_graph_store(partial) is partial
    for junk in ("movies.tsv", [], [object()], [_graph_documents()[0], "x"], {"a": "b"},
                 object(), None):
        with pytest.raises(GraphFormatError, match="from_llama_index") as err:
            as_graph_store(junk)
        assert type(junk).__name__ in str(err.value)


def test_methods_and_adapters_take_framework_graphs_in_from_graph(minilm):
    """What the issue's new user tried: framework graphs straight into a method's or an
    adapter's from_graph, each converted once and retrievable."""
    from kgrag.methods.byokg import ByoKGRAG
    from kgrag.methods.simgrag import SimGRAG
    from langchain_kgrag import ByoKGRetriever, KGToolkit
    from llama_index_kgrag import UltRAGQueryEngine, UltRAGRetriever

    byokg = ByoKGRAG.from_graph(_store(), embedder=minilm)
    assert isinstance(byokg.graph, KnowledgeGraph)
    assert ("Paprika", "DIRECTED_BY", "Satoshi Kon") in _triples(byokg.graph)
    sim = SimGRAG.from_graph(_graph_documents(), embedder=minilm)
    result = sim.retrieve_pattern([("Satoshi Kon", "born in", "UNKNOWN city 1")])
    assert result.items[0].triples[0].tail == "Sapporo"

    retriever = ByoKGRetriever.from_graph(_graph_documents(), embedder=minilm)
    assert ("Satoshi Kon", "BORN_IN", "Sapporo") in _triples(retriever.method.graph)
    tools = {t.name: t for t in KGToolkit.from_graph(_store()).get_tools()}
    assert "Satoshi Kon" in str(tools["kg_neighbors"].invoke({"entity": "Paprika"}))

    engine = UltRAGQueryEngine.from_graph(_property_graph_index()[0], executor="symbolic",
                                          linking="exact")
    assert isinstance(engine.method.store, KnowledgeGraph)
    answers = engine.method.execute('"Paprika" -> Directed by')
    assert [e.name for e in answers] == ["Satoshi kon"]
    with_store = UltRAGRetriever.from_graph(_store(), executor="symbolic", linking="exact")
    assert [e.name for e in with_store.method.execute('"Paprika" -> DIRECTED_BY')] == [
        "Satoshi Kon"]
    with pytest.raises(GraphFormatError, match="from_graph_documents"):
        ByoKGRetriever.from_graph("movies.tsv", embedder=minilm)
