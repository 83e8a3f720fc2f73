"""SimGRAG's reusing matches through quotient patterns (kgrag.methods.simgrag.quotient / topk):
hand-checked walk-backs, self-loops and parallel pattern edges, and the quotient bookkeeping.
The property test against brute force is in tests/test_simgrag_search.py."""

from __future__ import annotations

import pytest
from simgrag_oracle import oracle_top_k

from kgrag import KnowledgeGraph
from kgrag.methods.simgrag.quotient import edge_quotients, node_quotients, reuse_quotients
from kgrag.methods.simgrag.search import CandidateSet, Layout, PatternCosts, SubgraphSearch
from kgrag.methods.simgrag.topk import top_k_reusing, top_k_subgraphs


def cands(kg, table, index):
    return None if table is None else CandidateSet.from_mapping(
        {index(name): d for name, d in table.items()})


def run(kg, edges, node_tables, rel_tables, k, *, method="quotient", **options):
    node_c = [cands(kg, t, kg.node_id) for t in node_tables]
    rel_c = [cands(kg, t, kg.relation_id) for t in rel_tables]
    return top_k_reusing(kg, len(node_tables), edges, node_c, rel_c, k, method=method, **options)


def names(kg, match):
    return [kg.node_names[i] for i in match.nodes]


FAMILY = KnowledgeGraph.from_triples([
    ("Alice", "parent_of", "Bob"), ("Carol", "parent_of", "Bob"),
    ("Alice", "parent_of", "Dan"), ("Erin", "friend_of", "Dan"),
])
PARENT = {"parent_of": 0.1, "friend_of": 0.5}


def test_walk_back_reuses_the_same_edge():
    # (Alice, parent of, ?child), (?other, parent of, ?child): the walk back to Alice herself
    # over the same edge is the best reusing match; the other parent the best injective one
    edges = [(0, 1), (2, 1)]
    tables = ([{"Alice": 0.0}, None, None], [PARENT, PARENT])
    found = run(FAMILY, edges, *tables, k=2)
    assert found.complete
    assert [names(FAMILY, m) for m in found.matches] == [["Alice", "Bob", "Alice"],
                                                         ["Alice", "Dan", "Alice"]]
    assert all(m.edges[0] == m.edges[1] for m in found.matches)
    assert [m.gsd for m in found.matches] == pytest.approx([0.2, 0.2])
    prefer = top_k_subgraphs(FAMILY, 3, edges,
                             [cands(FAMILY, t, FAMILY.node_id) for t in tables[0]],
                             [cands(FAMILY, t, FAMILY.relation_id) for t in tables[1]], 2,
                             injective="prefer")
    assert [names(FAMILY, m) for m in prefer.matches] == [["Alice", "Bob", "Carol"],
                                                          ["Alice", "Bob", "Alice"]]


def test_self_loop_quotients_are_searched_only_on_graphs_with_self_loops():
    # (Alice, knows, ?x): reusing means ?x = Alice, which needs a graph self-loop
    loops = KnowledgeGraph.from_triples([("Alice", "knows", "Alice"), ("Alice", "knows", "Bob"),
                                         ("Bob", "knows", "Bob")])
    tables = ([{"Alice": 0.0, "Bob": 0.3}, None], [{"knows": 0.1}])
    found = run(loops, [(0, 1)], *tables, k=3)
    assert [(names(loops, m), m.gsd) for m in found.matches] == [
        (["Alice", "Alice"], pytest.approx(0.1)), (["Bob", "Bob"], pytest.approx(0.4))]
    assert found.stats["searches"] == 1
    no_loops = KnowledgeGraph.from_triples([("Alice", "knows", "Bob")])
    none = run(no_loops, [(0, 1)], [{"Alice": 0.0}, None], [{"knows": 0.1}], k=3)
    assert none.matches == [] and none.complete
    assert none.stats["searches"] == 0 and none.stats["quotients"] == 0


def test_self_loop_refinement_keeps_only_nodes_with_a_loop():
    kg = KnowledgeGraph.from_triples([("a", "r", "a"), ("a", "r", "b"), ("b", "r", "c"),
                                      ("c", "s", "c")])
    node_c = [CandidateSet.from_mapping({kg.node_id(x): 0.0 for x in ("a", "b", "c")})]
    rel_c = [CandidateSet.from_mapping({kg.relation_id("r"): 0.0})]
    search = SubgraphSearch(kg, 1, [(0, 0)], node_c, rel_c, k=5, injective=False)
    assert search.refined >= 1
    assert search.root_candidates.ids.tolist() == [kg.node_id("a")]  # c's loop is an "s"
    assert [m.nodes for m in search.run().matches] == [(kg.node_id("a"),)]


def test_parallel_pattern_edges_reuse_an_edge_without_reusing_a_node():
    # two relations asked between the same two nodes, one graph edge between them: the only
    # reusing match maps both pattern edges onto it, with two distinct graph nodes
    kg = KnowledgeGraph.from_triples([("Paprika", "directed_by", "Satoshi Kon"),
                                      ("Paprika", "written_by", "Seishi Minakami")])
    tables = ([{"Paprika": 0.0}, None],
              [{"directed_by": 0.1, "written_by": 0.4}, {"directed_by": 0.3, "written_by": 0.2}])
    found = run(kg, [(0, 1), (0, 1)], *tables, k=3)
    assert [(names(kg, m), m.gsd) for m in found.matches] == [
        (["Paprika", "Satoshi Kon"], pytest.approx(0.4)),
        (["Paprika", "Seishi Minakami"], pytest.approx(0.6))]
    assert all(len(set(m.edges)) == 1 and len(set(m.nodes)) == 2 for m in found.matches)
    assert found.stats["searches"] == 1  # the node-pair quotient needs a loop; the graph has none


def test_quotient_keys_and_gsd_are_bit_identical_to_the_filtering_search():
    # distances whose sums round differently in another order: the quotient reports the
    # original pattern's GSD, summed in its order, so the keys match the filter's exactly
    kg = KnowledgeGraph.from_triples([(f"n{i}", "r", f"n{(i * 7 + 3) % 11}") for i in range(11)]
                                     + [(f"n{i}", "s", f"n{(i * 5 + 1) % 11}") for i in range(11)])
    odd = [0.1, 0.2, 0.3, 0.7, 1e-17, 0.30000000000000004]
    node_t = [{f"n{i}": odd[i % 6] for i in range(11)},
              {f"n{i}": odd[(i + 1) % 6] for i in range(9)},
              {f"n{i}": odd[(i + 2) % 6] for i in range(2, 11)}]
    rel_t = [{"r": 0.1, "s": 0.2}, {"r": 0.3, "s": 0.1}]
    quotient = run(kg, [(0, 1), (1, 2)], node_t, rel_t, k=5)
    filtered = run(kg, [(0, 1), (1, 2)], node_t, rel_t, k=5, method="filter")
    keys = [(m.gsd, m.edges, m.nodes) for m in quotient.matches]
    assert keys == [(m.gsd, m.edges, m.nodes) for m in filtered.matches]
    assert keys == oracle_top_k(kg, 3, [(0, 1), (1, 2)],
                                [{kg.node_id(n): d for n, d in t.items()} for t in node_t],
                                [{kg.relation_id(n): d for n, d in t.items()} for t in rel_t],
                                5, injective=False, require_reuse=True)


def test_quotients_prune_where_filtering_cannot():
    # a hub with many cheap injective completions and one reusing walk-back: the filtering
    # search must expand them all; the quotient search finds the walk-back directly
    triples = [("hub", "r", f"leaf{i}") for i in range(300)]
    kg = KnowledgeGraph.from_triples(triples)
    tables = ([{"hub": 0.0}, None, None], [{"r": 0.1}, {"r": 0.1}])
    quotient = run(kg, [(0, 1), (0, 2)], *tables, k=1)
    filtered = run(kg, [(0, 1), (0, 2)], *tables, k=1, method="filter")
    assert [m.nodes for m in quotient.matches] == [m.nodes for m in filtered.matches]
    assert quotient.stats["partials"] < filtered.stats["partials"] / 10


def test_unknown_reuse_method_is_rejected():
    with pytest.raises(ValueError, match="method"):
        run(FAMILY, [(0, 1)], [{"Alice": 0.0}, None], [PARENT], k=1, method="fast")


def test_node_and_edge_quotients():
    path = [(0, 1), (1, 2)]
    assert [(q.merged, q.edges, q.node_of) for q in node_quotients(3, path)] == [
        (("nodes", 0, 1), ((0, 0), (0, 1)), (0, 0, 1)),
        (("nodes", 0, 2), ((0, 1), (1, 0)), (0, 1, 0)),
        (("nodes", 1, 2), ((0, 1), (1, 1)), (0, 1, 1)),
    ]
    assert edge_quotients(3, path) == []
    multi = [(0, 1), (2, 1), (1, 0)]
    (q,) = edge_quotients(3, multi)
    assert q.merged == ("edges", 0, 2) and q.edges == ((0, 1), (2, 1))
    assert q.edge_of == (0, 1, 0) and q.edge_groups() == [[0, 2], [1]]
    assert q.node_groups() == [[0], [1], [2]] and not q.has_self_loop
    assert len(reuse_quotients(3, multi)) == 3 + 1


def test_layout_must_map_onto_the_searched_pattern():
    kg = FAMILY
    node_c = [CandidateSet.from_mapping({kg.node_id("Alice"): 0.0}), None]
    rel_c = [None]
    costs = PatternCosts.of(kg, node_c + [None], rel_c)
    with pytest.raises(ValueError, match="layout"):
        SubgraphSearch(kg, 2, [(0, 1)], node_c, rel_c, layout=Layout(costs, (0, 1, 2), (0,)))


def test_named_domains_are_read_once_side_by_side_before_the_prefer_halves():
    """``SharedDomains.read_edges`` reads each named domain's edges (those within the budget)
    once, on the pool's threads, as the searches would: the same edges and relations; a
    wildcard and a domain over the budget are left to the searches."""
    from kgrag.methods.simgrag.search import SharedDomains

    kg = FAMILY
    node_c = [cands(kg, {"Alice": 0.0, "Carol": 0.2}, kg.node_id), None,
              cands(kg, {"Dan": 0.1, "Erin": 0.3}, kg.node_id)]
    shared = SharedDomains(kg)
    shared.read_edges(node_c)
    for c in (node_c[0], node_c[2]):
        domain = shared.node_costs(c)
        assert domain.edges is not None
        own, e, other, rel = domain.edges
        want = kg.incident_ids_and_relations(domain.ids)
        assert [a.tolist() for a in (own, e, other, rel)] == [
            want[0].tolist(), want[1].tolist(), want[2].tolist(), want[4].tolist()]
    over = SharedDomains(kg)
    over.read_edges(node_c, budget=2)  # Alice and Carol have 3 edges in all
    assert over.node_costs(node_c[0]).edges is None
    # the prefer ranking is the same whether or not the edges were read first
    rel_c = [cands(kg, PARENT, kg.relation_id)] * 2
    edges = [(0, 1), (2, 1)]
    fresh = top_k_subgraphs(kg, 3, edges, node_c, rel_c, 3, injective="prefer")
    read = top_k_subgraphs(kg, 3, edges, node_c, rel_c, 3, injective="prefer", shared=shared)
    assert [(m.nodes, m.edges, m.gsd) for m in fresh.matches] == [
        (m.nodes, m.edges, m.gsd) for m in read.matches]
    assert fresh.matches
