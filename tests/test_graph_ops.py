"""Graph operations on a small graph whose answers were worked out by hand.

The graph (edge ids in brackets; edges are sorted by (head id, relation id, tail id), and ids
are given in order of first appearance in ``EDGES``)::

    Film1 -directed_by-> Dir1   [0]     Film1 -starred-> ActA [1]   Film1 -starred-> ActB [2]
    Dir1  -born_in-> CityX      [3]
    Film2 -directed_by-> Dir1   [4]     Film2 -starred-> ActB [5]
    Film3 -directed_by-> Dir2   [6]     Film3 -starred-> ActB [7]   Film3 -starred-> ActC [8]
    ActA  -born_in-> CityX      [9]
    ActB  -friend_of-> ActC     [10]
    ActC  -born_in-> CityZ      [11]
    CityX -located_in-> CountryY [12]

Node ids: Film1 0, Dir1 1, Film2 2, Film3 3, Dir2 4, ActA 5, ActB 6, ActC 7, CityX 8,
CountryY 9, CityZ 10. Relation ids: directed_by 0, starred 1, born_in 2, located_in 3, friend_of 4.
"""

from __future__ import annotations

import numpy as np
import pytest

from kgrag import GraphStore, KnowledgeGraph, Path, PathStep, Triple, parse_relation_path
from kgrag.errors import UnknownNodeError, UnknownRelationError

EDGES = [
    ("Film1", "directed_by", "Dir1"),
    ("Film2", "directed_by", "Dir1"),
    ("Film3", "directed_by", "Dir2"),
    ("Film1", "starred", "ActA"),
    ("Film1", "starred", "ActB"),
    ("Film2", "starred", "ActB"),
    ("Film3", "starred", "ActB"),
    ("Film3", "starred", "ActC"),
    ("Dir1", "born_in", "CityX"),
    ("ActA", "born_in", "CityX"),
    ("CityX", "located_in", "CountryY"),
    ("ActC", "born_in", "CityZ"),
    ("ActB", "friend_of", "ActC"),
]

E = {  # edge id -> triple, as derived in the module docstring
    0: ("Film1", "directed_by", "Dir1"), 1: ("Film1", "starred", "ActA"),
    2: ("Film1", "starred", "ActB"), 3: ("Dir1", "born_in", "CityX"),
    4: ("Film2", "directed_by", "Dir1"), 5: ("Film2", "starred", "ActB"),
    6: ("Film3", "directed_by", "Dir2"), 7: ("Film3", "starred", "ActB"),
    8: ("Film3", "starred", "ActC"), 9: ("ActA", "born_in", "CityX"),
    10: ("ActB", "friend_of", "ActC"), 11: ("ActC", "born_in", "CityZ"),
    12: ("CityX", "located_in", "CountryY"),
}


@pytest.fixture(scope="module")
def kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(EDGES, relation_descriptions={"starred": "film -> actor"})


def tuples(triples: list[Triple]) -> list[tuple[str, str, str]]:
    return [t.as_tuple() for t in triples]


def edges(*ids: int) -> list[tuple[str, str, str]]:
    return [E[i] for i in sorted(ids)]


def test_storage_matches_the_hand_derived_edge_ids(kg):
    assert [t.as_tuple() for t in kg.triples()] == [E[i] for i in range(13)]
    assert kg.node_names[:5] == ["Film1", "Dir1", "Film2", "Film3", "Dir2"]
    assert kg.relation_names == ["directed_by", "starred", "born_in", "located_in", "friend_of"]
    assert kg.out_indptr.tolist() == [0, 3, 4, 6, 9, 9, 10, 11, 12, 13, 13, 13]
    assert isinstance(kg, GraphStore)
    assert kg.counts() == {"nodes": 11, "edges": 13, "relations": 5}


def test_the_protocol_lists_the_name_metadata_and_a_partial_store_is_not_one(kg):
    """relation_labels / relation_descriptions / aliases / annotations belong to GraphStore
    (methods read them as attributes); the server-free test store has every member."""
    from protocol_store import ProtocolStore

    from kgrag.graph.annotations import GraphAnnotations

    store = ProtocolStore(kg)
    assert isinstance(store, GraphStore)
    assert (store.relation_labels, store.relation_descriptions, store.aliases) == (
        kg.relation_labels, kg.relation_descriptions, kg.aliases)
    assert isinstance(store.annotations, GraphAnnotations)

    class NoNameMetadata:  # the operations only, as a store written before the attributes
        supports_cypher = False

    for name in ("counts", "has_node", "iter_node_names", "list_relations", "one_hop",
                 "follow_path", "shortest_paths", "k_hop_subgraph", "schema_summary", "degree"):
        setattr(NoNameMetadata, name, getattr(ProtocolStore, name))
    assert not isinstance(NoNameMetadata(), GraphStore)


# ---------------------------------------------------------------------- one hop
def test_one_hop_directions(kg):
    assert tuples(kg.one_hop(["ActB"])) == edges(2, 5, 7, 10)
    assert tuples(kg.one_hop(["ActB"], direction="out")) == edges(10)
    assert tuples(kg.one_hop(["ActB"], direction="in")) == edges(2, 5, 7)


def test_one_hop_relation_filter_and_several_nodes(kg):
    assert tuples(kg.one_hop(["Film1", "Film3"], direction="out", relations=["starred"])) == \
        edges(1, 2, 7, 8)
    assert tuples(kg.one_hop(["CityX"], relations=["born_in"])) == edges(3, 9)
    assert tuples(kg.one_hop(["CityX"], relations=["born_in", "located_in"], direction="out")) == \
        edges(12)
    # an edge between two queried nodes is reported once
    assert tuples(kg.one_hop(["ActB", "ActC", "ActB"])) == edges(2, 5, 7, 8, 10, 11)


def test_one_hop_unknowns_and_limit(kg):
    assert kg.one_hop(["Dir1"], relations=["no_such_relation"]) == []
    assert tuples(kg.one_hop(["Dir1"], relations=["no_such_relation", "born_in"])) == edges(3)
    assert kg.one_hop(["Nobody"]) == []
    assert tuples(kg.one_hop(["ActB", "Nobody"], direction="in")) == edges(2, 5, 7)
    assert tuples(kg.one_hop(["ActB"], limit=2)) == edges(2, 5)
    with pytest.raises(ValueError):
        kg.one_hop(["ActB"], direction="sideways")


def test_id_level_edges_and_neighbours(kg):
    actb = kg.node_id("ActB")
    assert kg.edges_ids(np.array([actb]), "both").tolist() == [2, 5, 7, 10]
    assert kg.edges_ids(np.array([actb]), "in", [kg.relation_id("starred")]).tolist() == [2, 5, 7]
    neighbours = kg.neighbors_ids(np.array([actb]))
    assert sorted(kg.node_names[i] for i in neighbours) == ["ActC", "Film1", "Film2", "Film3"]
    with pytest.raises(UnknownNodeError):
        kg.node_id("Nobody")
    with pytest.raises(UnknownRelationError):
        kg.relation_id("nothing")


# ---------------------------------------------------------------------- follow path
def walks(paths: list[Path]) -> list[tuple[tuple[str, ...], tuple[bool, ...]]]:
    return [(p.nodes, p.forward) for p in paths]


def test_follow_path_with_inverse_steps(kg):
    found = kg.follow_path(["Dir1"], "directed_by_inv -> starred")
    assert walks(found) == [
        (("Dir1", "Film1", "ActA"), (False, True)),
        (("Dir1", "Film1", "ActB"), (False, True)),
        (("Dir1", "Film2", "ActB"), (False, True)),
    ]
    assert found[0].relations == ("directed_by", "starred")
    assert found[0].triples() == [Triple("Film1", "directed_by", "Dir1"),
                                  Triple("Film1", "starred", "ActA")]
    assert found[0].verbalize() == "Dir1 <- directed_by <- Film1 -> starred -> ActA"


def test_follow_path_keeps_only_complete_walks(kg):
    # ActB has no born_in edge, so only the walk through ActA completes
    assert walks(kg.follow_path(["Dir1"], "~directed_by -> starred -> born_in -> located_in")) == [
        (("Dir1", "Film1", "ActA", "CityX", "CountryY"), (False, True, True, True))]
    assert kg.follow_path(["Dir2"], "~directed_by -> starred -> located_in") == []


def test_follow_path_several_sources_and_step_objects(kg):
    found = kg.follow_path(["Film2", "Film1", "Nobody"],
                           [PathStep("directed_by"), PathStep("born_in", "out")])
    assert walks(found) == [(("Film1", "Dir1", "CityX"), (True, True)),
                            (("Film2", "Dir1", "CityX"), (True, True))]


def test_follow_path_both_steps(kg):
    assert walks(kg.follow_path(["ActB"], [PathStep("starred", "both")])) == [
        (("ActB", "Film1"), (False,)), (("ActB", "Film2"), (False,)), (("ActB", "Film3"), (False,))]
    assert walks(kg.follow_path(["ActA"], "starred -> directed_by", default_direction="both")) == [
        (("ActA", "Film1", "Dir1"), (False, True))]
    # friend_of both ways from ActC reaches ActB backwards; from ActB forwards
    assert walks(kg.follow_path(["ActB", "ActC"], [PathStep("friend_of", "both")])) == [
        (("ActB", "ActC"), (True,)), (("ActC", "ActB"), (False,))]


def test_follow_path_fan_out_and_max_paths(kg):
    # fan_out=1 keeps the lowest edge id per walk and step: Film1 (id 0) before Film2,
    # then ActA (edge 1) before ActB (edge 2)
    assert walks(kg.follow_path(["Dir1"], "directed_by_inv -> starred", fan_out=1)) == [
        (("Dir1", "Film1", "ActA"), (False, True))]
    assert walks(kg.follow_path(["Dir1"], "directed_by_inv -> starred", fan_out=2)) == [
        (("Dir1", "Film1", "ActA"), (False, True)),
        (("Dir1", "Film1", "ActB"), (False, True)),
        (("Dir1", "Film2", "ActB"), (False, True)),
    ]
    assert walks(kg.follow_path(["Dir1"], "directed_by_inv -> starred", max_paths=2)) == [
        (("Dir1", "Film1", "ActA"), (False, True)),
        (("Dir1", "Film1", "ActB"), (False, True)),
    ]
    # fan_out counts both directions of a "both" step together
    found = kg.follow_path(["ActB"], [PathStep("starred", "both")], fan_out=2)
    assert [p.target for p in found] == ["Film1", "Film2"]


def test_follow_path_unknown_relation_or_bad_path(kg):
    assert kg.follow_path(["Dir1"], "directed_by_inv -> no_such_relation") == []
    assert kg.follow_path(["Nobody"], "starred") == []
    with pytest.raises(ValueError):
        kg.follow_path(["Dir1"], "directed_by ->  -> starred")


def test_parse_relation_path_markers():
    assert parse_relation_path("a -> ~b -> ^c -> d_inverse -> e_reverse, f") == [
        PathStep("a"), PathStep("b", "in"), PathStep("c", "in"), PathStep("d", "in"),
        PathStep("e", "in"), PathStep("f")]
    assert parse_relation_path(["_inv"]) == [PathStep("_inv")]  # a bare marker is a name
    assert parse_relation_path("r", default_direction="both") == [PathStep("r", "both")]
    with pytest.raises(ValueError):
        parse_relation_path([])
    with pytest.raises(ValueError):
        PathStep("r", "up")  # type: ignore[arg-type]


# ---------------------------------------------------------------------- shortest paths
def test_shortest_path_undirected_and_directed(kg):
    found = kg.shortest_paths(["ActA"], ["CountryY"])
    assert walks(found) == [(("ActA", "CityX", "CountryY"), (True, True))]
    assert found[0].relations == ("born_in", "located_in")
    assert walks(kg.shortest_paths(["ActA"], ["CountryY"], directed=True)) == walks(found)
    assert walks(kg.shortest_paths(["Film3"], ["CityZ"], directed=True)) == [
        (("Film3", "ActC", "CityZ"), (True, True))]


def test_shortest_path_ties_break_on_lowest_edge_id(kg):
    # ActA reaches Dir1 in two hops via Film1 (edge 0 into Dir1) or via CityX (edge 3): edge 0 wins
    assert walks(kg.shortest_paths(["ActA"], ["Dir1"])) == [
        (("ActA", "Film1", "Dir1"), (False, True))]
    # following stored directions only, Dir1 is unreachable from ActA
    assert kg.shortest_paths(["ActA"], ["Dir1"], directed=True) == []


def test_shortest_path_max_hops(kg):
    assert kg.shortest_paths(["ActA"], ["Dir2"], max_hops=3) == []
    found = kg.shortest_paths(["ActA"], ["Dir2"], max_hops=4)
    assert walks(found) == [(("ActA", "Film1", "ActB", "Film3", "Dir2"),
                             (False, True, False, True))]
    assert kg.shortest_paths(["ActA"], ["CityX"], max_hops=0) == []


def test_shortest_paths_between_node_sets(kg):
    # Dir2 is a source and a target: skipped. Results ordered by length, then target id.
    found = kg.shortest_paths(["Dir1", "Dir2"], ["CountryY", "ActC", "Dir2", "Nobody"])
    assert walks(found) == [(("Dir2", "Film3", "ActC"), (False, True)),
                            (("Dir1", "CityX", "CountryY"), (True, True))]
    assert walks(kg.shortest_paths(["Dir1", "Dir2"], ["CountryY", "ActC"], max_paths=1)) == [
        (("Dir2", "Film3", "ActC"), (False, True))]
    assert walks(kg.shortest_paths(["Dir1"], ["CityX", "ActB"])) == [
        (("Dir1", "CityX"), (True,)), (("Dir1", "Film1", "ActB"), (False, True))]


def test_shortest_paths_sources_equal_targets(kg):
    assert kg.shortest_paths(["ActA", "ActB"], ["ActB", "ActA"]) == []
    assert kg.shortest_paths([], ["ActA"]) == [] and kg.shortest_paths(["ActA"], []) == []


def test_shortest_paths_repeated_calls_do_not_leak_state(kg):
    first = kg.shortest_paths(["ActA"], ["Dir2"], max_hops=4)
    kg.shortest_paths(["CountryY"], ["Film2"], max_hops=2)
    assert kg.shortest_paths(["ActA"], ["Dir2"], max_hops=4) == first


# ---------------------------------------------------------------------- k-hop subgraph
def test_k_hop_subgraph(kg):
    assert tuples(kg.k_hop_subgraph(["CityX"], hops=1)) == edges(3, 9, 12)
    assert tuples(kg.k_hop_subgraph(["CityX"], hops=2)) == edges(0, 1, 3, 4, 9, 12)
    assert tuples(kg.k_hop_subgraph(["Film1"], hops=2, direction="out")) == edges(0, 1, 2, 3, 9, 10)
    assert tuples(kg.k_hop_subgraph(["ActB"], hops=1, direction="in")) == edges(2, 5, 7)
    assert tuples(kg.k_hop_subgraph(["ActB"], hops=2, direction="in")) == edges(2, 5, 7)
    assert kg.k_hop_subgraph(["CityX"], hops=0) == []
    assert kg.k_hop_subgraph(["Nobody"]) == []


def test_k_hop_subgraph_max_edges_keeps_nearer_levels(kg):
    # level 1 around CityX is edges 3, 9, 12 (lowest ids first); the cap stops the BFS there
    assert tuples(kg.k_hop_subgraph(["CityX"], hops=2, max_edges=2)) == edges(3, 9)
    assert tuples(kg.k_hop_subgraph(["CityX"], hops=2, max_edges=4)) == edges(0, 3, 9, 12)


def test_k_hop_subgraph_ids_reports_nodes(kg):
    nodes, edge_ids = kg.k_hop_subgraph_ids(np.array([kg.node_id("CityX")]), hops=1)
    assert sorted(kg.node_names[i] for i in nodes) == ["ActA", "CityX", "CountryY", "Dir1"]
    assert edge_ids.tolist() == [3, 9, 12]


# ---------------------------------------------------------------------- degree, schema
def test_degree(kg):
    assert kg.degree(["ActB", "Film1", "CityX", "Nobody"]) == {"ActB": 4, "Film1": 3, "CityX": 3}
    assert kg.degree(["ActB", "CityX"], direction="in") == {"ActB": 3, "CityX": 2}
    assert kg.degree(["ActB", "CityX"], direction="out") == {"ActB": 1, "CityX": 1}


def test_relation_histogram_and_counts(kg):
    assert kg.relation_histogram() == [("starred", 5), ("directed_by", 3), ("born_in", 3),
                                       ("located_in", 1), ("friend_of", 1)]
    assert kg.relation_counts()["friend_of"] == 1
    assert kg.list_relations() == ["directed_by", "starred", "born_in", "located_in", "friend_of"]


def test_schema_summary(kg):
    assert kg.schema_summary().splitlines() == [
        "Knowledge graph: 11 entities, 13 edges, 5 relation types.",
        "Relations (edge count; example):",
        "- starred (5; e.g. Film1 -> ActA): film -> actor",
        "- directed_by (3; e.g. Film1 -> Dir1)",
        "- born_in (3; e.g. Dir1 -> CityX)",
        "- located_in (1; e.g. CityX -> CountryY)",
        "- friend_of (1; e.g. ActB -> ActC)",
    ]
    short = kg.schema_summary(max_relations=2).splitlines()
    assert short[2:] == ["- starred (5; e.g. Film1 -> ActA): film -> actor",
                         "- directed_by (3; e.g. Film1 -> Dir1)",
                         "... and 3 more relations"]


def test_names_and_lookups(kg):
    assert kg.has_node(" ActA ") and not kg.has_node("acta")
    assert list(kg.iter_node_names()) == kg.node_names
    assert kg.node_ids(["ActA", "Nobody", "Dir1"]).tolist() == [5, 1]
    with pytest.raises(UnknownNodeError):
        kg.node_ids(["Nobody"], missing="raise")
    assert len(kg) == 13 and "edges=13" in repr(kg)


def test_incident_ids_reads_both_directions_per_entry():
    kg = KnowledgeGraph.from_triples([("a", "r", "b"), ("c", "r", "a"), ("a", "s", "a")])
    a, b = kg.node_id("a"), kg.node_id("b")
    owner, edges, other, forward = kg.incident_ids(np.array([a, b, a]))
    got = sorted(zip(owner.tolist(), kg.edge_triples(edges), other.tolist(), forward.tolist()),
                 key=lambda x: (x[0], not x[3], x[1].tail))
    names = [(o, t.as_tuple(), kg.node_names[n], f) for o, t, n, f in got]
    for o in (0, 2):  # a repeated node is read once per entry
        assert [x for x in names if x[0] == o] == [
            (o, ("a", "s", "a"), "a", True), (o, ("a", "r", "b"), "b", True),
            (o, ("c", "r", "a"), "c", False)]  # the self-loop once
    assert [x for x in names if x[0] == 1] == [(1, ("a", "r", "b"), "a", False)]
    both = kg.incident_ids(np.array([a]), self_loops_once=False)
    assert len(both[0]) == 4 and sorted(both[3].tolist()) == [False, False, True, True]


@pytest.mark.parametrize("loops_once", [True, False])
def test_incident_ids_compiled_and_numpy_agree(monkeypatch, loops_once):
    """With numba, :meth:`incident_ids_and_relations` is one compiled pass
    (:mod:`kgrag.graph._kernels`, in-edge heads and relations read in in-edge order); without,
    numpy. Same five arrays in the same order: repeated and unsorted nodes, isolated nodes,
    self-loops, parallel edges, an empty node list."""
    from kgrag.graph import traversal

    if traversal.compiled_kernels() is None:
        pytest.skip("needs numba")
    rng = np.random.default_rng(4)
    heads, tails = rng.integers(0, 60, 700), rng.integers(0, 60, 700)
    tails[:40] = heads[:40]  # self-loops
    kg = KnowledgeGraph.from_arrays(heads, rng.integers(0, 5, 700), tails,
                                    [f"n{i}" for i in range(80)], [f"r{i}" for i in range(5)])
    batches = [np.array([], np.int64), np.array([3]), rng.integers(0, 80, 500),
               np.arange(80)[::-1]]
    compiled = [kg.incident_ids_and_relations(b, self_loops_once=loops_once) for b in batches]
    for nodes, got in zip(batches, compiled):
        # the relation ids (read in order from the in-edge keys) are those of the edge ids
        assert got[4].tolist() == kg.rels[got[1]].tolist()
        assert [a.tolist() for a in kg.incident_ids(nodes, self_loops_once=loops_once)] == [
            a.tolist() for a in got[:4]]
    monkeypatch.setattr(traversal, "compiled_kernels", lambda: None)
    for nodes, got in zip(batches, compiled):
        want = kg.incident_ids_and_relations(nodes, self_loops_once=loops_once)
        assert [a.tolist() for a in got] == [a.tolist() for a in want]
        assert [a.dtype for a in got] == [a.dtype for a in want]
    monkeypatch.undo()
    with pytest.raises(IndexError, match="node ids"):
        kg.incident_ids(np.array([80]))
