"""A SimGRAG subgraph lists each fact once (issue 29, item 15).

The default ``injective="prefer"`` ranks a reusing match second, and a reusing match may map two
pattern triples onto one graph edge (both unknown people are Dmitri, who alone works in
Finance). The match keeps that mapping; the retrieved subgraph is the set of graph edges it
covers (:meth:`Match.graph_edges`), so ``(Dmitri Volkov, works_in, Finance)`` is not listed twice.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from ketrag_fakes import HashingEmbedder
from test_simgrag_search import REUSE_SHAPES, as_sets, search_case

from kgrag import KnowledgeGraph
from kgrag.methods.simgrag import SimGRAG
from kgrag.methods.simgrag.topk import top_k_subgraphs

KG = KnowledgeGraph.from_triples([
    ("Dmitri Volkov", "works_in", "Finance"), ("Bob Tanaka", "works_in", "Engineering"),
    ("Alice Moreau", "works_in", "Engineering"), ("Dmitri Volkov", "reports_to", "Hannah Berg"),
])


def test_the_reusing_match_lists_the_shared_fact_once():
    method = SimGRAG(KG, embedder=HashingEmbedder(), top_k=5, humanize_relations=False)
    result = method.retrieve_pattern([("UNKNOWN person 1", "works_in", "Finance"),
                                      ("UNKNOWN person 2", "works_in", "Finance")])
    best = result.items[0]
    assert best.metadata["mapping"]["UNKNOWN person 1"] == "Dmitri Volkov"
    assert best.metadata["mapping"]["UNKNOWN person 2"] == "Dmitri Volkov"
    assert [t.as_tuple() for t in best.triples] == [("Dmitri Volkov", "works_in", "Finance")]
    for item in result.items:
        facts = [t.as_tuple() for t in item.triples]
        assert len(facts) == len(set(facts)), facts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(search_case(shapes=REUSE_SHAPES, modes=("prefer", False)))
def test_every_subgraph_is_the_set_of_its_matchs_edges(case):
    """Brute-force definition: the facts of a match are the distinct graph edges its pattern
    edges map to, in first-use order -- for every match of the searches that may reuse."""
    kg, n_pat, edges, node_tables, rel_tables, k, injective, distinct, options = case
    result = top_k_subgraphs(kg, n_pat, edges, as_sets(node_tables), as_sets(rel_tables), k,
                             injective=injective, distinct_subgraphs=distinct, **options)
    names = tuple(f"p{i}" for i in range(n_pat))
    for match in result.matches:
        sub = SimGRAG._subgraph((names, ()), match, kg, 0)
        facts = [t.as_tuple() for t in sub.triples]
        expected, seen = [], set()
        for e in match.edges:
            if e not in seen:
                seen.add(e)
                expected.append((kg.node_names[kg.heads[e]], kg.relation_names[kg.rels[e]],
                                 kg.node_names[kg.tails[e]]))
        assert facts == expected
        assert len(facts) == len(set(facts))
