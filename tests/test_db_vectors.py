"""Node vectors in the database (kgrag index-db / load-db --embed), on a real FalkorDB server.

The client must embed only the question's / pattern's texts, never the graph's node names, and
still get the in-memory results on the bundled graph; an interrupted embedding resumes; vectors
of another model are refused.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgrag import KnowledgeGraph
from kgrag.data import demo_data_path
from kgrag.graph import to_falkordb
from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
from kgrag.graph.cypher.vectors import (
    VectorModelMismatch,
    embed_store,
    fetch_node_vectors,
    node_vector_index,
)
from kgrag.graph.io import iter_triples

pytestmark = pytest.mark.server

#: random unit vectors seeded by each name (fast; the index options are what is tested)
HASH_EMBEDDER = Path(__file__).resolve().parent.parent / "benchmarks" / "hash_embedder.py"


class CountingEmbedder:
    """Wraps an embedder and records every text it embeds (same model, same cache key)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.texts: list[str] = []

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    def embed_documents(self, texts):
        self.texts.extend(texts)
        return self.embedder.embed_documents(texts)

    def embed_query(self, text):
        self.texts.append(text)
        return self.embedder.embed_query(text)


class FailingEmbedder(CountingEmbedder):
    """Fails on its ``fail_at``-th embedding call: an interrupted ``--embed``."""

    def __init__(self, embedder: Any, fail_at: int) -> None:
        super().__init__(embedder)
        self.calls, self.fail_at = 0, fail_at

    def embed_documents(self, texts):
        self.calls += 1
        if self.calls == self.fail_at:
            raise KeyboardInterrupt
        return super().embed_documents(texts)


@pytest.fixture(scope="module")
def movies() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(iter_triples(demo_data_path()))


def _store(server: Any, key: str, kg: KnowledgeGraph) -> FalkorDBGraphStore:
    from falkordb import FalkorDB

    FalkorDB(host="127.0.0.1", port=server.port).select_graph(key).query(
        "MATCH (n) DETACH DELETE n")
    return to_falkordb(kg, "127.0.0.1", server.port, graph=key, progress=False)


@pytest.fixture(scope="module")
def embedded(falkordb_server, movies, minilm):
    store = _store(falkordb_server, "kgrag_dbvec", movies)
    summary = embed_store(store, minilm, progress=False, batch_size=64)
    assert summary.embedded == movies.num_nodes
    yield store
    store.close()


def _graph_names_embedded(counter: CountingEmbedder, kg: KnowledgeGraph,
                          allowed: set[str]) -> set[str]:
    return (set(counter.texts) & set(kg.node_names)) - allowed


def test_vectors_and_index_are_in_the_database(embedded, movies, minilm):
    stored = node_vector_index(embedded, minilm)
    assert stored is not None and stored.info.dimension == minilm.dimension
    assert stored.index.kind == "vector"
    names = movies.node_names[:50]
    vectors = fetch_node_vectors(embedded, names)
    assert set(vectors) == set(names)
    expected = np.asarray(minilm.embed_documents(names), np.float32)
    assert np.allclose(np.stack([vectors[n] for n in names]), expected, atol=1e-6)


def test_simgrag_takes_node_candidates_from_the_database_index(embedded, movies, minilm):
    from kgrag.methods.simgrag import SimGRAG

    pattern = [("Paprika", "directed by", "UNKNOWN person 1"),
               ("UNKNOWN film 2", "directed by", "UNKNOWN person 1")]
    counter = CountingEmbedder(minilm)
    on_db = SimGRAG(embedded, embedder=counter, top_k=10)
    db_result = on_db.retrieve_pattern(pattern)
    # only the pattern's texts and the (schema-sized) relation texts were embedded
    assert not _graph_names_embedded(counter, movies, {"Paprika"})
    assert len(on_db.node_names) < movies.num_nodes
    in_memory = SimGRAG(movies, embedder=minilm, top_k=10).retrieve_pattern(pattern)

    def found(result):  # every match with its GSD (equal GSDs come in id order, which differs)
        return {(frozenset(s.triples), round(s.metadata["gsd"], 4)) for s in result.items}

    assert len(db_result.items) >= 3 and found(db_result) == found(in_memory)
    # the index is searched with the configured beam (the default grows with the index:
    # 2,048 for the 198 nodes here)
    assert on_db.candidates.node_index.breadth == 2048
    narrow = SimGRAG(embedded, embedder=minilm, top_k=10, database_search_breadth=64)
    assert narrow.candidates.node_index.breadth == 64
    assert found(narrow.retrieve_pattern(pattern)) == found(in_memory)


def test_triplet_scores_use_stored_vectors(embedded, movies, minilm):
    from kgrag.methods.byokg.triplets import TripletScorer

    counter = CountingEmbedder(minilm)
    scorer = TripletScorer.from_graph(embedded, counter)
    question = "Who directed Paprika?"
    qvec = scorer.query_vector(question)
    triples = embedded.k_hop_subgraph(["Paprika"], hops=2)
    assert len(triples) > 5
    db_scores = scorer.score_triples(qvec, triples)
    assert not _graph_names_embedded(counter, movies, set())
    memory = TripletScorer.from_graph(movies, minilm)
    assert np.allclose(db_scores, memory.score_triples(qvec, triples), atol=1e-4)


def test_graphraft_similarities_use_stored_vectors(embedded, movies, minilm):
    from kgrag.methods.graphraft import GraphRAFT

    counter = CountingEmbedder(minilm)
    method = GraphRAFT(embedded, embedder=counter)
    assert "falkordb-vector" in method.linker.index_source  # no local index over all names
    qvec = np.asarray(minilm.embed_query("films by Satoshi Kon"), np.float32)
    names = [n for n in movies.node_names[:40]]
    db_sims = method._similarities(qvec, names)
    assert not _graph_names_embedded(counter, movies, set())
    memory = GraphRAFT(movies, embedder=minilm)._similarities(qvec, names)
    assert np.allclose(db_sims, memory, atol=1e-5)
    linked = method.link(["Satoshi Kon"])
    assert linked == ["Satoshi Kon"]
    assert not _graph_names_embedded(counter, movies, {"Satoshi Kon"})


def test_interrupted_embedding_resumes(falkordb_server, movies, minilm):
    store = _store(falkordb_server, "kgrag_dbvec_resume", movies)
    try:
        with pytest.raises(KeyboardInterrupt):
            embed_store(store, FailingEmbedder(minilm, fail_at=3), progress=False,
                        batch_size=50)
        done = store._read("MATCH (n:Entity) WHERE n.embedding IS NOT NULL RETURN count(n)")[0][0]
        assert done == 100
        counter = CountingEmbedder(minilm)
        summary = embed_store(store, counter, progress=False, batch_size=50)
        assert (summary.skipped, summary.embedded) == (100, movies.num_nodes - 100)
        assert len(set(counter.texts) & set(movies.node_names)) == movies.num_nodes - 100
        again = embed_store(store, counter, progress=False, batch_size=50)
        assert again.embedded == 0 and again.skipped == movies.num_nodes
    finally:
        store.close()


def test_another_model_is_refused(embedded, minilm):
    with pytest.raises(VectorModelMismatch, match="never mix"):
        embed_store(embedded, minilm, model="another-model", progress=False)
    from kgrag.embed import LookupEmbedder

    other = LookupEmbedder({"x": [1.0, 0.0]})
    with pytest.raises(Exception, match="cannot tell which model"):
        embed_store(embedded, other, progress=False)


    class AnotherModel(CountingEmbedder):
        cache_key = "another-model"

    with pytest.raises(VectorModelMismatch, match="another-model"):  # a method asking with it
        node_vector_index(embedded, AnotherModel(minilm))


def test_framework_vectors_adopted_only_when_same_model(falkordb_server, movies, minilm):
    from falkordb import FalkorDB

    store = _store(falkordb_server, "kgrag_dbvec_adopt", movies)
    raw = FalkorDB(host="127.0.0.1", port=falkordb_server.port).select_graph("kgrag_dbvec_adopt")
    names = movies.node_names[:20]
    try:  # a framework wrote random vectors: not this model's -> refused
        rng = np.random.default_rng(0)
        raw.query("UNWIND $rows AS r MATCH (n:Entity {name: r[0]}) SET n.embedding = vecf32(r[1])",
                  {"rows": [[n, [float(x) for x in rng.normal(size=minilm.dimension)]]
                            for n in names]})
        with pytest.raises(VectorModelMismatch, match="not .* embeddings of the node names"):
            embed_store(store, minilm, progress=False)
        # the model's own vectors (e.g. LlamaIndex embed_kg_nodes with it) -> adopted.
        # (FalkorDB 4.16 leaves a vector property unchanged by a SET: remove it first)
        raw.query("MATCH (n:Entity) SET n.embedding = NULL")
        raw.query("UNWIND $rows AS r MATCH (n:Entity {name: r[0]}) SET n.embedding = vecf32(r[1])",
                  {"rows": [[n, [float(x) for x in v]]
                            for n, v in zip(names, minilm.embed_documents(names))]})
        counter = CountingEmbedder(minilm)
        summary = embed_store(store, counter, progress=False)
        assert summary.skipped == 20 and summary.embedded == movies.num_nodes - 20
    finally:
        store.close()


def test_store_without_vectors_warns_once_and_keeps_working(falkordb_server, movies, minilm,
                                                            caplog):
    from kgrag.methods.byokg.triplets import TripletScorer

    store = _store(falkordb_server, "kgrag_dbvec_none", movies)
    try:
        scorer = TripletScorer.from_graph(store, minilm)
        qvec = scorer.query_vector("Who directed Paprika?")
        triples = store.k_hop_subgraph(["Paprika"], hops=1)
        with caplog.at_level(logging.WARNING, logger="kgrag.graph.cypher.vectors"):
            first = scorer.score_triples(qvec, triples)
            scorer.score_triples(qvec, store.k_hop_subgraph(["Tokyo Godfathers"], hops=1))
        warnings = [r for r in caplog.records if "kgrag index-db" in r.getMessage()]
        assert len(warnings) == 1
        memory = TripletScorer.from_graph(movies, minilm)
        assert np.allclose(first, memory.score_triples(qvec, triples), atol=1e-4)
    finally:
        store.close()


def test_cli_load_db_embed_then_index_db(falkordb_server, movies, minilm, capsys):
    from falkordb import FalkorDB

    from kgrag.cli import main

    key = "kgrag_dbvec_cli"
    FalkorDB(host="127.0.0.1", port=falkordb_server.port).select_graph(key).query(
        "MATCH (n) DETACH DELETE n")
    common = ["--backend", "falkordb", "--host", "127.0.0.1", "--port",
              str(falkordb_server.port), "--graph", key, "--no-progress"]
    assert main(["load-db", str(demo_data_path()), "--embed", *common]) == 0
    out = capsys.readouterr().out
    assert f"{movies.num_nodes} node vectors written" in out
    # the database's own counts (no per-edge scan); the vector metadata node is not an Entity
    assert (f"graph now: {movies.num_nodes} Entity nodes, {movies.num_edges} relationships"
            in out)
    assert main(["index-db", *common]) == 0  # a re-run only checks
    assert f"0 node vectors written, {movies.num_nodes} already present" in capsys.readouterr().out
    assert main(["index-db", "--model", "another-model", *common]) != 0
    assert "never mix" in capsys.readouterr().err
    store = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph=key)
    try:
        assert node_vector_index(store, minilm) is not None
    finally:
        store.close()


def _vector_index_options(server: Any, key: str) -> dict:
    from falkordb import FalkorDB

    rows = FalkorDB(host="127.0.0.1", port=server.port).select_graph(key).query(
        "CALL db.indexes() YIELD label, options, types RETURN label, options, types").result_set
    return {prop: dict(opts) for label, options, types in rows if label == "Entity"
            for prop, opts in options.items() if "VECTOR" in types[prop]}


def test_cli_index_build_options_reach_the_database(falkordb_server, movies, capsys):
    """``--hnsw-m`` / ``--ef-construction`` become the FalkorDB index's ``M`` and
    ``efConstruction`` (kgrag's efRuntime stays); without them the server's defaults hold."""
    from falkordb import FalkorDB

    from kgrag.cli import main

    for key, flags, expected in (
            ("kgrag_dbvec_hnsw", ["--hnsw-m", "8", "--ef-construction", "50"], (8, 50)),
            ("kgrag_dbvec_hnsw_default", [], (16, 200))):
        FalkorDB(host="127.0.0.1", port=falkordb_server.port).select_graph(key).query(
            "MATCH (n) DETACH DELETE n")
        common = ["--backend", "falkordb", "--host", "127.0.0.1", "--port",
                  str(falkordb_server.port), "--graph", key, "--no-progress",
                  "--embedder", f"{HASH_EMBEDDER}:embedder", "--model", "hash-64"]
        assert main(["load-db", str(demo_data_path()), "--embed", *flags, *common]) == 0
        assert f"{movies.num_nodes} node vectors written" in capsys.readouterr().out
        options = _vector_index_options(falkordb_server, key)["embedding"]
        assert (options["M"], options["efConstruction"]) == expected
        assert options["efRuntime"] == 100
    assert main(["index-db", "--ef-construction", "1", *common]) != 0
    assert "--ef-construction" in capsys.readouterr().err


def test_hnsw_options_refuse_nonsense():
    from kgrag.graph.cypher.vectors import HnswOptions

    assert HnswOptions(16, 64) == HnswOptions(m=16, ef_construction=64)
    for bad in ({"m": 1}, {"ef_construction": 0}, {"m": 2.5}, {"m": True}):
        with pytest.raises(ValueError, match="HNSW"):
            HnswOptions(**bad)


def test_a_wider_search_beam_finds_the_exact_nearest(falkordb_server):
    """An HNSW index built to be poor (M 4, efRuntime 1) misses true neighbours when asked for
    k; asked with ``breadth`` = every node it searches exhaustively and returns exactly the k
    nearest, in order, with only k rows coming back."""
    from falkordb import FalkorDB

    from kgrag.graph.cypher.store import SearchIndex

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((3000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    graph = FalkorDB(host="127.0.0.1", port=falkordb_server.port).select_graph("kgrag_beam")
    graph.query("MATCH (n) DETACH DELETE n")
    graph.query("CREATE VECTOR INDEX FOR (n:Entity) ON (n.embedding) OPTIONS {dimension: 32, "
                "similarityFunction: 'cosine', M: 4, efConstruction: 8, efRuntime: 1}")
    graph.query("UNWIND $rows AS r CREATE (:Entity {name: r.name, embedding: vecf32(r.v)})",
                {"rows": [{"name": f"n{i}", "v": v.tolist()} for i, v in enumerate(vectors)]})
    store = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph="kgrag_beam")
    index = SearchIndex("vector", "Entity", "Entity", "embedding", "falkordb",
                        (("similarityFunction", "cosine"),))
    narrow = wide = 0
    for q in vectors[rng.choice(3000, 20, replace=False)] + 0.3 * rng.standard_normal((20, 32)):
        exact = [f"n{i}" for i in np.argsort(-(vectors @ q), kind="stable")[:10]]
        got = store.vector_search(index, q.tolist(), 10, breadth=3000)
        assert len(got) == 10
        assert [name for name, _ in got] == exact
        wide += len(set(exact) & {name for name, _ in got})
        narrow += len(set(exact) & {name for name, _ in store.vector_search(index, q.tolist(), 10)})
    assert wide == 200
    assert narrow < 200  # the poor index asked for k alone does miss some
    store.close()


def _ranked(triples) -> list[tuple[str, str, str, float]]:
    return [(t.head, t.relation, t.tail, t.score) for t in triples]


QUESTIONS = [("Who directed Paprika?", "Paprika"), ("Which films did Satoshi Kon write?",
                                                     "Satoshi Kon"),
             ("What genre is Tokyo Godfathers?", "Tokyo Godfathers")]


@pytest.mark.parametrize("typed", [0, 1, 4, 100])
@pytest.mark.parametrize("first_pairs", [None, 2])
def test_triplet_top_k_is_ranked_in_the_database(embedded, minilm, monkeypatch, first_pairs,
                                                 typed):
    """The database ranks the neighbourhood's node pairs; the client reads only the best pairs'
    relations and vectors and returns exactly what scoring the fetched neighbourhood gives.
    ``first_pairs`` 2: two pairs per direction first, so the threshold passes run. ``typed``:
    relations with their own passes (0: one untyped pass; 100: every relation typed, no
    untyped pass)."""
    from kgrag.methods.byokg.triplets import TripletScorer

    client = TripletScorer.from_graph(embedded, minilm)
    client.rank_in_database = False
    expected = {(q, k): _ranked(client.top_k(q, k=k, seeds=[s]))
                for q, s in QUESTIONS for k in (1, 10)}
    scorer = TripletScorer.from_graph(embedded, minilm)
    scorer.database_first_pairs = first_pairs
    scorer.database_typed_relations = typed
    passes: list[tuple[str, dict]] = []

    def counted(name):
        method = getattr(embedded, name)

        def call(*args, **kwargs):
            passes.append((name, {**kwargs, "relations": list(args[3]) if len(args) > 3
                                  else None}))
            return method(*args, **kwargs)
        return call

    def no_fetch(*args, **kwargs):
        raise AssertionError("the neighbourhood was fetched into the client")

    monkeypatch.setattr(embedded, "best_pairs", counted("best_pairs"))
    monkeypatch.setattr(embedded, "best_triples", counted("best_triples"))
    monkeypatch.setattr(embedded, "k_hop_subgraph", no_fetch)
    for q, s in QUESTIONS:
        for k in (1, 10):
            assert _ranked(scorer.top_k(q, k=k, seeds=[s])) == expected[(q, k)]
    if first_pairs == 2:  # two pairs per direction cannot decide every question
        assert any("threshold" in p for _, p in passes)
    typed_passes = [p for name, p in passes if name == "best_triples"]
    assert bool(typed_passes) == (typed > 0)
    assert all(len(p["relations"]) == min(typed, len(embedded.list_relations()))
               for p in typed_passes)
    if typed == 100:  # every relation is read by type: no untyped pass
        assert all(name == "best_triples" for name, _ in passes)
    if typed and first_pairs == 2:  # the typed triples beyond the first two
        assert any("threshold" in p for p in typed_passes)


def test_triplet_ranking_with_relations_in_an_edge_property(falkordb_server, movies, minilm,
                                                            monkeypatch):
    """Relations kept in an edge property: no typed passes (each would read every edge), the
    same ranking as the client's."""
    from falkordb import FalkorDB

    from kgrag.methods.byokg.triplets import TripletScorer

    FalkorDB(host="127.0.0.1", port=falkordb_server.port).select_graph(
        "kgrag_dbvec_relprop").query("MATCH (n) DETACH DELETE n")
    store = to_falkordb(movies, "127.0.0.1", falkordb_server.port, graph="kgrag_dbvec_relprop",
                        progress=False, relation_property="relation", relationship_type="REL")
    try:
        assert not store.relations_are_types
        embed_store(store, minilm, progress=False, batch_size=64)
        client = TripletScorer.from_graph(store, minilm)
        client.rank_in_database = False
        scorer = TripletScorer.from_graph(store, minilm)
        scorer.database_first_pairs = 2  # the threshold pass and the relation reads run
        passes: list[dict] = []
        best_pairs = store.best_pairs

        def counted(*args, **kwargs):
            passes.append(kwargs)
            return best_pairs(*args, **kwargs)

        monkeypatch.setattr(store, "best_pairs", counted)
        typed_reads: list[tuple] = []
        monkeypatch.setattr(store, "best_triples", lambda *a, **kw: typed_reads.append(a))
        for q, seed in QUESTIONS:
            assert _ranked(scorer.top_k(q, k=10, seeds=[seed])) == \
                _ranked(client.top_k(q, k=10, seeds=[seed]))
        assert passes
        assert not typed_reads
    finally:
        store.close()


def test_best_triples_scores_named_relations_in_the_database(embedded, movies, minilm):
    """``best_triples``: the edges of the named relations touching the names, each scored
    cos(q, h) + cos(q, t) + its relation's score; ``limit`` keeps the best per direction and
    bounds the rest; ``threshold`` keeps all at or above it."""
    q = np.asarray(minilm.embed_query("Who directed Paprika?"), np.float32)
    names = ["Paprika", "Satoshi Kon"]
    scores = {"directed_by": 0.5, "written_by": 0.1}
    vec = {n: np.asarray(minilm.embed_query(n), np.float32) for n in movies.node_names}
    expected = {(h, r, t): float(vec[h] @ q + vec[t] @ q) + scores[r]
                for h, r, t in (e.as_tuple() for e in movies.triples())
                if r in scores and (h in names or t in names)}
    got, bound = embedded.best_triples(names, q, "embedding", scores)
    assert bound is None
    assert {(h, r, t) for h, r, t, _ in got} == set(expected)
    assert all(abs(s - expected[(h, r, t)]) < 1e-4 for h, r, t, s in got)
    best, bound = embedded.best_triples(names, q, "embedding", scores, limit=2)
    assert bound is not None and len(best) <= 4  # two per direction
    assert all(expected[t] <= bound + 1e-4 for t in set(expected) - {b[:3] for b in best})
    cut = sorted(expected.values())[len(expected) // 2]
    above, _ = embedded.best_triples(names, q, "embedding", scores, threshold=cut)
    assert {b[:3] for b in above} >= {t for t, s in expected.items() if s >= cut + 1e-4}
    assert all(s >= cut for *_, s in above) and len(above) < len(expected)
    assert embedded.best_triples(names, q, "embedding", {}) == ([], None)


def test_stored_counts_are_the_databases_own(embedded, movies):
    """The counts ``load-db`` reports and SimGRAG's default beam reads: the labelled nodes (the
    vector metadata node has its own label) and every relationship."""
    assert embedded.stored_node_count() == movies.num_nodes
    assert embedded.stored_counts() == (movies.num_nodes, movies.num_edges)


def test_default_search_breadth_grows_with_the_index():
    """2,048 up to ~600k nodes, then one beam node per 300 index nodes (a power of two), at
    most 32,768: 8,192 at the 2.4M nodes where that gave recall 0.99."""
    from kgrag.methods.simgrag.db_candidates import BREADTH, MAX_AUTO_BREADTH, auto_breadth

    assert [auto_breadth(n) for n in (0, 198, 243_000, 614_400)] == [BREADTH] * 4
    assert auto_breadth(614_401) == 4096 and auto_breadth(2_424_518) == 8192
    assert auto_breadth(50_000_000) == MAX_AUTO_BREADTH == 32768


def test_untyped_pairs_name_only_the_relations_that_can_reach_the_kth():
    """A pair needs the relations whose similarity lifts it to ``lower`` (minus 2 slacks): a
    prefix of the relations best first, its length rounded up to a power of four; a pair no
    relation lifts is dropped; beyond MAX_NAMED_RELATIONS, or without a finite ``lower``: every
    relation (None)."""
    from kgrag.methods.byokg.triplets import (
        DATABASE_SLACK,
        MAX_NAMED_RELATIONS,
        _pairs_by_relations,
    )

    names = [f"r{i}" for i in range(40)]
    sims = np.linspace(0.5, 0.1, 40)  # r0 best, steps of ~0.0103
    lower = 1.0
    pairs = [("a", "b", 0.55),   # needs sim >= 0.45 - 2 slack: r0..r4 -> 16
             ("c", "d", 0.52),   # needs 0.48: r0, r1 -> 4
             ("e", "f", 0.40),   # needs 0.60: none, dropped
             ("g", "h", 0.75),   # needs 0.25: r0..r24, beyond 16: every relation
             ("i", "j", 1.0 - 0.5 + 2 * DATABASE_SLACK)]  # exactly r0 -> 1
    groups = {None if k is None else len(k): [p[0] for p in v]
              for k, v in _pairs_by_relations(pairs, names, sims, lower)}
    assert groups == {16: ["a"], 4: ["c"], None: ["g"], 1: ["i"]}
    assert all(k is None or list(k) == names[:len(k)]
               for k, _ in _pairs_by_relations(pairs, names, sims, lower))
    assert MAX_NAMED_RELATIONS == 16
    assert _pairs_by_relations(pairs, names, sims, -np.inf) == [(None, pairs)]
    assert _pairs_by_relations([], names, sims, lower) == []


def test_pair_relations_of_named_relations(embedded, monkeypatch):
    """``relations=``: only those relations' edges between the pairs (an empty list: none)."""
    pairs = [("Tokyo Godfathers", "Satoshi Kon")]
    assert embedded.pair_relations(pairs) == [("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
                                              ("Tokyo Godfathers", "written_by", "Satoshi Kon")]
    assert embedded.pair_relations(pairs, ["written_by", "has_genre"]) == [
        ("Tokyo Godfathers", "written_by", "Satoshi Kon")]
    assert embedded.pair_relations(pairs, []) == []
    # groups in one round trip, each with its own relations; duplicates across groups once
    assert embedded.grouped_pair_relations([
        (["written_by"], pairs), (None, [("Paprika", "Satoshi Kon")] + pairs), ([], pairs),
        (["has_genre"], [("Tokyo Godfathers", "Comedy")])]) == sorted([
            ("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
            ("Tokyo Godfathers", "written_by", "Satoshi Kon"),
            ("Tokyo Godfathers", "has_genre", "Comedy"),
            *[t for t in embedded.pair_relations([("Paprika", "Satoshi Kon")])]])
    assert embedded.pair_relations([("Paprika", "Satoshi Kon")])  # Paprika was directed by him
    groups = [(["written_by"], pairs), (None, [("Paprika", "Satoshi Kon")] + pairs)]
    together = embedded.grouped_pair_relations(groups)
    monkeypatch.setattr(embedded, "batch_size", 1)  # one pair per query
    assert embedded.grouped_pair_relations(groups) == together


def test_triplet_ranking_needs_every_neighbour_vector(falkordb_server, movies, minilm):
    """A neighbour without a stored vector: the client path (which embeds that one name),
    with the same result as a store whose every vector is there."""
    from kgrag.methods.byokg.triplets import TripletScorer

    store = _store(falkordb_server, "kgrag_dbvec_gap", movies)
    try:
        embed_store(store, minilm, progress=False, batch_size=64)
        full = TripletScorer.from_graph(store, minilm).top_k("Who directed Paprika?", k=10,
                                                             seeds=["Paprika"])
        store._write("MATCH (n:Entity {name: 'Satoshi Kon'}) REMOVE n.embedding")
        counter = CountingEmbedder(minilm)
        scorer = TripletScorer.from_graph(store, counter)
        gap = scorer.top_k("Who directed Paprika?", k=10, seeds=["Paprika"])
        assert "Satoshi Kon" in counter.texts  # embedded in the client: it has no vector
        assert [t[:3] for t in _ranked(gap)] == [t[:3] for t in _ranked(full)]
        assert np.allclose([t.score for t in gap], [t.score for t in full], atol=1e-5)
        # the pass itself tells: the pair without a vector ranks first, score NaN
        q = minilm.embed_query("Who directed Paprika?")
        pairs, _ = store.best_pairs(["Paprika"], q, "embedding", limit=1)
        assert any("Satoshi Kon" in (h, t) and np.isnan(s) for h, t, s in pairs)
        assert not any(np.isnan(s) for _, _, s in
                       store.best_pairs(["Parasite"], q, "embedding")[0])
    finally:
        store.close()


def test_triplet_ranking_falls_back_when_the_server_refuses(embedded, minilm, monkeypatch,
                                                            caplog):
    """A server without the vector function answers with an error: one warning, then the
    neighbourhood is scored in the client, with the same result."""
    from kgrag.methods.byokg.triplets import TripletScorer

    client = TripletScorer.from_graph(embedded, minilm)
    client.rank_in_database = False
    expected = _ranked(client.top_k("Who directed Paprika?", k=5, seeds=["Paprika"]))
    monkeypatch.setattr(embedded, "_cosine",
                        lambda var, prop, param: f"vec.noSuchFunction({var}.{prop})")
    scorer = TripletScorer.from_graph(embedded, minilm)
    with caplog.at_level(logging.WARNING, logger="kgrag.methods.byokg.triplets"):
        assert _ranked(scorer.top_k("Who directed Paprika?", k=5, seeds=["Paprika"])) == expected
        scorer.top_k("What genre is Tokyo Godfathers?", k=5, seeds=["Tokyo Godfathers"])
    assert len([r for r in caplog.records if "in the database failed" in r.getMessage()]) == 1
