"""Entity linking through a database's full-text / vector index, against a real FalkorDB server.

``linker_for_store`` must find the index (``CALL db.indexes()``), link through it (its
``index_source`` says so), give sensible links on the local linker's score scale, fall back to
the local index when there is none, and survive hostile mentions without an error or a write.
The Neo4j path runs against a real Neo4j only when ``NEO4J_URI`` is set.
"""

from __future__ import annotations

import os
import time
import zlib
from typing import Any

import numpy as np
import pytest

from kgrag import KnowledgeGraph
from kgrag.graph import to_falkordb
from kgrag.graph.cypher.falkordb import FalkorDBGraphStore, redisearch_escape, redisearch_query
from kgrag.graph.cypher.neo4j import lucene_escape, lucene_query
from kgrag.linking import EntityLinker, extract_mentions
from kgrag.linking.database import DatabaseEntityLinker, linker_for_store

pytestmark = pytest.mark.server

TRIPLES = [
    ("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
    ("Paprika", "directed_by", "Satoshi Kon"),
    ("Perfect Blue", "directed_by", "Satoshi Kon"),
    ("The Godfather", "directed_by", "Francis Ford Coppola"),
    ("The Godfather Part II", "directed_by", "Francis Ford Coppola"),
    ("Tokyo Story", "directed_by", "Yasujiro Ozu"),
    ("Tokyo", "located_in", "Japan"),
    ("O'Brien", "acted_in", "The Godfather"),
    ("Ünïcödé Film", "directed_by", "漢字 Director"),
    ("AND OR NOT", "directed_by", "Satoshi Kon"),
]

HOSTILE = [
    "", "   ", "'", '"', "\\", "O'Brien", 'say "hi"', "x' RETURN 1 //",
    "'; MATCH (n) DETACH DELETE n //",
    "tokyo AND godfathers", "NOT tokyo", "tokyo OR", "+tokyo -godfather", "tokyo~2", "tok*",
    "te?t", "name:tokyo", "(tokyo", "tokyo)", "[a TO z]", "{a TO z}", "godfather^4", "\"tokyo",
    "a && b || c", "!tokyo", "/regex/", "%tokyo%", "%%tokyo%%", "@name:{tokyo}", "tokyo|paprika",
    "-", "*", "~", ":", "|", "@", "$label", "CALL db.idx.fulltext.drop('Entity')",
    "DETACH DELETE", "漢字", "emoji 😀", "\x00nul", "tab\there", "x" * 400, "a " * 100,
    "CREATE (n:Entity {name: 'evil'})",
]


def _graph(server, key: str, *, fulltext: bool, vectors: Any = None) -> FalkorDBGraphStore:
    from falkordb import FalkorDB

    raw = FalkorDB(host="127.0.0.1", port=server.port).select_graph(key)
    raw.query("MATCH (n) DETACH DELETE n")
    store = to_falkordb(KnowledgeGraph.from_triples(TRIPLES), "127.0.0.1", server.port,
                        graph=key, progress=False)
    if fulltext:
        raw.query("CALL db.idx.fulltext.createNodeIndex('Entity', 'name')")
    if vectors is not None:
        raw.query("UNWIND $rows AS r MATCH (n:Entity {name: r[0]}) SET n.embedding = vecf32(r[1])",
                  {"rows": [[n, [float(x) for x in v]] for n, v in vectors.items()]})
        raw.query(f"CREATE VECTOR INDEX FOR (n:Entity) ON (n.embedding) OPTIONS "
                  f"{{dimension: {len(next(iter(vectors.values())))}, "
                  f"similarityFunction: 'cosine'}}")
    deadline = time.monotonic() + 10
    while any(row[7] != "OPERATIONAL" for row in raw.ro_query("CALL db.indexes()").result_set):
        assert time.monotonic() < deadline, "index never became operational"
        time.sleep(0.05)
    return store


@pytest.fixture(scope="module")
def indexed(falkordb_server):
    store = _graph(falkordb_server, "kgrag_dblink_ft", fulltext=True)
    yield store
    store.close()


@pytest.fixture(scope="module")
def plain(falkordb_server):
    store = _graph(falkordb_server, "kgrag_dblink_plain", fulltext=False)
    yield store
    store.close()


def _snapshot(store: FalkorDBGraphStore) -> tuple:
    return (store.counts(), sorted(store.iter_node_names()),
            sorted(t.as_tuple() for t in store.iter_triples()))


# ---------------------------------------------------------------------- query text
def test_escaping_functions_neutralise_every_operator():
    assert lucene_escape('a+b-c&&d||e!f(g)h{i}j[k]l^m"n~o*p?q:r\\s/t u') == (
        'a\\+b\\-c\\&\\&d\\|\\|e\\!f\\(g\\)h\\{i\\}j\\[k\\]l\\^m\\"n\\~o\\*p\\?q\\:r\\\\s\\/t\\ u')
    assert redisearch_escape("a|b%c@d:{e}-f'g") == "a\\|b\\%c\\@d\\:\\{e\\}\\-f\\'g"
    assert lucene_query(["tokyo", "of"]) == "tokyo tokyo~ of"
    assert redisearch_query(["tokyo", "of"]) == "tokyo|%tokyo%|of"
    assert lucene_query([]) == redisearch_query([]) == ""


# ---------------------------------------------------------------------- detection and linking
def test_fulltext_index_detected_and_used(indexed):
    found = indexed.search_indexes()
    assert [(ix.kind, ix.label, ix.property) for ix in found] == [("fulltext", "Entity", "name")]
    linker = linker_for_store(indexed, mode="fuzzy", progress=False)
    assert isinstance(linker, DatabaseEntityLinker) and isinstance(linker, EntityLinker)
    assert linker.index_source == "falkordb-fulltext:Entity"
    assert len(linker) == indexed.counts()["nodes"]


def test_links_through_the_index_match_the_local_linker(indexed):
    linker = linker_for_store(indexed, mode="fuzzy", progress=False)
    local = EntityLinker(KnowledgeGraph.from_triples(TRIPLES).node_names, mode="fuzzy")
    top = linker.link("Tokyo Godfather")
    assert top[0].name == "Tokyo Godfathers" and top[0].source == "fuzzy"
    assert 0.9 < top[0].score <= 1.0
    # the server only proposes candidates; scores are the local fuzzy scores
    for mention in ("Tokyo Godfather", "godfather part 2", "satoshi", "Perfect Blu", "tokyo"):
        db = {x.name: round(x.score, 5) for x in linker.link(mention, top_m=3)}
        ref = {x.name: round(x.score, 5) for x in local.link(mention, top_m=len(local))}
        assert db and all(ref[name] == score for name, score in db.items()), mention
        assert max(db.values()) == max(ref.values()), mention
    assert [x.name for x in linker.exact("tokyo godfathers")] == ["Tokyo Godfathers"]
    assert [(x.name, x.score) for x in linker.exact("O'Brien")] == [("O'Brien", 1.0)]
    assert [x.name for x in linker.exact("obrien")] == []  # key "obrien" != "o brien"
    assert [x.name for x in linker.exact("o brien")] == ["O'Brien"]
    assert [x.name for x in linker.exact("ünïcödé film")] == ["Ünïcödé Film"]
    assert linker.link("zzzz qqqq") == []
    mentions = extract_mentions("Who directed Tokyo Godfathers and Paprika?", linker)
    assert [m.name for m in mentions] == ["Tokyo Godfathers", "Paprika"]
    for question in ("Who directed Tokyo Godfather and Paprika?", "Was O'Brien in Perfect Blu?"):
        assert [(m.text, m.name) for m in extract_mentions(question, linker)] == [
            (m.text, m.name) for m in extract_mentions(question, local)], question


def test_fallback_to_local_index_when_absent(plain, indexed):
    assert plain.search_indexes() == []
    linker = linker_for_store(plain, mode="fuzzy", progress=False)
    assert type(linker) is EntityLinker
    assert linker.index_source.startswith("local fuzzy index") and "no full-text index" in (
        linker.index_source)
    assert linker.link("Tokyo Godfather")[0].name == "Tokyo Godfathers"
    # an index is present but use_index=False, or a dense mode without a named vector index
    assert type(linker_for_store(indexed, mode="fuzzy", use_index=False, progress=False)) is (
        EntityLinker)
    dense = linker_for_store(indexed, mode="dense", embedder=_NoEmbedder(), progress=False)
    assert type(dense) is EntityLinker and "vector index" in dense.index_source


def test_neo4j_store_over_falkordb_bolt_falls_back_to_local(falkordb_server):
    """FalkorDB's Bolt endpoint has no ``SHOW INDEXES``: detection finds nothing, no error."""
    from falkordb import FalkorDB

    from kgrag.graph.cypher.neo4j import Neo4jGraphStore

    raw = FalkorDB(host="127.0.0.1", port=falkordb_server.port).select_graph("falkordb")
    raw.query("MATCH (n:KgragLinkBolt) DETACH DELETE n")
    bolt = Neo4jGraphStore.from_uri(falkordb_server.bolt_uri, node_label="KgragLinkBolt",
                                    batch_size=40)
    try:
        bolt.load_triples([t for t in TRIPLES if "'" not in "".join(t)], progress=False,
                          batch_size=40)
        assert bolt.search_indexes() == []
        linker = linker_for_store(bolt, mode="fuzzy", progress=False)
        assert type(linker) is EntityLinker and linker.index_source.startswith("local")
        assert linker.link("Tokyo Godfather")[0].name == "Tokyo Godfathers"
    finally:
        raw.query("MATCH (n:KgragLinkBolt) DETACH DELETE n")
        bolt.close()


class _NoEmbedder:
    """Must never be called: choosing the local dense linker builds its index lazily."""

    dimension = 3

    def embed_documents(self, texts):  # pragma: no cover - a call is a test failure
        raise AssertionError("embedding was not expected")

    embed_query = embed_documents


def test_hostile_mentions_never_error_and_never_write(indexed):
    linker = linker_for_store(indexed, mode="fuzzy", progress=False)
    before = _snapshot(indexed)
    for mention in HOSTILE:
        for links in (linker.link(mention), linker.exact(mention), linker.fuzzy(mention)):
            assert all(0.0 <= x.score <= 1.0 for x in links), mention
        extract_mentions(f"Who is {mention}?", linker)
    assert _snapshot(indexed) == before
    assert [ix.kind for ix in indexed.search_indexes()] == ["fulltext"]
    assert linker.link("AND OR NOT")[0].name == "AND OR NOT"


def test_vector_index_used_only_when_named_with_an_embedder(falkordb_server, minilm):
    names = KnowledgeGraph.from_triples(TRIPLES).node_names
    vectors = dict(zip(names, minilm.embed_documents(names)))
    store = _graph(falkordb_server, "kgrag_dblink_vec", fulltext=True, vectors=vectors)
    try:
        kinds = sorted((ix.kind, ix.name) for ix in store.search_indexes())
        assert kinds == [("fulltext", "Entity"), ("vector", "embedding")]
        # not named, or named without an embedder: the local index
        assert type(linker_for_store(store, mode="hybrid", embedder=minilm,
                                     progress=False)) is EntityLinker
        assert type(linker_for_store(store, mode="dense", vector_index="embedding",
                                     progress=False)) is EntityLinker
        linker = linker_for_store(store, mode="hybrid", vector_index="embedding",
                                  embedder=minilm, progress=False)
        assert linker.index_source == "falkordb-fulltext:Entity; falkordb-vector:embedding"
        local = EntityLinker(names, embedder=minilm, mode="dense",  # the database's vectors
                             embeddings=[vectors[n] for n in names])
        mentions = ["the director Satoshi", "a film about Tokyo", "Godfather sequel"]
        for db, ref in zip(linker.dense_many(mentions, 3), local.dense_many(mentions, 3)):
            assert [x.name for x in db] == [x.name for x in ref]
            assert [round(x.score, 3) for x in db] == [round(x.score, 3) for x in ref]
        assert linker.link("Tokyo Godfather")[0].name == "Tokyo Godfathers"
        # a vector-only linker: fuzzy search (extract_mentions needs it) runs on a local index
        vector_only = DatabaseEntityLinker(store, vector=linker.vector, embedder=minilm,
                                           mode="dense")
        assert vector_only.fuzzy("Tokyo Godfather")[0].name == "Tokyo Godfathers"
        assert vector_only.index_source == (
            f"falkordb-vector:embedding; fuzzy: local index over {len(names)} streamed names")
        assert [x.name for x in vector_only.exact("Tokyo Godfathers")] == ["Tokyo Godfathers"]
    finally:
        store.close()


def test_dense_call_on_a_fulltext_linker_builds_a_local_dense_index(indexed, minilm):
    linker = linker_for_store(indexed, mode="fuzzy", embedder=minilm, progress=False)
    assert isinstance(linker, DatabaseEntityLinker)
    mentions = ["Satoshi Kon's film Paprika", "tokyo godfathers"]
    local = EntityLinker(KnowledgeGraph.from_triples(TRIPLES).node_names, embedder=minilm,
                         mode="fuzzy")
    got = linker.link_many(mentions, 2, mode="dense")
    assert [[(x.name, round(x.score, 5)) for x in links] for links in got] == [
        [(x.name, round(x.score, 5)) for x in links]
        for links in local.link_many(mentions, 2, mode="dense")]
    assert got[1][0].name == "Tokyo Godfathers" and got[1][0].source == "exact"
    assert linker.index_source == ("falkordb-fulltext:Entity; dense: local index over "
                                   f"{len(local)} streamed names")


# ---------------------------------------------------------------------- real Neo4j
@pytest.mark.skipif(not os.environ.get("NEO4J_URI"), reason="NEO4J_URI not set")
def test_neo4j_fulltext_index():  # pragma: no cover - needs a real Neo4j server
    from kgrag.graph.cypher.neo4j import Neo4jGraphStore

    store = Neo4jGraphStore.from_uri(os.environ["NEO4J_URI"], os.environ.get("NEO4J_USERNAME"),
                                     os.environ.get("NEO4J_PASSWORD"),
                                     database=os.environ.get("NEO4J_DATABASE"),
                                     node_label="KgragLinkTest")
    try:
        store._write("MATCH (n:KgragLinkTest) DETACH DELETE n")
        store.load_triples(TRIPLES, progress=False)
        assert linker_for_store(store, mode="fuzzy", progress=False).index_source.startswith(
            "local")
        store._write("CREATE FULLTEXT INDEX kgrag_link_test IF NOT EXISTS "
                     "FOR (n:KgragLinkTest) ON EACH [n.name]")
        store._write("CALL db.awaitIndexes(60)")
        linker = linker_for_store(store, mode="fuzzy", progress=False)
        assert linker.index_source == "neo4j-fulltext:kgrag_link_test"
        assert linker.link("Tokyo Godfather")[0].name == "Tokyo Godfathers"
        before = _snapshot(store)
        for mention in HOSTILE:
            linker.link(mention)
        assert _snapshot(store) == before
    finally:
        store._write("DROP INDEX kgrag_link_test IF EXISTS")
        store._write("MATCH (n:KgragLinkTest) DETACH DELETE n")
        store.close()


def _trigrams(text: str, dim: int = 256) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float32)
    padded = f"  {text.lower()} "
    for i in range(len(padded) - 2):
        vector[zlib.crc32(padded[i:i + 3].encode()) % dim] += 1.0
    return vector


def test_byokg_llm_free_runs_unchanged_with_the_database_linker(indexed):
    """A method takes the database linker in place of a local one, with the same result.

    A cheap trigram embedder scores triplets: linking is what is compared here."""
    from kgrag.embed import LookupEmbedder
    from kgrag.methods.byokg import ByoKGRAG

    embedder = LookupEmbedder({"": np.ones(256)}, fallback=_trigrams, name="trigrams")

    def run(linker, question):
        result = ByoKGRAG(indexed, embedder=embedder, linker=linker).retrieve(question)
        return [repr(item) for item in result.items]

    db = linker_for_store(indexed, mode="fuzzy", progress=False)
    local = linker_for_store(indexed, mode="fuzzy", use_index=False, progress=False)
    assert isinstance(db, DatabaseEntityLinker)
    for question in ("Who directed Tokyo Godfathers?", "Who directed Perfect Blu?"):
        got = run(db, question)
        assert got == run(local, question)
        assert "Satoshi Kon" in got[0], got[:3]


def test_methods_default_linker_uses_the_database_index(indexed, plain):
    """EntityLinker.from_graph (what every method calls for its default linker) picks the
    database's full-text index when it serves the mode, else the local index as before."""
    from kgrag.methods.byokg.tools import GraphTools

    fuzzy = EntityLinker.from_graph(indexed, mode="fuzzy", top_m=2)
    assert isinstance(fuzzy, DatabaseEntityLinker)
    assert fuzzy.index_source == "falkordb-fulltext:Entity"
    assert fuzzy.link("Tokyo Godfather")[0].name == "Tokyo Godfathers"
    assert isinstance(GraphTools(indexed).linker, DatabaseEntityLinker)
    local = EntityLinker.from_graph(plain, mode="fuzzy")
    assert type(local) is EntityLinker and "no full-text index" in local.index_source
    hybrid = EntityLinker.from_graph(indexed, mode="hybrid", embedder=_NoEmbedder())
    assert type(hybrid) is EntityLinker  # hybrid needs a named vector index too
