"""Each method's retriever end to end on a real database store (FalkorDB, and Neo4j over Bolt).

The same retriever runs on the database stores and on the in-memory graph with the same scripted
fake LLM; the retrieved items and the number of LLM calls must be the same. Methods that take a
faster path on a ``KnowledgeGraph`` (ByoKG-RAG scores every edge in memory, but only the linked
entities' neighbourhood on a store) are compared with :class:`NameLevel`, the in-memory graph
seen only through the GraphStore protocol -- the code path a database store takes. The
in-memory graph has name-ordered ids, so the stores' name-ordered caps and tie-breaks coincide
with it. KET-RAG builds its own graph from text, so it has no database path to test here.

Embeddings come from a deterministic character-trigram embedder: what is tested is the store,
and MiniLM on a CPU shared by many test runs would dominate the runtime.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from byokg_fixtures import TEMPORAL, WORLD, WORLD_SERIES
from langchain_core.language_models import FakeListChatModel

from kgrag import KnowledgeGraph
from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
from kgrag.graph.cypher.neo4j import Neo4jGraphStore
from kgrag.graph.cypher.store import name_ordered

pytestmark = pytest.mark.server

SIMGRAG_K1 = [
    ("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
    ("Tokyo Godfathers", "written_by", "Keiko Nobumoto"),
    ("Tokyo Godfathers", "release_year", "2003"),
    ("Paprika", "directed_by", "Satoshi Kon"),
]
DRUGS = [
    ("CYP3A4", "ENZYME", "Ivermectin"),
    ("Ivermectin", "INDICATION", "strongyloidiasis"),
    ("Thiabendazole", "INDICATION", "strongyloidiasis"),
    ("CYP3A4", "ENZYME", "Albendazole"),
    ("melanoma", "ASSOCIATED_WITH", "TNFSF8"),
]
KASTEN_Q = "In what years did Stan Kasten's organization win the World Series?"
KASTEN_SCRIPT = [
    "<entities>\nStan Kasten\n</entities>\n<paths>\nbusiness.board_member.leader_of -> "
    "organization.leadership.organization -> sports.sports_team.championships\n</paths>",
    "<selected>business.board_member.leader_of</selected>",
    "<next-entities>FINISH</next-entities>",
    "<entities>FINISH</entities>",
]


@pytest.fixture(scope="module")
def graphs(falkordb_server):
    """``{kind: store}`` over one union graph (ByoKG world, SimGRAG K1, GraphRAFT drugs)."""
    from falkordb import FalkorDB

    kg = name_ordered(KnowledgeGraph.from_triples(WORLD + TEMPORAL + SIMGRAG_K1 + DRUGS))
    FalkorDB(host="127.0.0.1", port=falkordb_server.port).select_graph("kgrag_e2e").query(
        "MATCH (n) DETACH DELETE n")
    falkor = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph="kgrag_e2e")
    falkor.load_triples(kg, progress=False)
    bolt = Neo4jGraphStore.from_uri(falkordb_server.bolt_uri, node_label="E2E", batch_size=40)
    bolt._write("MATCH (n:E2E) DETACH DELETE n")
    bolt.load_triples(kg, progress=False, batch_size=40)
    yield {"memory": kg, "falkordb": falkor, "neo4j-bolt": bolt}
    falkor.close()
    bolt.close()


DB_KINDS = ["falkordb", "neo4j-bolt"]


def _trigrams(text: str, dim: int = 512) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float32)
    padded = f"  {text.lower()} "
    for i in range(len(padded) - 2):
        vector[zlib.crc32(padded[i:i + 3].encode()) % dim] += 1.0
    # a small text-seeded jitter, so that two texts never tie (ties would be broken by the
    # order names come out of a store, which is not what these tests compare)
    jitter = np.random.default_rng(zlib.crc32(text.encode())).random(dim).astype(np.float32)
    return vector + 0.01 * jitter


@pytest.fixture(scope="module")
def trigram_embedder():
    from kgrag.embed import LookupEmbedder

    return LookupEmbedder({"": np.ones(512)}, fallback=_trigrams, name="trigrams")
PROTOCOL = ("counts", "has_node", "iter_node_names", "list_relations", "one_hop", "follow_path",
            "shortest_paths", "k_hop_subgraph", "schema_summary", "degree", "relation_labels",
            "relation_descriptions", "aliases", "annotations")


class NameLevel:
    """An in-memory graph offering only the GraphStore protocol (no id-level fast paths)."""

    supports_cypher = False

    def __init__(self, kg: KnowledgeGraph) -> None:
        self._kg = kg

    def __getattr__(self, name: str):
        if name in PROTOCOL:
            return getattr(self._kg, name)
        raise AttributeError(name)


def _docs(docs) -> list[tuple[str, str]]:
    return [(d.page_content, d.metadata.get("kgrag_type", "")) for d in docs]


@pytest.mark.parametrize("kind", DB_KINDS)
def test_byokg_langchain_retriever_on_database(graphs, kind, trigram_embedder):
    from langchain_kgrag.byokg import ByoKGRetriever

    def run(graph):
        retriever = ByoKGRetriever.from_graph(
            graph, llm=FakeListChatModel(responses=KASTEN_SCRIPT), embedder=trigram_embedder)
        docs = retriever.invoke(KASTEN_Q)
        return _docs(docs), docs[0].metadata["usage_calls"]

    want_docs, want_calls = run(NameLevel(graphs["memory"]))
    got_docs, got_calls = run(graphs[kind])
    assert got_docs == want_docs and got_calls == want_calls == 4
    text = "\n".join(d for d, _ in got_docs)
    assert all(year in text for year in WORLD_SERIES)


@pytest.mark.parametrize("kind", DB_KINDS)
def test_byokg_llama_index_retriever_llm_free_on_database(graphs, kind, trigram_embedder):
    from llama_index_kgrag.byokg import ByoKGRetriever

    def run(graph):
        nodes = ByoKGRetriever.from_graph(graph, embedder=trigram_embedder).retrieve(
            "What language is spoken in Jamaica?")
        return [(n.node.get_content(), round(n.score or 0.0, 5)) for n in nodes]

    got = run(graphs[kind])
    assert got == run(NameLevel(graphs["memory"]))
    assert got and got[0][0].startswith("English")


@pytest.mark.parametrize("kind", DB_KINDS)
def test_simgrag_retriever_on_database(graphs, kind):
    from test_simgrag_pipeline import K1_TABLES, PATTERN_REPLY, distance_embedder

    from langchain_kgrag.simgrag import SimGRAGRetriever

    emb = distance_embedder(graphs["memory"], K1_TABLES)

    def run(graph):
        retriever = SimGRAGRetriever.from_graph(
            graph, llm=FakeListChatModel(responses=[PATTERN_REPLY]), embedder=emb, top_k=3,
            node_top_k=2,
            relation_top_k=3, humanize_relations=False)
        docs = retriever.invoke("Who directed Tokyo Godfathers?")
        return ([(d.page_content, round(d.metadata["gsd"], 6)) for d in docs],
                docs[0].metadata["usage_calls"])

    got, calls = run(graphs[kind])
    assert (got, calls) == run(NameLevel(graphs["memory"])) == run(graphs["memory"])
    assert got[0] == ("(Tokyo Godfathers, directed_by, Satoshi Kon)", 0.2) and calls == 1


@pytest.mark.parametrize("kind", DB_KINDS)
def test_graphraft_on_database_pushes_queries_down(graphs, kind, trigram_embedder):
    from kgrag.methods.graphraft.backend import CypherBackend
    from kgrag.methods.graphraft.pipeline import GraphRAFT

    question = "Which drug is metabolised by CYP3A4 and treats strongyloidiasis?"

    def run(graph):
        llm = FakeListChatModel(responses=["A: CYP3A4|strongyloidiasis", "5, 1",
                                           "Ivermectin|Aspirin"])
        method = GraphRAFT(graph, llm=llm, embedder=trigram_embedder)
        answer = method.answer(question)
        return (method, answer.answers, [i.name for i in answer.retrieval.items],
                answer.retrieval.metadata["selected_queries"], answer.usage.calls)

    method, *got = run(graphs[kind])
    assert isinstance(method.backend, CypherBackend)  # candidates enumerated inside the database
    assert tuple(got) == run(graphs["memory"])[1:]
    assert got[0] == ["Ivermectin"] and got[-1] == 3


@pytest.mark.parametrize("kind", DB_KINDS)
def test_ultrag_on_database_and_on_the_materialised_graph(graphs, kind):
    from kgrag.methods.ultrag import UltRAG

    store = graphs[kind]
    query = '<query>"Satoshi Kon" -> directed_by_inv</query>'

    def run(graph):
        method = UltRAG(graph, llm=FakeListChatModel(responses=[query]), linking="exact",
                        executor="symbolic")  # exact pushdown; the neural one: test_ultrag_store
        result = method.retrieve("Which films did Satoshi Kon direct?")
        return [(i.name, round(i.score, 6)) for i in result.items], result.usage.calls

    got = run(store)  # projections pushed down as one_hop queries
    assert got == run(graphs["memory"])
    assert got == run(store.to_knowledge_graph(progress=False))  # or the whole graph in memory
    assert {"Paprika", "Tokyo Godfathers"} <= {name for name, _ in got[0][:2]}
