"""Property tests: graph operations on random small multigraphs against networkx / brute force."""

from __future__ import annotations

from collections import Counter, deque

import networkx as nx
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgrag import KnowledgeGraph, PathStep
from kgrag.graph import from_networkx, load_graph, read_triples, save_graph, to_networkx

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

NODES = [f"n{i}" for i in range(8)]
RELATIONS = ["r0", "r1", "r2"]

triple_lists = st.lists(
    st.tuples(st.sampled_from(NODES), st.sampled_from(RELATIONS), st.sampled_from(NODES)),
    min_size=1, max_size=30,
)
directions = st.sampled_from(["out", "in", "both"])
node_subsets = st.lists(st.sampled_from(NODES), min_size=1, max_size=4)


def build(triples):
    kg = KnowledgeGraph.from_triples(triples)
    return kg, sorted(set(triples))


def touches(edge, nodes, direction):
    h, _, t = edge
    return ((direction in ("out", "both") and h in nodes)
            or (direction in ("in", "both") and t in nodes))


# ---------------------------------------------------------------------- structure
@SETTINGS
@given(triple_lists)
def test_storage_invariants(triples):
    kg, unique = build(triples)
    assert sorted(t.as_tuple() for t in kg.triples()) == unique
    assert kg.stats["duplicate_edges"] == len(triples) - len(unique)
    assert kg.stats["self_loops"] == sum(h == t for h, _, t in unique)
    # CSR: out block of v holds exactly the edges with head v; in_order likewise for tails
    for v in range(kg.num_nodes):
        out_block = range(kg.out_indptr[v], kg.out_indptr[v + 1])
        assert all(kg.heads[e] == v for e in out_block)
        in_block = kg.in_order[kg.in_indptr[v]:kg.in_indptr[v + 1]]
        assert all(kg.tails[e] == v for e in in_block)
    assert sorted(kg.in_order.tolist()) == list(range(kg.num_edges))
    # networkx round trip
    assert sorted(t.as_tuple() for t in from_networkx(to_networkx(kg)).triples()) \
        == unique


# ---------------------------------------------------------------------- one hop, degree
@SETTINGS
@given(triple_lists, node_subsets, directions,
       st.one_of(st.none(), st.lists(st.sampled_from(RELATIONS + ["r_missing"]), max_size=2)))
def test_one_hop_matches_brute_force(triples, nodes, direction, relations):
    kg, unique = build(triples)
    expected = [e for e in unique if touches(e, set(nodes), direction)
                and (relations is None or e[1] in relations)]
    got = [t.as_tuple() for t in kg.one_hop(nodes, direction=direction, relations=relations)]
    assert sorted(got) == expected
    assert len(got) == len(set(got))


@SETTINGS
@given(triple_lists, directions)
def test_degree_matches_networkx(triples, direction):
    kg, _ = build(triples)
    g = to_networkx(kg)
    nx_degree = {"out": g.out_degree, "in": g.in_degree, "both": g.degree}[direction]
    assert kg.degree(kg.node_names, direction=direction) == {n: nx_degree(n) for n in g.nodes}


@SETTINGS
@given(triple_lists)
def test_total_degrees_match_networkx(triples):
    """The cached per-node degree table (SimGRAG's read budgets) is networkx's total degree, a
    self-loop counted twice, in int32."""
    kg, _ = build(triples)
    g = to_networkx(kg)
    table = kg.total_degrees()
    assert table.dtype == np.int32 and kg.total_degrees() is table
    assert {n: int(table[i]) for i, n in enumerate(kg.node_names)} == dict(g.degree)


# ---------------------------------------------------------------------- follow path
def brute_force_walks(unique, sources, steps):
    """Every complete walk, as (nodes, relations, forward), enumerated edge by edge."""
    walks = [((s,), (), ()) for s in sorted(set(sources))]
    for rel, direction in steps:
        extended = []
        for nodes, rels, fwd in walks:
            here = nodes[-1]
            for h, r, t in unique:
                if r != rel:
                    continue
                if direction in ("out", "both") and h == here:
                    extended.append((nodes + (t,), rels + (r,), fwd + (True,)))
                if direction in ("in", "both") and t == here:
                    extended.append((nodes + (h,), rels + (r,), fwd + (False,)))
        walks = extended
    return walks


steps_strategy = st.lists(st.tuples(st.sampled_from(RELATIONS), directions), min_size=1, max_size=3)


@SETTINGS
@given(triple_lists, node_subsets, steps_strategy)
def test_follow_path_matches_brute_force(triples, sources, steps):
    kg, unique = build(triples)
    sources = [s for s in sources if kg.has_node(s)]
    path_steps = [PathStep(r, d) for r, d in steps]
    got = [(p.nodes, p.relations, p.forward) for p in kg.follow_path(sources, path_steps)]
    expected = brute_force_walks(unique, sources, steps)
    if any(r not in kg.relation_index for r, _ in steps):
        expected = []
    assert Counter(got) == Counter(expected)
    for nodes, rels, fwd in got:  # every walk is made of real edges
        for i, r in enumerate(rels):
            edge = (nodes[i], r, nodes[i + 1]) if fwd[i] else (nodes[i + 1], r, nodes[i])
            assert edge in set(unique)


@SETTINGS
@given(triple_lists, node_subsets, steps_strategy, st.integers(1, 3), st.integers(1, 5))
def test_follow_path_caps_return_a_subset(triples, sources, steps, fan_out, max_paths):
    kg, unique = build(triples)
    path_steps = [PathStep(r, d) for r, d in steps]
    full = Counter((p.nodes, p.forward) for p in kg.follow_path(sources, path_steps))
    capped = [(p.nodes, p.forward) for p in kg.follow_path(sources, path_steps, fan_out=fan_out)]
    assert not Counter(capped) - full
    # no walk prefix branches into more than fan_out continuations at any step
    for depth in range(1, len(steps) + 1):
        prefixes = Counter((n[:depth], f[:depth - 1]) for n, f in set(
            (n[:depth + 1], f[:depth]) for n, f in capped))
        assert all(c <= fan_out for c in prefixes.values())
    limited = [(p.nodes, p.forward) for p in kg.follow_path(sources, path_steps,
                                                              max_paths=max_paths)]
    assert len(limited) <= max_paths and not Counter(limited) - full
    if len(steps) == 1:  # one step: max_paths keeps exactly the first max_paths walks
        assert limited == [(p.nodes, p.forward) for p in kg.follow_path(sources, path_steps)][
            :max_paths]


# ---------------------------------------------------------------------- shortest paths
@SETTINGS
@given(triple_lists, node_subsets, node_subsets, st.booleans(), st.integers(1, 4))
def test_shortest_paths_match_networkx(triples, sources, targets, directed, max_hops):
    kg, unique = build(triples)
    edge_set = set(unique)
    g = nx.DiGraph() if directed else nx.Graph()
    g.add_nodes_from(kg.node_names)
    g.add_edges_from((h, t) for h, _, t in unique)
    present_sources = {s for s in sources if kg.has_node(s)}
    expected: dict[str, int] = {}
    if present_sources:
        lengths = nx.multi_source_dijkstra_path_length(g, present_sources, cutoff=max_hops)
        expected = {t: lengths[t] for t in set(targets)
                    if t in lengths and t not in present_sources}
    found = kg.shortest_paths(sources, targets, max_hops=max_hops, directed=directed)
    assert {p.target: len(p) for p in found} == expected
    assert len(found) == len(expected)
    assert [len(p) for p in found] == sorted(len(p) for p in found)
    for p in found:  # a real path from a source, along stored edges (forwards when directed)
        assert p.source in present_sources
        assert len(set(p.nodes)) == len(p.nodes)
        for i, r in enumerate(p.relations):
            if directed:
                assert p.forward[i]
            edge = ((p.nodes[i], r, p.nodes[i + 1]) if p.forward[i]
                    else (p.nodes[i + 1], r, p.nodes[i]))
            assert edge in edge_set


# ---------------------------------------------------------------------- k-hop subgraph
def bfs_distances(unique, sources, direction):
    adjacency: dict[str, set[str]] = {}
    for h, _, t in unique:
        if direction in ("out", "both"):
            adjacency.setdefault(h, set()).add(t)
        if direction in ("in", "both"):
            adjacency.setdefault(t, set()).add(h)
    dist = {s: 0 for s in sources}
    queue = deque(sources)
    while queue:
        v = queue.popleft()
        for w in adjacency.get(v, ()):
            if w not in dist:
                dist[w] = dist[v] + 1
                queue.append(w)
    return dist


@SETTINGS
@given(triple_lists, node_subsets, directions, st.integers(0, 3))
def test_k_hop_subgraph_matches_bfs_and_ego_graph(triples, seeds, direction, hops):
    kg, unique = build(triples)
    seeds = sorted({s for s in seeds if kg.has_node(s)})
    dist = bfs_distances(unique, seeds, direction)
    node_ids, edge_ids = kg.k_hop_subgraph_ids(kg.node_ids(seeds), hops=hops, direction=direction)
    got_nodes = {kg.node_names[i] for i in node_ids}
    assert got_nodes == {v for v, d in dist.items() if d <= hops}
    inner = {v for v, d in dist.items() if d < hops}
    expected_edges = [e for e in unique if touches(e, inner, direction)]
    got_edges = sorted(t.as_tuple() for t in kg.edge_triples(edge_ids))
    assert got_edges == expected_edges
    assert sorted(t.as_tuple() for t in kg.k_hop_subgraph(seeds, hops=hops, direction=direction)) \
        == expected_edges
    if len(seeds) == 1:  # networkx's ego graph agrees on the node set
        g = nx.DiGraph()
        g.add_nodes_from(kg.node_names)
        g.add_edges_from((h, t) for h, _, t in unique)
        if direction == "in":
            g = g.reverse()
        ego = nx.ego_graph(g, seeds[0], radius=hops, undirected=direction == "both")
        assert set(ego.nodes) == got_nodes


@SETTINGS
@given(triple_lists, node_subsets, st.integers(1, 3), st.integers(0, 6))
def test_k_hop_subgraph_max_edges(triples, seeds, hops, max_edges):
    kg, _ = build(triples)
    full = {t.as_tuple() for t in kg.k_hop_subgraph(seeds, hops=hops)}
    capped = [t.as_tuple() for t in kg.k_hop_subgraph(seeds, hops=hops, max_edges=max_edges)]
    assert len(capped) == min(max_edges, len(full))
    assert set(capped) <= full
    # nearer levels first: every level-1 edge is kept before any farther edge
    level1 = {t.as_tuple() for t in kg.one_hop(seeds)}
    if len(capped) >= len(level1):
        assert level1 <= set(capped)
    else:
        assert set(capped) <= level1


@SETTINGS
@given(triple_lists)
def test_arrays_survive_save_and_load(tmp_path_factory, triples):
    kg, _ = build(triples)
    directory = tmp_path_factory.mktemp("g")
    save_graph(kg, directory / "graph")
    back = load_graph(directory / "graph")
    for name in ("heads", "rels", "tails", "out_indptr", "in_indptr", "in_order"):
        np.testing.assert_array_equal(getattr(back, name), getattr(kg, name))
    assert back.node_names == kg.node_names and back.relation_names == kg.relation_names


# ---------------------------------------------------------------------- files vs iterables
def _name_ok(name: str) -> bool:
    from kgrag.graph.memory import normalize_name

    return bool(normalize_name(name))


names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"),
                           whitelist_characters="\u2028\u0085é\u0301 ,;|\"'"),
    min_size=1, max_size=10,
).filter(_name_ok)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(names, names, names), min_size=1, max_size=12),
       st.sampled_from(["\t", "|", ",", ";"]), st.booleans())
def test_reading_a_file_equals_building_from_the_triples(tmp_path_factory, triples, sep,
                                                         detect_sep):
    """Whatever reader read_triples uses, the file gives the same graph as its triples."""
    import csv

    if sep in ("\t", "|"):  # unquoted formats cannot hold their separator
        triples = [t for t in triples if not any(sep in part for part in t)]
        if not triples:
            return
    path = tmp_path_factory.mktemp("csv") / "triples.txt"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        if sep in (",", ";"):
            writer = csv.writer(fh, delimiter=sep, lineterminator="\n")
            writer.writerow(["head", "relation", "tail"])
            writer.writerows(triples)
        else:
            fh.write(sep.join(["head", "relation", "tail"]) + "\n")
            fh.writelines(sep.join(t) + "\n" for t in triples)
    from_file = read_triples(path, sep=None if detect_sep else sep)
    expected = KnowledgeGraph.from_triples(triples)
    assert from_file.node_names == expected.node_names
    assert from_file.relation_names == expected.relation_names
    for name in ("heads", "rels", "tails"):
        np.testing.assert_array_equal(getattr(from_file, name), getattr(expected, name))
    assert from_file.stats["duplicate_edges"] == expected.stats["duplicate_edges"]
