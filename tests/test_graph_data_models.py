"""Graphs the frameworks write into a database are read without hand mapping (real FalkorDB).

``Neo4jGraph.add_graph_documents`` and LlamaIndex's ``Neo4jPropertyGraphStore`` write through
APOC procedures (``apoc.merge.node``, ``apoc.merge.relationship``, ``apoc.create.addLabels``)
that FalkorDB does not have, so neither writer can talk to the FalkorDB test server. The writers
below lay out the same data model with plain parameterised Cypher (labels, keys, relationship
types, source ``Document`` / ``Chunk`` nodes and their ``MENTIONS`` links, as those writers
produce them); the LangChain layout also goes in through ``langchain_neo4j.Neo4jGraph.query``
over Bolt. The stores then find the entities, names and relations by preset and by detection.
"""

from __future__ import annotations

from hashlib import md5

import pytest
from langchain_core.documents import Document
from langchain_neo4j.graphs.graph_document import GraphDocument, Node, Relationship

from kgrag import KnowledgeGraph
from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
from kgrag.graph.data_models import PRESETS, detect_data_model

pytestmark = pytest.mark.server

TRIPLES = [("Paprika", "DIRECTED_BY", "Satoshi Kon"), ("Satoshi Kon", "BORN_IN", "Sapporo"),
           ("Tokyo Godfathers", "DIRECTED_BY", "Satoshi Kon")]


def _q(name: str) -> str:
    return f"`{name}`"


def graph_documents() -> list[GraphDocument]:
    nodes = {"Paprika": "Movie", "Tokyo Godfathers": "Movie", "Satoshi Kon": "Person",
             "Sapporo": "City"}
    docs = []
    for i, (h, r, t) in enumerate(TRIPLES):
        hn, tn = Node(id=h, type=nodes[h]), Node(id=t, type=nodes[t])
        docs.append(GraphDocument(nodes=[hn, tn], relationships=[
            Relationship(source=hn, target=tn, type=r.lower().replace("_", " "))],
            source=Document(page_content=f"{h} {r.lower()} {t}.", metadata={"n": i})))
    return docs


def write_langchain_layout(run, docs, *, base_entity_label: bool, include_source: bool) -> None:
    """The data model of ``Neo4jGraph.add_graph_documents``: nodes keyed by ``id`` (labelled
    with their type, plus ``__Entity__`` with ``baseEntityLabel``), relationship types upper
    case with underscores, source documents as ``Document {id: md5(text)}`` -[:MENTIONS]->."""
    for doc in docs:
        doc_id = md5(doc.source.page_content.encode("utf-8")).hexdigest()
        if include_source:
            run("MERGE (d:Document {id: $id}) SET d.text = $text",
                {"id": doc_id, "text": doc.source.page_content})
        for node in doc.nodes:
            labels = f":{_q('__Entity__')}:{_q(node.type)}" if base_entity_label else \
                f":{_q(node.type)}"
            run(f"MERGE (n{labels} {{id: $id}})", {"id": node.id})
            if include_source:
                run(f"MATCH (d:Document {{id: $doc}}), (n{labels} {{id: $id}}) "
                    "MERGE (d)-[:MENTIONS]->(n)", {"doc": doc_id, "id": node.id})
        for rel in doc.relationships:
            rel_type = rel.type.replace(" ", "_").upper()
            run(f"MATCH (s:{_q(rel.source.type)} {{id: $s}}), (t:{_q(rel.target.type)} {{id: $t}}) "
                f"MERGE (s)-[:{_q(rel_type)}]->(t)", {"s": rel.source.id, "t": rel.target.id})


def write_llama_index_layout(run) -> None:
    """The data model of LlamaIndex's ``Neo4jPropertyGraphStore``: entities ``__Entity__`` (and
    ``__Node__``, newer versions) with ``id`` and ``name`` and their label; chunks
    ``Chunk {id, text}`` -[:MENTIONS]-> entities; relationship type = the relation label."""
    types = {"Paprika": "MOVIE", "Tokyo Godfathers": "MOVIE", "Satoshi Kon": "PERSON",
             "Sapporo": "PLACE"}
    for i, (h, r, t) in enumerate(TRIPLES):
        chunk = f"chunk-{i}"
        run("MERGE (c:__Node__:Chunk {id: $id}) SET c.text = $text",
            {"id": chunk, "text": f"{h} {r} {t}"})
        for name in (h, t):
            run(f"MERGE (e:__Node__:__Entity__:{_q(types[name])} {{id: $id}}) SET e.name = $id, "
                "e.triplet_source_id = $chunk", {"id": name, "chunk": chunk})
            run("MATCH (c:Chunk {id: $chunk}), (e:__Entity__ {id: $id}) MERGE (c)-[:MENTIONS]->(e)",
                {"chunk": chunk, "id": name})
        run(f"MATCH (s:__Entity__ {{id: $s}}), (t:__Entity__ {{id: $t}}) MERGE (s)-[:{_q(r)}]->(t)",
            {"s": h, "t": t})


def _graph(server, key: str):
    from falkordb import FalkorDB

    graph = FalkorDB(host="127.0.0.1", port=server.port).select_graph(key)
    graph.query("MATCH (n) DETACH DELETE n")
    return graph


def _expected(store) -> None:
    assert sorted(store.list_relations()) == ["BORN_IN", "DIRECTED_BY"]  # no MENTIONS
    assert sorted(t.as_tuple() for t in store.one_hop(["Satoshi Kon"])) == sorted(TRIPLES)
    assert sorted(store.iter_node_names()) == ["Paprika", "Sapporo", "Satoshi Kon",
                                                "Tokyo Godfathers"]
    assert store.counts() == {"nodes": 4, "edges": 3, "relations": 2}
    assert store.follow_path(["Paprika"], "DIRECTED_BY -> BORN_IN")[0].target == "Sapporo"
    kg = store.to_knowledge_graph(progress=False)
    assert sorted(t.as_tuple() for t in kg.triples()) == sorted(TRIPLES)


LAYOUTS = [("langchain", True, True), ("langchain", True, False),
           ("langchain_typed", False, True), ("langchain_typed", False, False)]


@pytest.mark.parametrize("preset_name, base, source", LAYOUTS,
                         ids=[f"{p}-base{int(b)}-src{int(s)}" for p, b, s in LAYOUTS])
def test_langchain_layouts_detected_and_read(falkordb_server, preset_name, base, source):
    key = f"lc_{int(base)}{int(source)}"
    graph = _graph(falkordb_server, key)
    write_langchain_layout(lambda q, p: graph.query(q, p), graph_documents(),
                           base_entity_label=base, include_source=source)
    store = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph=key,
                                        data_model="auto")
    assert store.data_model == preset_name
    _expected(store)
    if source:  # Document nodes are not entities, even though they carry an id
        assert not store.has_node(md5(b"Paprika directed_by Satoshi Kon.").hexdigest())
    explicit = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph=key,
                                           data_model=preset_name)
    _expected(explicit)
    store.close()
    explicit.close()


def test_llama_index_layout_detected_and_read(falkordb_server):
    graph = _graph(falkordb_server, "llama")
    write_llama_index_layout(lambda q, p: graph.query(q, p))
    store = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph="llama",
                                        data_model="auto")
    assert store.data_model == "llama_index"
    _expected(store)
    assert not store.has_node("chunk-0")
    store.close()


def test_kgrag_layout_and_empty_database_detect_kgrag(falkordb_server):
    _graph(falkordb_server, "empty_db")
    empty = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph="empty_db",
                                        data_model="auto")
    assert empty.data_model == "kgrag" and empty.node_label == "Entity"
    empty.load_triples(KnowledgeGraph.from_triples(TRIPLES), progress=False)
    again = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph="empty_db",
                                        data_model="auto")
    assert again.data_model == "kgrag"
    _expected(again)
    empty.close()
    again.close()


def test_explicit_mapping_overrides_the_preset_and_bad_names_fail(falkordb_server):
    _graph(falkordb_server, "override")
    store = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph="override",
                                        data_model="langchain", name_property="title")
    assert (store.node_label, store.name_property) == ("__Entity__", "title")
    assert store.exclude_labels == PRESETS["langchain"].exclude_labels
    store.close()
    with pytest.raises(ValueError, match="unknown data_model"):
        FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph="override",
                                    data_model="neo4j")


def test_langchain_layout_through_neo4jgraph_over_bolt(falkordb_server):
    """Written through LangChain's own Neo4jGraph client over Bolt, read by the Bolt store."""
    from langchain_neo4j import Neo4jGraph

    from kgrag.graph.cypher.neo4j import Neo4jGraphStore

    lc = Neo4jGraph(url=falkordb_server.bolt_uri, username="", password="",
                    refresh_schema=False)
    # the Bolt endpoint has one graph, shared with other tests: use only this layout's labels
    lc.query("MATCH (n:__Entity__) DETACH DELETE n")
    lc.query("MATCH (n:Document) DETACH DELETE n")
    write_langchain_layout(lc.query, graph_documents(), base_entity_label=True,
                           include_source=True)
    store = Neo4jGraphStore.from_langchain(lc, data_model="langchain", batch_size=40)
    try:
        _expected(store)
        found = detect_data_model(store._read, store._quote)
        assert found.name == "langchain"
    finally:
        lc.query("MATCH (n:__Entity__) DETACH DELETE n")
        lc.query("MATCH (n:Document) DETACH DELETE n")
