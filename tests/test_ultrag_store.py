"""UltRAG on a GraphStore: projections run as one_hop calls inside the store.

A real FalkorDB server (the ``falkordb_server`` fixture, via the Redis protocol and via Bolt with
the Neo4j store) holds a sample of MetaQA films; every query must give exactly the memberships
the in-memory executor gives. A server-free store with only the GraphStore protocol's members
(:class:`protocol_store.ProtocolStore`) checks the same without a server, including fuzzy
leaves, the pipeline with a fake LLM, and the neural executor's store path (k-hop fetch, then
the SEPPR cut) on a subgraph size small enough for the cut to fire.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from langchain_core.language_models import FakeListChatModel
from metaqa_samples import metaqa_films
from protocol_store import ProtocolStore

from kgrag import KnowledgeGraph
from kgrag.context.types import Triple
from kgrag.methods.ultrag import QueryResolutionError, QueryStructureError, UltRAG
from kgrag.methods.ultrag.store_executor import StoreQueryExecutor
from kgrag.methods.ultrag.vocabulary import GraphVocabulary


@pytest.fixture(autouse=True)
def _symbolic_executor_by_default(monkeypatch):
    """These tests pin the crisp scores of the symbolic executor (memberships exactly 1.0,
    hand-checked answer sets); the neural executor, UltRAG's default, is tested in
    test_ultrag_neural.py / test_ultrag_executors.py. Explicit ``executor=`` arguments win."""
    from kgrag.methods.ultrag import pipeline

    monkeypatch.setattr(pipeline, "DEFAULT_EXECUTOR", "symbolic")


def films(n_triples: int = 700, seed: int = 5) -> list[tuple[str, str, str]]:
    """All triples of random MetaQA films whose names are safe for every driver."""
    return metaqa_films(n_triples, seed)


def sample_queries(kg: KnowledgeGraph, n: int, seed: int = 0) -> list[str]:
    """Chains, inverse steps and intersections drawn from the graph (all with answers)."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        e = rng.randrange(kg.num_edges)
        h, r, t = (int(kg.heads[e]), int(kg.rels[e]), int(kg.tails[e]))
        name = kg.node_names
        rel = kg.relation_names
        kind = len(out) % 3
        if kind == 0:
            out.append(f'"{name[t]}" -> {rel[r]}_inv -> {rel[r]}')
        elif kind == 1:
            out.append(f'"{name[h]}" -> {rel[r]}')
        else:  # two edges into the same node t, then back out along the first relation
            into_t = kg.in_order[kg.in_indptr[t]:kg.in_indptr[t + 1]]
            e2 = int(into_t[rng.randrange(len(into_t))])
            h2, r2 = int(kg.heads[e2]), int(kg.rels[e2])
            out.append(f'AND("{name[h]}" -> {rel[r]}, "{name[h2]}" -> {rel[r2]}) -> {rel[r]}_inv')
    return out


def as_dict(entities) -> dict[str, float]:
    return {e.name: round(e.score, 5) for e in entities}


@pytest.fixture(scope="module")
def film_kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(films())


def test_name_level_store_matches_in_memory_on_sampled_queries(film_kg):
    store = ProtocolStore(film_kg)
    on_store = UltRAG(store, linking="exact", top_k=10_000)
    in_memory = UltRAG(film_kg, linking="exact", top_k=10_000)
    for query in sample_queries(film_kg, 30):
        expected = as_dict(in_memory.execute(query))
        assert expected  # every sampled query has answers
        assert as_dict(on_store.execute(query)) == expected, query
    assert store.calls["one_hop"] > 0


@pytest.mark.parametrize("projection", ["max", "noisy_or", "sum"])
def test_fuzzy_leaves_match_in_memory(film_kg, projection):
    store = ProtocolStore(film_kg)
    vocab = GraphVocabulary(store.list_relations(), [])
    movies = sorted({film_kg.node_names[h] for h in film_kg.heads.tolist()})[:6]
    weights = [1.0, 0.7, 0.5, 0.3, 0.2, 0.1]
    leaf = dict(zip(movies, weights))
    query = "OR(x -> has_genre, x -> release_year)"
    got = StoreQueryExecutor(store, vocab, projection=projection).execute_names(
        query, [leaf, leaf])
    from kgrag.methods.ultrag import SymbolicFuzzyExecutor, fuzzy_set

    x = fuzzy_set({film_kg.node_index[m]: w for m, w in leaf.items()}, film_kg.num_nodes)
    dense = SymbolicFuzzyExecutor(film_kg, projection=projection).execute(query, [x, x])
    expected = {film_kg.node_names[i]: float(dense[i]) for i in np.flatnonzero(dense)}
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-5)


def test_store_limits_and_errors(film_kg):
    store = ProtocolStore(film_kg)
    method = UltRAG(store, linking="exact")
    with pytest.raises(QueryStructureError, match="NOT"):
        method.execute(f'NOT("{film_kg.node_names[0]}" -> has_genre)')
    with pytest.raises(QueryResolutionError, match="Q ids"):
        method.execute("Q3 -> has_genre")
    with pytest.raises(QueryResolutionError, match="relation"):
        method.execute(f'"{film_kg.node_names[0]}" -> P999')
    with pytest.raises(ValueError, match="executor='neural'"):
        UltRAG(store, subgraph_k=100)
    with pytest.raises(ValueError, match="in-memory"):
        UltRAG(store, executor=lambda kg: None)
    with pytest.raises(TypeError, match="GraphStore"):
        UltRAG(object())
    genre = film_kg.relation_index["has_genre"]
    capped = UltRAG(store, linking="exact", max_frontier=2)
    many = capped.run(f'"Drama" -> P{genre}_inv -> P{genre}')
    assert many.truncated


def test_pipeline_on_a_store_with_a_fake_llm(film_kg):
    store = ProtocolStore(film_kg)
    movie = film_kg.node_names[int(film_kg.heads[0])]
    genre = film_kg.relation_index["has_genre"]
    llm = FakeListChatModel(responses=[f'<query>"{movie}" -> P{genre}</query>',
                                       "<answers>\nDrama\n</answers>"])
    method = UltRAG(store, llm=llm, linking="exact")
    prompt = method.query_prompt("What genre is it?", seeds=[movie])
    assert f'"{movie}": {movie}' in prompt and "P0: " in prompt
    answer = method.answer("What genre is it?")
    assert answer.usage.calls == 2
    expected = {t.tail for t in film_kg.one_hop([movie], direction="out",
                                                 relations=["has_genre"])}
    assert {e.name for e in answer.retrieval.items} == expected
    assert all(e.metadata["entity_id"] == e.name for e in answer.retrieval.items)


@pytest.fixture(scope="module")
def falkor_stores(falkordb_server, film_kg):
    from falkordb import FalkorDB

    from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
    from kgrag.graph.cypher.neo4j import Neo4jGraphStore

    key = "ultrag_films"
    FalkorDB(host="127.0.0.1", port=falkordb_server.port).select_graph(key).query(
        "MATCH (n) DETACH DELETE n")
    redis_store = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph=key)
    redis_store.load_triples(film_kg, progress=False)
    bolt = Neo4jGraphStore.from_uri(falkordb_server.bolt_uri, node_label="UltRAGFilm",
                                    batch_size=100)
    bolt._write("MATCH (n:UltRAGFilm) DETACH DELETE n")
    bolt.load_triples(film_kg, progress=False, batch_size=100)
    yield {"falkordb": redis_store, "neo4j-bolt": bolt}
    bolt._write("MATCH (n:UltRAGFilm) DETACH DELETE n")
    redis_store.close()
    bolt.close()


@pytest.mark.server
@pytest.mark.parametrize("kind", ["falkordb", "neo4j-bolt"])
def test_real_database_store_matches_in_memory(falkor_stores, film_kg, kind):
    on_store = UltRAG(falkor_stores[kind], linking="exact", top_k=10_000)
    in_memory = UltRAG(film_kg, linking="exact", top_k=10_000)
    for query in sample_queries(film_kg, 12, seed=1):
        assert as_dict(on_store.execute(query)) == as_dict(in_memory.execute(query)), query


# ------------------------------------------------------------------ neural executor on a store
def _neural_reference(kg: KnowledgeGraph, query: str, seeds: dict[str, float],
                      k: int = 30_000) -> dict[str, float]:
    """The neural executor on the same SEPPR subgraph, computed from the in-memory graph."""
    from kgrag.methods.ultrag import NeuralFuzzyExecutor, leaves, parse_query
    from kgrag.methods.ultrag.neural import store_subgraph

    sub, _ = store_subgraph(kg, kg.relation_names, seeds, k=k)
    parsed = parse_query(query)
    sets = [(np.array([sub.node_index[leaf.text]]), np.ones(1, np.float32))
            for leaf in leaves(parsed)]
    scores = NeuralFuzzyExecutor(sub).execute(parsed, sets)
    return dict(zip(sub.node_names, scores.tolist()))


@pytest.mark.server
@pytest.mark.parametrize("kind", ["falkordb", "neo4j-bolt"])
def test_neural_executor_on_a_database_runs_on_the_seppr_subgraph(falkor_stores, film_kg, kind):
    """Alg. 2 on a store: the 2-hop neighbourhood fetched from the server, its SEPPR top-k,
    UltraQuery on it -- the same scores as on that subgraph built from the in-memory graph."""
    store = falkor_stores[kind]
    genre = film_kg.relation_index["has_genre"]
    drama = "Drama" if "Drama" in film_kg.node_index else film_kg.node_names[
        int(film_kg.tails[film_kg.rels == genre][0])]
    query = f'"{drama}" -> has_genre_inv'  # by name: P ids follow each store's relation order
    method = UltRAG(store, linking="exact", executor="neural", threads=1, top_k=10_000)
    assert method.graph_executor.subgraph_k == 30_000
    run = method.run(query)
    assert run.subgraph_nodes == len(run.names) > 1
    got = dict(zip(run.names, run.scores.tolist()))
    expected = _neural_reference(film_kg, query.replace(f'"{drama}"', drama), {drama: 1.0})
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-5)
    films_of_genre = {t.head for t in store.one_hop([drama], direction="in",
                                                    relations=["has_genre"])}
    top = [e.name for e in method.execute(query, top_k=len(films_of_genre))]
    assert len(set(top) & films_of_genre) >= len(films_of_genre) - 1  # the genre's films first
    assert all(0 <= s <= 1 for s in run.scores)




def test_neural_executor_on_a_store_without_a_server_cuts_to_the_seppr_subgraph(film_kg):
    """Alg. 2 on a store, server-free: one read per level of the neighbourhood (no one_hop
    per projection), the SEPPR cut to ``subgraph_k`` nodes -- small enough here that it drops most
    of the neighbourhood -- and UltraQuery on what is left: the genre's films rank first."""
    store = ProtocolStore(film_kg)
    k = 40
    method = UltRAG(store, linking="exact", executor="neural", threads=1, subgraph_k=k,
                    top_k=10_000, min_membership=0.0)
    fetched = film_kg.k_hop_subgraph(["Comedy"], hops=2)
    neighbourhood = {t.head for t in fetched} | {t.tail for t in fetched}
    assert len(neighbourhood) > 3 * k

    query = '"Comedy" -> has_genre_inv'
    run = method.run(query)
    assert run.subgraph_nodes == len(run.names) == k  # the cut fired
    assert "Comedy" in run.names and set(run.names) < neighbourhood
    assert store.calls["k_hop_subgraph"] == 2 and store.calls["degree"] == 1  # two levels
    assert store.calls["one_hop"] == 0
    comedies = {t.head for t in film_kg.one_hop(["Comedy"], direction="in",
                                                relations=["has_genre"])}
    assert comedies < set(run.names)  # SEPPR keeps the anchor's own neighbours
    ranked = method.execute(query)
    assert {e.name for e in ranked[:len(comedies)]} == comedies
    assert ranked[len(comedies) - 1].score > 0.9 and ranked[len(comedies)].score < 0.2
    got = dict(zip(run.names, run.scores.tolist()))
    expected = _neural_reference(film_kg, "Comedy -> has_genre_inv", {"Comedy": 1.0}, k=k)
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-5)

    # two anchors: both leaves' fuzzy sets are mapped into the one subgraph
    year = sorted(t.tail for t in film_kg.one_hop(sorted(comedies), direction="out",
                                                  relations=["release_year"]))[0]
    both = f'AND("Comedy" -> has_genre_inv, "{year}" -> release_year_inv)'
    answers = {e.name for e in UltRAG(store, linking="exact", executor="symbolic").execute(both)}
    assert answers
    store.calls.clear()
    top = method.execute(both, top_k=len(answers))
    assert {e.name for e in top} == answers and min(e.score for e in top) > 0.5
    # one neighbourhood for both leaves, not one per leaf or projection
    assert store.calls["k_hop_subgraph"] == 2 and store.calls["one_hop"] == 0


def _star_with_hub() -> list[tuple[str, str, str]]:
    """A seed with three neighbours: two small ones and a hub of 40 leaves."""
    triples = [("seed", "r", "a"), ("seed", "r", "b"), ("hub", "r", "seed"),
               ("a", "r", "x"), ("b", "s", "y"), ("y", "r", "z")]
    return triples + [("hub", "s", f"leaf {i:02d}") for i in range(40)]


def test_budgeted_neighbourhood_reads_small_nodes_first_and_leaves_hubs_unexpanded():
    from kgrag.methods.ultrag.neural import budgeted_neighbourhood

    kg = KnowledgeGraph.from_triples(_star_with_hub())
    full = {t.as_tuple() for t in kg.k_hop_subgraph(["seed"], hops=2)}
    # a budget that holds everything: the whole 2-hop neighbourhood, as a BFS reads it
    assert {t.as_tuple() for t in budgeted_neighbourhood(kg, ["seed"], max_edges=1000)} == full
    # 3 seed edges + a's and b's (degree 2 each, one of them the edge back to the seed): the hub
    # (degree 41) does not fit in what is left, so it stays a node with its one edge to the seed
    got = budgeted_neighbourhood(kg, ["seed"], max_edges=8)
    assert [t.as_tuple() for t in got] == sorted([
        ("seed", "r", "a"), ("seed", "r", "b"), ("hub", "r", "seed"), ("a", "r", "x"),
        ("b", "s", "y")])
    assert len(got) <= 8
    # a budget smaller than the seed's own edges: as many of them as it holds (which ones is
    # the store's k_hop_subgraph cap: lowest ids in memory, name order in a database)
    capped = {t.as_tuple() for t in budgeted_neighbourhood(kg, ["seed"], max_edges=2)}
    assert len(capped) == 2 and capped < {t.as_tuple() for t in kg.one_hop(["seed"])}
    assert budgeted_neighbourhood(kg, ["seed"], hops=1, max_edges=1000) == sorted(
        kg.one_hop(["seed"]), key=Triple.as_tuple)


@pytest.mark.server
def test_budgeted_neighbourhood_on_falkordb_counts_without_naming_edges(falkordb_server):
    """The database counts a hub's edges as node pairs (``neighbour_counts``), then reads the
    same edges as the in-memory graph under the same budget."""
    from falkordb import FalkorDB

    from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
    from kgrag.methods.ultrag.neural import budgeted_neighbourhood

    key = "ultrag_budget_star"
    FalkorDB(host="127.0.0.1", port=falkordb_server.port).select_graph(key).query(
        "MATCH (n) DETACH DELETE n")
    store = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph=key)
    try:
        kg = KnowledgeGraph.from_triples(_star_with_hub())
        store.load_triples(kg, progress=False)
        names = ["seed", "hub", "a", "leaf 00", "nobody"]
        assert store.neighbour_counts(names) == kg.degree(names)  # no parallel edges here
        for budget in (5, 8, 30, 1000):  # the seed's 3 edges fit: no store-specific cap
            assert (budgeted_neighbourhood(store, ["seed"], max_edges=budget)
                    == budgeted_neighbourhood(kg, ["seed"], max_edges=budget)), budget
    finally:
        store.close()


@pytest.mark.server
@pytest.mark.parametrize("kind", ["falkordb"])
def test_hybrid_executor_on_a_database(falkor_stores, film_kg, kind):
    """The default on a store: proved answers through one_hop, UltraQuery (on the SEPPR
    subgraph fetched from the server) only for a projection without facts, its guesses
    below every proved answer."""
    store = falkor_stores[kind]
    genre = film_kg.relation_index["has_genre"]
    drama = film_kg.node_names[int(film_kg.tails[film_kg.rels == genre][0])]
    method = UltRAG(store, linking="exact", executor="hybrid", threads=1, top_k=10_000)
    proved = method.retrieve_query(f'"{drama}" -> has_genre_inv')
    films_of_genre = {t.head for t in store.one_hop([drama], direction="in",
                                                     relations=["has_genre"])}
    assert {e.name for e in proved.items} == films_of_genre
    assert proved.metadata["executor"]["neural"] is False
    assert all(e.metadata["source"] == "exact" and e.score == 1.0 for e in proved.items)
    # a genre has no genre: nothing proved, UltraQuery's guesses from the fetched subgraph
    guessed = method.retrieve_query(f'"{drama}" -> has_genre')
    summary = guessed.metadata["executor"]
    assert summary["neural"] and summary["guessing"] and summary["exact_answers"] == 0
    assert guessed.items and all(e.metadata["source"] == "neural"
                                 and 0 <= e.score <= 0.5 for e in guessed.items)
    assert guessed.metadata["subgraph_nodes"] > 1


@pytest.mark.server
@pytest.mark.parametrize("kind", ["falkordb", "neo4j-bolt"])
def test_neighbour_counts_bound_the_edges_a_read_returns(falkor_stores, film_kg, kind):
    """``neighbour_counts`` (node pairs, no edge named) never exceeds the edges ``one_hop``
    returns for a node and equals them where no two edges join the same pair."""
    store = falkor_stores[kind]
    names = sorted(film_kg.node_names)[:60] + ["no such node"]
    counts = store.neighbour_counts(names)
    assert "no such node" not in counts and set(counts) <= set(names)
    for name in names[:60]:
        edges = film_kg.one_hop([name])
        pairs = {frozenset((t.head, t.tail)) for t in edges}
        assert counts.get(name, 0) <= len(edges), name
        if len(pairs) == len(edges):
            assert counts.get(name, 0) == len(edges), name
