"""SimGRAG's top-k subgraph search: the hand-checked cases of notes/simgrag.md §4 and a property
test against a brute-force enumerator (tests/simgrag_oracle.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simgrag_oracle import oracle_top_k

from kgrag import KnowledgeGraph
from kgrag.methods.simgrag.pattern import Pattern, PatternError
from kgrag.methods.simgrag.search import (
    CandidateSet,
    enumerate_matches,
    plan_steps,
)
from kgrag.methods.simgrag.topk import enumerate_reusing, top_k_reusing, top_k_subgraphs

K1 = [
    ("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
    ("Tokyo Godfathers", "written_by", "Keiko Nobumoto"),
    ("Tokyo Godfathers", "release_year", "2003"),
    ("Paprika", "directed_by", "Satoshi Kon"),
]
TG = {"Tokyo Godfathers": 0.0, "Paprika": 0.9}
DIRECTOR = {"directed_by": 0.2, "written_by": 0.6, "release_year": 1.0}


def search(kg, triples, node_tables, rel_tables, k, **options):
    """Run the search from name-level candidate tables; returns [(gsd, triples, node_map)]."""
    pattern = Pattern.from_triples(triples)
    node_c = [None if node_tables.get(n) is None else CandidateSet.from_mapping(
        {kg.node_id(x): d for x, d in node_tables[n].items()}) for n in pattern.nodes]
    rel_c = [None if rel_tables.get(r) is None else CandidateSet.from_mapping(
        {kg.relation_id(x): d for x, d in rel_tables[r].items()}) for r in pattern.relations]
    result = top_k_subgraphs(kg, len(pattern.nodes), pattern.edges, node_c, rel_c, k, **options)
    out = []
    for m in result.matches:
        triples_ = [t.as_tuple() for t in kg.edge_triples(m.edges)]
        out.append((m.gsd, triples_, {p: kg.node_names[i] for p, i in zip(pattern.nodes, m.nodes)}))
    return out, result


def test_one_hop_ranking_mirrors_example_2():
    kg = KnowledgeGraph.from_triples(K1)
    found, _ = search(kg, [("Tokyo Godfathers", "director", "UNKNOWN director 1")],
                      {"Tokyo Godfathers": TG}, {"director": DIRECTOR}, k=4)
    assert [g for g, _, _ in found] == pytest.approx([0.2, 0.6, 1.0, 1.1])
    assert [t for _, t, _ in found] == [
        [("Tokyo Godfathers", "directed_by", "Satoshi Kon")],
        [("Tokyo Godfathers", "written_by", "Keiko Nobumoto")],
        [("Tokyo Godfathers", "release_year", "2003")],
        [("Paprika", "directed_by", "Satoshi Kon")],
    ]
    top3, _ = search(kg, [("Tokyo Godfathers", "director", "UNKNOWN director 1")],
                     {"Tokyo Godfathers": TG}, {"director": DIRECTOR}, k=3)
    assert [g for g, _, _ in top3] == pytest.approx([0.2, 0.6, 1.0])


def test_matching_ignores_edge_direction():
    kg = KnowledgeGraph.from_triples(K1)
    forward, _ = search(kg, [("Tokyo Godfathers", "director", "UNKNOWN director 1")],
                        {"Tokyo Godfathers": TG}, {"director": DIRECTOR}, k=4)
    backward, _ = search(kg, [("UNKNOWN director 1", "director", "Tokyo Godfathers")],
                         {"Tokyo Godfathers": TG}, {"director": DIRECTOR}, k=4)
    assert [(g, t) for g, t, _ in backward] == [(g, t) for g, t, _ in forward]


SHARED_DIRECTOR = [("UNKNOWN director 1", "director of", "Tokyo Godfathers"),
                   ("UNKNOWN director 1", "director of", "UNKNOWN film 1")]


def test_injective_two_hop():
    kg = KnowledgeGraph.from_triples(K1)
    found, _ = search(kg, SHARED_DIRECTOR, {"Tokyo Godfathers": TG}, {"director of": DIRECTOR}, k=3)
    assert [g for g, _, _ in found] == pytest.approx([0.4, 1.3])
    assert found[0][2] == {"UNKNOWN director 1": "Satoshi Kon",
                           "Tokyo Godfathers": "Tokyo Godfathers",
                           "UNKNOWN film 1": "Paprika"}
    assert sorted(found[0][1]) == [("Paprika", "directed_by", "Satoshi Kon"),
                                   ("Tokyo Godfathers", "directed_by", "Satoshi Kon")]
    assert found[1][2]["Tokyo Godfathers"] == "Paprika"
    assert found[1][2]["UNKNOWN film 1"] == "Tokyo Godfathers"


def test_non_injective_switch_allows_reuse():
    kg = KnowledgeGraph.from_triples(K1)
    found, _ = search(kg, SHARED_DIRECTOR, {"Tokyo Godfathers": TG}, {"director of": DIRECTOR},
                      k=6, injective=False)
    assert [g for g, _, _ in found] == pytest.approx([0.4, 0.4, 1.2, 1.3, 1.3, 2.0])
    assert {found[0][2]["UNKNOWN film 1"], found[1][2]["UNKNOWN film 1"]} == {
        "Paprika", "Tokyo Godfathers"}


def test_prefer_injective_ranks_best_reusing_match_second():
    kg = KnowledgeGraph.from_triples(K1)
    found, _ = search(kg, SHARED_DIRECTOR, {"Tokyo Godfathers": TG}, {"director of": DIRECTOR},
                      k=3, injective="prefer")
    assert [g for g, _, _ in found] == pytest.approx([0.4, 0.4, 1.2])
    assert found[0][2]["UNKNOWN film 1"] == "Paprika"  # injective first
    assert found[1][2]["UNKNOWN film 1"] == "Tokyo Godfathers"  # then the best reusing one


def test_distinct_subgraphs_drops_role_swaps():
    kg = KnowledgeGraph.from_triples(K1)
    found, _ = search(kg, SHARED_DIRECTOR, {"Tokyo Godfathers": TG}, {"director of": DIRECTOR},
                      k=3, distinct_subgraphs=True)
    assert [g for g, _, _ in found] == pytest.approx([0.4])


def test_unknown_relation_matches_at_zero():
    kg = KnowledgeGraph.from_triples(K1)
    found, _ = search(kg, [("Tokyo Godfathers", "UNKNOWN relation 1", "2003")],
                      {"Tokyo Godfathers": TG, "2003": {"2003": 0.0}}, {}, k=3)
    assert found == [(0.0, [("Tokyo Godfathers", "release_year", "2003")],
                      {"Tokyo Godfathers": "Tokyo Godfathers", "2003": "2003"})]


K2 = [
    ("Georgian (language)", "spoken_in", "Georgia (country)"),
    ("Alan B. Miller Hall", "architecturalStyle", "Georgian architecture"),
    ("Alan B. Miller Hall", "location", "Virginia"),
    ("Monticello", "architecturalStyle", "Neoclassical architecture"),
    ("Monticello", "location", "Virginia"),
]
BUILDING = [("UNKNOWN building 1", "architecture style", "Georgian"),
            ("UNKNOWN building 1", "located in", "Virginia")]
K2_RELS = {"architecture style": {"architecturalStyle": 0.1, "spoken_in": 1.2},
           "located in": {"location": 0.15, "spoken_in": 0.9}}
GEORGIAN = {"Georgian (language)": 0.30, "Georgia (country)": 0.45, "Georgian architecture": 0.50}


def test_non_nearest_entity_wins():
    kg = KnowledgeGraph.from_triples(K2)
    found, result = search(kg, BUILDING, {"Georgian": GEORGIAN, "Virginia": {"Virginia": 0.0}},
                           K2_RELS, k=3)
    assert len(found) == 1
    gsd, triples, mapping = found[0]
    assert gsd == pytest.approx(0.75)
    assert sorted(triples) == [("Alan B. Miller Hall", "architecturalStyle",
                                "Georgian architecture"),
                               ("Alan B. Miller Hall", "location", "Virginia")]
    assert result.stats["root_candidates"] == 1  # rooted at Virginia, the fewest candidates
    truncated = {k: v for k, v in GEORGIAN.items() if k != "Georgian architecture"}
    none, _ = search(kg, BUILDING, {"Georgian": truncated, "Virginia": {"Virginia": 0.0}},
                     K2_RELS, k=3)
    assert none == []


def two_triangles():
    return KnowledgeGraph.from_triples([
        ("a1", "r1", "b1"), ("b1", "r2", "c1"), ("c1", "r3", "a1"),
        ("a2", "r1", "b2"), ("b2", "r2", "c2"), ("c2", "r3", "a2"),
        ("b3", "r9", "c3"),
    ])


def test_cycle_bound_is_admissible():
    kg = two_triangles()
    exact = {"r1": {"r1": 0.0}, "r2": {"r2": 0.0}, "r3": {"r3": 0.0}}
    nodes = {"A": {"a1": 0.5, "a2": 0.6}, "B": {"b1": 0.25, "b2": 0.1, "b3": 0.05},
             "C": {"c1": 0.25, "c2": 0.2, "c3": 0.05}}
    found, _ = search(kg, [("A", "r1", "B"), ("B", "r2", "C"), ("C", "r3", "A")], nodes, exact, k=1)
    assert len(found) == 1
    assert found[0][0] == pytest.approx(0.9)
    assert found[0][2] == {"A": "a2", "B": "b2", "C": "c2"}


def test_ties_are_broken_by_edge_id_deterministically():
    kg = KnowledgeGraph.from_triples([
        ("Hamlet", "directed_by", "Laurence Olivier"), ("Hamlet", "directed_by", "Kenneth Branagh"),
        ("Hamlet", "directed_by", "Michael Almereyda"),
        ("Hamlet", "written_by", "William Shakespeare"),
    ])
    tables = ({"Hamlet": {"Hamlet": 0.0}}, {"director": {"directed_by": 0.2, "written_by": 0.6}})
    pattern = [("Hamlet", "director", "UNKNOWN director 1")]
    top3, _ = search(kg, pattern, *tables, k=3)
    assert [g for g, _, _ in top3] == pytest.approx([0.2, 0.2, 0.2])
    assert {m["UNKNOWN director 1"] for _, _, m in top3} == {
        "Laurence Olivier", "Kenneth Branagh", "Michael Almereyda"}
    top1, result = search(kg, pattern, *tables, k=1)
    # the tie key is (GSD, graph edge ids, node ids); edges are sorted by (head, relation, tail)
    # ids,
    # and "Laurence Olivier" was interned first
    first_edge = min(kg.edges_ids(np.array([kg.node_id("Hamlet")]), "out",
                                  [kg.relation_id("directed_by")]).tolist())
    assert result.matches[0].edges == (first_edge,)
    assert top1[0][2]["UNKNOWN director 1"] == "Laurence Olivier"


def test_pattern_without_anything_known_is_rejected():
    kg = KnowledgeGraph.from_triples(K1)
    with pytest.raises(PatternError):
        search(kg, [("UNKNOWN a 1", "UNKNOWN relation 1", "UNKNOWN b 1")], {}, {}, k=1)


def test_all_unknown_nodes_anchor_on_the_relation():
    kg = KnowledgeGraph.from_triples(K1)
    found, result = search(kg, [("UNKNOWN film 1", "writer", "UNKNOWN person 1")], {},
                           {"writer": {"written_by": 0.1}}, k=5)
    assert [t for _, t, _ in found] == [[("Tokyo Godfathers", "written_by", "Keiko Nobumoto")]] * 2
    assert result.stats["root_candidates"] == 2


def test_budget_stops_with_incomplete_flag():
    kg = KnowledgeGraph.from_triples(K1)
    _, result = search(kg, SHARED_DIRECTOR, {"Tokyo Godfathers": TG}, {"director of": DIRECTOR},
                       k=3, max_partials=0)
    assert result.complete is False


def test_refinement_gives_a_wildcard_centre_a_small_domain():
    kg = KnowledgeGraph.from_triples(K1 + [("Millennium Actress", "directed_by", "Satoshi Kon"),
                                           ("Millennium Actress", "written_by", "Sadayuki Murai")])
    found, result = search(
        kg, [("UNKNOWN film 1", "director", "Satoshi Kon"),
             ("UNKNOWN film 1", "writer", "Keiko Nobumoto")],
        {"Satoshi Kon": {"Satoshi Kon": 0.0}, "Keiko Nobumoto": {"Keiko Nobumoto": 0.0}},
        {"director": {"directed_by": 0.1}, "writer": {"written_by": 0.1}}, k=3)
    assert [m["UNKNOWN film 1"] for _, _, m in found] == ["Tokyo Godfathers"]
    assert result.stats["refine_filters"] > 0
    assert result.stats["root_candidates"] == 1


def test_a_wildcard_leaf_gets_no_derived_domain():
    """A one-edge pattern's wildcard end could filter nothing: no neighbourhood filter is run
    for it (reading every edge of the named end's candidates was a third of the matching time
    at 10M edges), and the matches are the same as with every filter."""
    from kgrag.methods.simgrag.search import SubgraphSearch

    kg = KnowledgeGraph.from_triples(K1)
    pattern = Pattern.from_triples([("Tokyo Godfathers", "director", "UNKNOWN person 1")])
    node_c = [CandidateSet.from_mapping({kg.node_id(x): d for x, d in TG.items()}), None]
    rel_c = [CandidateSet.from_mapping({kg.relation_id(x): d for x, d in DIRECTOR.items()})]
    run = SubgraphSearch(kg, 2, pattern.edges, node_c, rel_c, k=5)
    assert run.refined == 0 and run.node_cost[1] is None
    got = run.run().matches
    assert [(m.gsd, m.nodes) for m in got] == [
        (m.gsd, m.nodes) for m in SubgraphSearch(kg, 2, pattern.edges, node_c, rel_c, k=5,
                                                 refine=False).run().matches]
    assert [kg.node_names[m.nodes[1]] for m in got] == [
        "Satoshi Kon", "Keiko Nobumoto", "2003", "Satoshi Kon"]


def test_step_plan_counts_each_node_once_on_cycles():
    steps = plan_steps(3, [(0, 1), (1, 2), (2, 0)], root=0)
    assert [s.new for s in steps] == [True, True, False]
    assert sorted(s.edge for s in steps) == [0, 1, 2]


# ---------------------------------------------------------------- property test vs brute force
SHAPES = {"edge": [(0, 1)], "path2": [(0, 1), (1, 2)], "path3": [(0, 1), (1, 2), (2, 3)],
          "star3": [(0, 1), (0, 2), (3, 0)], "triangle": [(0, 1), (1, 2), (2, 0)],
          "multi": [(0, 1), (1, 0), (1, 2)], "square": [(0, 1), (1, 2), (2, 3), (3, 0)]}
# shapes whose reusing matches need every kind of quotient: walk-back paths, parallel and
# triple-parallel edges (edge reuse without node reuse), a self-loop, a star with a parallel arm
REUSE_SHAPES = {**SHAPES, "double": [(0, 1), (0, 1)], "triple": [(0, 1), (1, 0), (0, 1)],
                "loop": [(0, 0), (0, 1)], "path4": [(0, 1), (1, 2), (2, 3), (3, 4)],
                "star_multi": [(0, 1), (0, 2), (1, 0)]}


@st.composite
def search_case(draw, shapes=SHAPES, modes=(True, False, "prefer")):
    n = draw(st.integers(3, 9))
    n_rel = draw(st.integers(1, 3))
    n_edges = draw(st.integers(1, 16))
    triples = [(draw(st.integers(0, n - 1)), draw(st.integers(0, n_rel - 1)),
                draw(st.integers(0, n - 1))) for _ in range(n_edges)]
    kg = KnowledgeGraph.from_arrays(
        np.array([h for h, _, _ in triples]), np.array([r for _, r, _ in triples]),
        np.array([t for _, _, t in triples]), [f"n{i}" for i in range(n)],
        [f"r{i}" for i in range(n_rel)])
    edges = shapes[draw(st.sampled_from(sorted(shapes)))]
    n_pat = 1 + max(max(e) for e in edges)
    dist = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 1.0, 1.3])  # coarse values force ties

    def table(size):
        if draw(st.booleans()) and draw(st.booleans()):
            return None  # wildcard (UNKNOWN)
        ids = draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=size, unique=True))
        return {i: draw(dist) for i in ids}

    node_tables = [table(n) for _ in range(n_pat)]
    rel_tables = [table(n_rel) for _ in edges]
    if all(t is None for t in node_tables) and all(t is None for t in rel_tables):
        node_tables[0] = {0: 0.0}
    k = draw(st.integers(1, 5))
    injective = draw(st.sampled_from(list(modes)))
    distinct = draw(st.booleans())
    # a small refine_budget leaves some domains unreadable: no filtering, no look-ahead table
    # from them, or (reuse searches) a table from the source side only
    options = dict(refine=draw(st.booleans()), lookahead=draw(st.booleans()),
                   refine_budget=draw(st.sampled_from([1_000_000, 6, 0])))
    return kg, n_pat, edges, node_tables, rel_tables, k, injective, distinct, options


def as_sets(tables):
    return [None if t is None else CandidateSet.from_mapping(t) for t in tables]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(search_case())
def test_pruned_search_equals_brute_force(case):
    kg, n_pat, edges, node_tables, rel_tables, k, injective, distinct, options = case
    expected = oracle_top_k(kg, n_pat, edges, node_tables, rel_tables, k, injective=injective,
                            distinct_subgraphs=distinct)
    result = top_k_subgraphs(kg, n_pat, edges, as_sets(node_tables), as_sets(rel_tables), k,
                             injective=injective, distinct_subgraphs=distinct, **options)
    assert result.complete
    got = [(m.gsd, m.edges, m.nodes) for m in result.matches]
    assert got == expected
    for m in result.matches:
        parts = m.node_distances + m.edge_distances
        assert math.isclose(sum(parts), m.gsd, abs_tol=1e-12)
    if not distinct and injective != "prefer":
        every = enumerate_matches(kg, n_pat, edges, as_sets(node_tables), as_sets(rel_tables),
                                  injective=injective, refine=False)
        assert [(m.gsd, m.edges, m.nodes) for m in every.matches[:k]] == expected
        if not options["refine"]:  # like for like: B&B never extends more than Algorithm 1
            assert result.stats["partials"] <= every.stats["partials"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(search_case(shapes=REUSE_SHAPES, modes=("prefer",)))
def test_reusing_matches_equal_brute_force(case):
    """The quotient search (and the filtering one it replaced) return exactly the oracle's
    best reusing matches -- keys bit-identical, ties broken the same way -- and "prefer" on
    walk-backs, parallel edges and self-loops equals the oracle too."""
    kg, n_pat, edges, node_tables, rel_tables, k, _, distinct, options = case
    args = (kg, n_pat, edges, as_sets(node_tables), as_sets(rel_tables), k)
    options = dict(options, distinct_subgraphs=distinct)
    expected = oracle_top_k(kg, n_pat, edges, node_tables, rel_tables, k, injective=False,
                            distinct_subgraphs=distinct, require_reuse=True)
    # rest_max_gsd (what "prefer" asks for): the best, then only the rest up to that GSD
    rests = [-math.inf, math.inf] + sorted({g for g, _, _ in expected})[1:2]
    for method in ("quotient", "filter"):
        result = top_k_reusing(*args, method=method, **options)
        assert result.complete
        assert [(m.gsd, m.edges, m.nodes) for m in result.matches] == expected, method
        for rest in rests:
            cut = top_k_reusing(*args, method=method, rest_max_gsd=rest, **options)
            assert [(m.gsd, m.edges, m.nodes) for m in cut.matches] == (
                expected[:1] + [e for e in expected[1:] if e[0] <= rest + 1e-9]), (method, rest)
    if not distinct:  # the quotient enumeration the 10M-edge benchmark checks against
        every = enumerate_reusing(*args[:-1], refine=options["refine"])
        assert [(m.gsd, m.edges, m.nodes) for m in every] == oracle_top_k(
            kg, n_pat, edges, node_tables, rel_tables, 10**9, injective=False,
            require_reuse=True)
    prefer = top_k_subgraphs(*args, injective="prefer", **options)
    assert [(m.gsd, m.edges, m.nodes) for m in prefer.matches] == oracle_top_k(
        kg, n_pat, edges, node_tables, rel_tables, k, injective="prefer",
        distinct_subgraphs=distinct)


@pytest.mark.parametrize("n, high", [(10, 5), (5000, 3), (20000, 2_500_000), (70000, 1)])
def test_stable_argsort_is_numpys_stable_argsort(n, high):
    from kgrag.methods.simgrag.search import stable_argsort

    values = np.random.default_rng(n).integers(0, high + 1, n)
    assert stable_argsort(values).tolist() == np.argsort(values, kind="stable").tolist()


def test_zero_cost_domain_lookup_by_mask_equals_binary_search():
    """A domain whose costs are all 0 answers large queries through a membership mask; it must
    give what the binary search gives, also after restriction and for ids past the domain."""
    from kgrag.methods.simgrag.search import _NodeCosts

    rng = np.random.default_rng(7)
    ids = rng.choice(50_000, 3_000, replace=False)
    zero = _NodeCosts(ids, np.zeros(len(ids)))
    query = rng.integers(0, 60_000, 3 * _NodeCosts.MASK_QUERIES)
    query[:100] = ids[:100]
    expected = np.where(np.isin(query, ids), 0.0, np.inf)
    assert zero.zero and len(query) >= zero.MASK_QUERIES
    assert np.array_equal(zero(query), expected)
    assert np.array_equal(zero(query[:10]), expected[:10])  # the binary-search path
    keep = rng.random(len(ids)) < 0.5
    narrowed = zero.restrict(keep)
    assert narrowed.zero
    assert np.array_equal(narrowed(query), np.where(np.isin(query, zero.ids[keep]), 0.0, np.inf))
    costly = _NodeCosts(ids, np.full(len(ids), 0.5))
    assert not costly.zero
    assert np.array_equal(costly(query), np.where(np.isin(query, ids), 0.5, np.inf))


def test_costed_domain_lookup_by_mask_equals_binary_search():
    """Large queries into a domain with distinct costs go through the membership mask too and
    read each member's own cost: the same values as one binary search per id."""
    from kgrag.methods.simgrag.search import _NodeCosts

    rng = np.random.default_rng(11)
    ids = rng.choice(80_000, 5_000, replace=False)
    costs = rng.random(len(ids))
    domain = _NodeCosts(ids, costs)
    query = rng.integers(0, 90_000, 4 * _NodeCosts.MASK_QUERIES)
    query[:500] = ids[:500]
    cost_of = dict(zip(ids.tolist(), costs.tolist()))
    expected = np.asarray([cost_of.get(q, np.inf) for q in query.tolist()])
    assert np.array_equal(domain(query), expected)  # the mask path
    assert np.array_equal(domain(query[:100]), expected[:100])  # the binary-search path
    keep = rng.random(len(ids)) < 0.3
    narrowed = domain.restrict(keep)
    kept = dict(zip(domain.ids[keep].tolist(), domain.costs[keep].tolist()))
    assert np.array_equal(narrowed(query),
                          np.asarray([kept.get(q, np.inf) for q in query.tolist()]))


def test_adjacency_filter_reads_either_domain_with_the_same_result():
    """Refinement's filter (target nodes joined to the source domain through a candidate
    relation) is read from the domain with fewer incident edges; both ways agree with the
    definition, self-loops included."""
    from kgrag.methods.simgrag.search import SubgraphSearch, _NodeCosts

    rng = np.random.default_rng(3)
    n, m = 60, 150
    heads, tails = rng.integers(0, n, m), rng.integers(0, n, m)
    heads[:5] = tails[:5]  # a few self-loops
    kg = KnowledgeGraph.from_arrays(heads, rng.integers(0, 3, m), tails,
                                    [f"n{i}" for i in range(n)], ["r0", "r1", "r2"])
    search = SubgraphSearch(kg, 2, [(0, 1)], [CandidateSet.from_mapping({0: 0.0}), None], [None])
    rel_cost = np.array([0.1, np.inf, np.inf])
    ok_rel = np.isfinite(rel_cost[kg.rels])
    for small, large in [(8, 20), (20, 8)]:
        target = _NodeCosts(rng.choice(n, small, replace=False), np.zeros(small))
        source = _NodeCosts(rng.choice(n, large, replace=False), np.zeros(large))
        assert ((search._domain_reads(target) < search._domain_reads(source))
                == (small < large))  # both branches are taken
        expected = [bool(np.any(ok_rel & (((kg.heads == t) & np.isin(kg.tails, source.ids))
                                          | ((kg.tails == t) & np.isin(kg.heads, source.ids)))))
                    for t in target.ids.tolist()]
        assert search._adjacent(target, source, rel_cost).tolist() == expected
        assert 0 < sum(expected) < len(expected)  # a filter that keeps some and drops some


@pytest.mark.parametrize("grouped", [False, True])
def test_sorted_table_lookup_equals_a_dictionary(grouped):
    """The look-ahead tables' lookup (sorting many probes first, or trusting probes grouped by
    their high part) returns each probe's value, ``inf`` for absent keys, in probe order."""
    from kgrag.methods.simgrag.search import SORTED_PROBES, _look_up

    rng = np.random.default_rng(5)
    keys = np.unique(rng.integers(0, 10**9, 4 * SORTED_PROBES))
    values = rng.random(len(keys))
    probe = np.concatenate([rng.choice(keys, 3 * SORTED_PROBES),
                            rng.integers(0, 10**9, SORTED_PROBES)])
    if grouped:  # ascending but for short runs, as pair keys of an index sorted by source
        probe = np.sort(probe)
        runs = probe.reshape(-1, 8)
        probe = runs[:, ::-1].ravel()
    value_of = dict(zip(keys.tolist(), values.tolist()))
    expected = np.asarray([value_of.get(p, np.inf) for p in probe.tolist()])
    assert np.array_equal(_look_up(keys, values, probe, grouped=grouped), expected)
    assert np.array_equal(_look_up(keys, values, probe[:10]), expected[:10])  # direct search
    assert np.all(np.isinf(_look_up(keys[:0], values[:0], probe)))


@pytest.mark.parametrize("edges", [[(0, 1), (0, 1)], [(0, 1), (1, 0), (0, 1)],
                                   [(0, 1), (1, 2), (2, 0)]])
def test_look_ahead_over_parallel_and_closing_edges_is_the_best_completion(edges):
    """Parallel pattern edges are bounded together (the opening step counts the closing steps'
    cheapest edges to the *same* neighbour), and a closing step between two mapped nodes by its
    cheapest edge between them: without injectivity, a two-node pattern's bound at the root is
    then exactly its best completion, never above it (admissible) on a triangle, and at least
    the plain per-node look-ahead's bound."""
    from kgrag.methods.simgrag.search import SubgraphSearch

    rng = np.random.default_rng(len(edges))
    n, m, n_rel = 40, 220, 4
    heads, tails = rng.integers(0, n, m), rng.integers(0, n, m)
    kg = KnowledgeGraph.from_arrays(heads, rng.integers(0, n_rel, m), tails,
                                    [f"n{i}" for i in range(n)], [f"r{i}" for i in range(n_rel)])
    n_pat = 1 + max(max(e) for e in edges)
    node_tables = [{i: float(rng.random()) for i in range(n)} for _ in range(n_pat)]
    rel_tables = [{r: float(rng.random()) for r in range(n_rel)} for _ in edges]
    every = enumerate_matches(kg, n_pat, edges, as_sets(node_tables), as_sets(rel_tables),
                              injective=False, refine=False)
    search = SubgraphSearch(kg, n_pat, edges, as_sets(node_tables), as_sets(rel_tables),
                            injective=False, refine=False)
    plain = SubgraphSearch(kg, n_pat, edges, as_sets(node_tables), as_sets(rel_tables),
                           injective=False, refine=False)
    plain._bound_plan = [[(t, "node", (), ()) for t, *_ in level] for level in plain._bound_plan]
    roots = np.arange(n, dtype=np.int64)
    F = np.full((n, n_pat), -1, dtype=np.int64)
    F[:, search.root] = roots
    G = np.asarray([node_tables[search.root][i] for i in range(n)])
    bound = search._bound(F, G, 0)
    best = np.full(n, np.inf)
    for match in every.matches:
        root = match.nodes[search.root]
        best[root] = min(best[root], match.gsd)
    assert np.all(bound <= best + 1e-9)
    assert np.all(bound >= plain._bound(F, G, 0) - 1e-12)
    if n_pat == 2:
        assert np.allclose(bound, best, rtol=0, atol=1e-9)
        assert np.array_equal(np.isinf(bound), np.isinf(best))
        assert np.any(plain._bound(F, G, 0) < best - 1e-6)  # the per-node bound is looser


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.integers(0, 40), st.integers(0, 6), max_size=25),
                min_size=1, max_size=4),
       st.lists(st.booleans(), min_size=4, max_size=4))
def test_merged_candidates_are_the_common_ids_with_summed_distances(tables, wildcard):
    """A quotient pattern's merged item keeps the ids every known set has, at the sum of their
    distances, ascending by (distance, id); wildcards (None) admit everything."""
    from kgrag.methods.simgrag.topk import _merged

    sets = [None if wild else CandidateSet.from_mapping({k: v / 4 for k, v in t.items()})
            for t, wild in zip(tables, wildcard)]
    got = _merged(sets)
    known = [t for t, s in zip(tables, sets) if s is not None]
    if not known:
        assert got is None
        return
    common = set(known[0]).intersection(*known[1:])
    want = sorted((sum(t[i] / 4 for t in known), i) for i in common)
    assert [int(i) for i in got.ids] == [i for _, i in want]
    np.testing.assert_allclose(got.distances, [d for d, _ in want])


def test_merged_candidates_compiled_and_numpy_agree(monkeypatch):
    """With numba the common ids of merged sets are found by bitsets, without it by sorted
    search: the same ids and the same summed distances, bit for bit (three sets, one empty
    overlap, ids at word edges)."""
    from kgrag.methods.simgrag import topk
    from kgrag.methods.simgrag.topk import _merged

    if topk.compiled_kernels() is None:
        pytest.skip("needs numba")
    rng = np.random.default_rng(12)
    sets = [CandidateSet(np.concatenate([[0, 63, 64], rng.choice(np.arange(65, 5000), 1500,
                                                               replace=False)]),
                         rng.random(1503)) for _ in range(3)]
    apart = CandidateSet(np.array([6000, 6001]), np.array([0.5, 0.25]))
    cases = [sets[:2], sets, [sets[0], None, sets[2]], [sets[0], apart]]
    compiled = [_merged(c) for c in cases]
    monkeypatch.setattr(topk, "compiled_kernels", lambda: None)
    for case, got in zip(cases, compiled):
        want = _merged(case)
        assert got.ids.tolist() == want.ids.tolist()
        assert got.distances.tolist() == want.distances.tolist()
    assert len(compiled[0]) and not len(compiled[3])


@pytest.mark.parametrize("injective", [True, "prefer"])
def test_compiled_and_numpy_reverse_indexes_agree(monkeypatch, injective):
    """With numba a step's reverse index is filtered by one compiled pass
    (:func:`kgrag.methods.simgrag._kernels.reverse_options`), without it by numpy: the same
    four arrays bit for bit for every combination (known / wildcard source and relation, new
    node or closing step), and the same top-k on a 3-arm star with a triangle."""
    from kgrag.methods.simgrag import search as search_module
    from kgrag.methods.simgrag.search import SubgraphSearch

    if search_module.compiled_kernels() is None:
        pytest.skip("needs numba")
    rng = np.random.default_rng(17)
    n, r = 300, 6
    kg = KnowledgeGraph.from_arrays(rng.integers(0, n, 4000), rng.integers(0, r, 4000),
                                    rng.integers(0, n, 4000), [f"n{i}" for i in range(n)],
                                    [f"r{i}" for i in range(r)])

    def cands(size, pool):
        ids = rng.choice(pool, size, replace=False)
        return CandidateSet(ids, rng.random(size))

    nodes = [None, cands(60, n), cands(80, n), cands(70, n)]
    rels = [cands(3, r), None, cands(4, r), cands(2, r)]
    edges = [(0, 1), (0, 2), (0, 3), (1, 2)]
    found = {}
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(search_module, "compiled_kernels", lambda: None)
        s = SubgraphSearch(kg, 4, edges, nodes, rels, k=5, refine=False)
        got = []
        for target, source in ((1, 0), (2, 3), (3, None)):
            for rel_cost in (s.rel_cost[0], None):
                for new in (True, False):
                    got.append(s._build_reverse_index(
                        s.node_cost[target], rel_cost, new,
                        None if source is None else s.node_cost[source]))
        found[compiled] = (got, top_k_subgraphs(kg, 4, edges, nodes, rels, 5,
                                                injective=injective).matches)
    for a, b in zip(found[True][0], found[False][0]):
        assert [x.tolist() for x in a] == [x.tolist() for x in b]
        assert [x.dtype for x in a] == [x.dtype for x in b]
    assert found[True][1] == found[False][1] and found[True][1]


@pytest.mark.parametrize("compiled", [True, False])
def test_cheapest_per_source_takes_runs_of_sorted_sources(monkeypatch, compiled):
    """A look-ahead / pair table: each distinct source and its smallest cost, by one pass over
    the sorted options (numba, or numpy without it); unsorted options are refused."""
    from kgrag.methods.simgrag import search as search_module

    if compiled and search_module.compiled_kernels() is None:
        pytest.skip("needs numba")
    if not compiled:
        monkeypatch.setattr(search_module, "compiled_kernels", lambda: None)
    rng = np.random.default_rng(6)
    for size in (0, 1, 7, 5000):
        sources = np.sort(rng.integers(0, max(1, size // 3), size)).astype(np.int64)
        cost = rng.random(size)
        cost[rng.random(size) < 0.2] = np.inf
        ids, best = search_module._cheapest_per_source(sources, cost)
        want = {}
        for src, c in zip(sources.tolist(), cost.tolist()):
            want[src] = min(c, want.get(src, math.inf))
        assert ids.tolist() == sorted(want) and best.tolist() == [want[i] for i in sorted(want)]
    with pytest.raises(ValueError, match="sorted"):
        search_module._cheapest_per_source(np.array([3, 1]), np.array([1.0, 2.0]))


def test_neighbour_bitsets_match_boolean_masks():
    """The compiled neighbour set (:func:`._kernels.neighbour_bits`, one bit per node; a
    domain's own set, :func:`._kernels.id_bits`) gives the numpy path's boolean mask: the same
    ids (word edges 63 / 64, the last node of a size that is not a multiple of 64) and the same
    membership answers, with and without a relation filter."""
    from kgrag.methods.simgrag import search as search_module

    kernels = search_module.compiled_kernels()
    if kernels is None:
        pytest.skip("needs numba")
    rng = np.random.default_rng(9)
    size = 1000
    other = np.concatenate([[0, 63, 64, 127, 128, size - 1], rng.integers(0, size, 300)])
    rel = rng.integers(0, 4, len(other))
    for rel_cost in (np.empty(0), np.array([0.5, np.inf, 0.1, np.inf])):
        ok = np.ones(len(other), bool) if not len(rel_cost) else np.isfinite(rel_cost[rel])
        mask = np.zeros(size, bool)
        mask[other[ok]] = True
        words = kernels.neighbour_bits(other, rel, rel_cost, size)
        assert words.dtype == np.uint64 and len(words) == 16
        assert kernels.bit_ids(words).tolist() == np.flatnonzero(mask).tolist()
        probe = np.arange(size)
        assert kernels.has_bits(words, probe).tolist() == mask.tolist()
        # a domain's membership bitset: the same words from its ids alone
        assert kernels.id_bits(np.flatnonzero(mask), size).tolist() == words.tolist()
    assert kernels.bit_ids(np.zeros(3, np.uint64)).tolist() == []
    assert kernels.id_bits(np.empty(0, np.int64), 65).tolist() == [0, 0]


def test_stable_argsort_sorts_where_keys_cannot_be_packed():
    """Values too large to pack with their positions fall back to ``np.argsort`` of the kind
    asked for: a stable order by default, any ascending order with ``"quicksort"``."""
    from kgrag.methods.simgrag.search import stable_argsort

    rng = np.random.default_rng(2)
    values = rng.integers(0, 50, 6000).astype(np.int64) * (2**52)  # value * n beyond int64
    stable = stable_argsort(values)
    assert stable.tolist() == np.argsort(values, kind="stable").tolist()
    quick = stable_argsort(values, fallback="quicksort")
    assert sorted(quick.tolist()) == list(range(6000))
    assert (np.diff(values[quick]) >= 0).all()
    small = rng.integers(0, 50, 6000)  # packable: stable whatever the fallback
    assert stable_argsort(small, fallback="quicksort").tolist() == np.argsort(
        small, kind="stable").tolist()
