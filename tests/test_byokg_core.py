"""ByoKG-RAG core, no LLM: parsers, paths, queries, scoring, reranker, tools, temporal facts."""

from __future__ import annotations

import numpy as np
import pytest
from byokg_fixtures import WORLD_SERIES, DelegatingStore, world_graph
from hypothesis import given, settings
from hypothesis import strategies as st

from kgrag import KnowledgeGraph, Triple
from kgrag.embed import LookupEmbedder
from kgrag.errors import UnsafeQueryError
from kgrag.graph.temporal import temporal_to_triples
from kgrag.methods.byokg import GraphContext, GraphTools, check_read_only, execute_query
from kgrag.methods.byokg.parsing import (
    parse_answers,
    parse_linker_output,
    parse_next_entities,
    parse_selected_relations,
)
from kgrag.methods.byokg.paths import RelationResolver, follow_metapath, shortest_paths
from kgrag.methods.byokg.prompts import linker_prompt
from kgrag.methods.byokg.triplets import GraphReranker, TripletScorer


@pytest.fixture(scope="module")
def kg():
    return world_graph()


@pytest.fixture(scope="module")
def resolver(kg):
    return RelationResolver(kg.list_relations())


# ---------------------------------------------------------------- parsing
FULL_REPLY = """Sure! Let me think about the question first.

<entities>
- Stan Kasten

  "Los Angeles Dodgers"
</entities>
Some prose between the tags.
<paths>
1. business.board_member.leader_of → organization.leadership.organization
sports.sports_team.championships
</paths>
<opencypher>
```cypher
MATCH (p {name: 'Stan Kasten'})-[:`business.board_member.leader_of`]->(x) RETURN x
```
</opencypher>
<answer>
1959 World Series

1988 World Series
</answer>
That's all."""


def test_linker_output_all_tags_with_prose_bullets_and_blank_lines():
    out = parse_linker_output(FULL_REPLY)
    assert out.entities == ["Stan Kasten", "Los Angeles Dodgers"]
    assert out.paths == ["business.board_member.leader_of -> organization.leadership.organization",
                         "sports.sports_team.championships"]
    assert out.query.startswith("MATCH (p {name: 'Stan Kasten'})") and "```" not in out.query
    assert out.answers == ["1959 World Series", "1988 World Series"]  # <answer> accepted
    assert out.finish is False


def test_linker_output_missing_tags_and_answers_variant():
    out = parse_linker_output("<answers>\nJamaica\n</answers>")
    assert (out.entities, out.paths, out.query, out.answers) == ([], [], "", ["Jamaica"])
    assert parse_linker_output("no tags at all").entities == []
    assert parse_linker_output("").answers == []


def test_linker_output_finish_signals():
    assert parse_linker_output("<entities>\nFINISH\n</entities>").finish
    out = parse_linker_output("<entities>Dodgers\nfinish.</entities><stop>FINISH</stop>")
    assert out.finish and out.entities == ["Dodgers"]
    assert parse_linker_output("<task-completion>FINISH</task-completion>").finish
    assert not parse_linker_output("<stop>CONTINUE</stop>").finish


def test_duplicated_tags_take_the_last_non_empty_one():
    reply = ("I will write <entities>entity1</entities> as asked.\n"
             "<entities>Jamaica</entities>\n<entities></entities>")
    assert parse_linker_output(reply).entities == ["Jamaica"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>/entiaswrpcyhfoFINSH-\n |`")), max_size=300))
def test_linker_parser_never_raises_on_garbage(text):
    out = parse_linker_output(text)
    assert isinstance(out.entities, list) and isinstance(out.query, str)


def test_selected_relations_are_restricted_to_candidates():
    cands = ["capital", "language_spoken", "countries_spoken_in"]
    assert parse_selected_relations("<select>\nCAPITAL\nmade_up\n</select>", cands) == ["capital"]
    assert parse_selected_relations("<selected></selected>", cands) == []
    # no tags: names written on their own lines are taken
    assert parse_selected_relations("I pick:\nlanguage_spoken\n", cands) == ["language_spoken"]


def test_next_entities_and_answers():
    assert (parse_next_entities("<next-entities>\nEngland\nUSA\n</next-entities>")
            == (["England", "USA"], False))
    assert parse_next_entities("<next-entities>FINISH</next-entities>") == ([], True)
    assert parse_next_entities("nothing") == ([], False)
    assert parse_answers("reasoning... <answers>\nKingston\n</answers>") == ["Kingston"]


def test_linker_prompt_fields():
    first = linker_prompt("Q?", "SCHEMA", "")
    assert "<entities>" in first and "<paths>" in first and "<answers>" in first
    assert "<opencypher>" not in first and "<stop>" not in first and "FINISH" not in first
    later = linker_prompt("Q?", "SCHEMA", "a -> r -> b", with_query=True)
    assert "<opencypher>" in later and "<stop>" in later and "FINISH" in later
    assert "a -> r -> b" in later and "SCHEMA" in later and "Q?" in later


# ---------------------------------------------------------------- paths
def test_follow_path_stan_kasten(kg, resolver):
    found = follow_metapath(kg, ["Stan Kasten"],
                            "business.board_member.leader_of -> "
                            "organization.leadership.organization",
                            resolver=resolver)
    assert not found.partial and len(found.paths) == 1
    assert found.paths[0].nodes == ("Stan Kasten", "m.0_yv0g3", "Los Angeles Dodgers")


def test_follow_path_wrong_relation_returns_executable_prefix_or_nothing(kg, resolver):
    assert follow_metapath(kg, ["Stan Kasten"], "no_such_relation", resolver=resolver).paths == []
    found = follow_metapath(kg, ["Stan Kasten"], "business.board_member.leader_of -> wrong",
                            resolver=resolver)
    assert found.partial and found.executed == "business.board_member.leader_of"
    assert [p.target for p in found.paths] == ["m.0_yv0g3"]


def test_follow_path_single_hop_merges_in_context(kg, resolver):
    found = follow_metapath(kg, ["English"], "countries_spoken_in", resolver=resolver)
    assert {p.target for p in found.paths} == {"USA", "England"}
    ctx = GraphContext()
    ctx.add_paths(found.paths)
    assert ctx.lines() == ["English -> countries_spoken_in -> USA | England"]
    ctx.add_triples([Triple("English", "countries_spoken_in", "USA"),
                     Triple("English", "countries_spoken_in", "England")])
    assert "English -> countries_spoken_in -> USA | England" == ctx.lines()[0]


def test_direction_policy_both_vs_out_and_no_backtrack(kg, resolver):
    # "Who speaks English?" walks language_spoken backwards: only "both" finds Jamaica
    both = follow_metapath(kg, ["English"], "language_spoken", resolver=resolver)
    out = follow_metapath(kg, ["English"], "language_spoken", resolver=resolver, direction="out")
    assert [p.target for p in both.paths] == ["Jamaica"] and both.paths[0].forward == (False,)
    assert out.paths == []
    # explicit inverse marker: tail -> head only
    inv = follow_metapath(kg, ["English"], "~language_spoken", resolver=resolver)
    assert [p.target for p in inv.paths] == ["Jamaica"]
    # spelling is forgiven: case and punctuation
    assert follow_metapath(kg, ["English"], "Countries Spoken In", resolver=resolver).paths
    # a 2-step walk never goes straight back over the same edge
    back = follow_metapath(kg, ["Jamaica"], "language_spoken -> language_spoken", resolver=resolver)
    assert back.partial and [p.nodes for p in back.paths] == [("Jamaica", "English")]


def test_follow_path_on_a_generic_store_matches_the_fast_path(kg, resolver):
    store = DelegatingStore(kg)
    for path in ["sports.sports_team.championships", "language_spoken -> countries_spoken_in",
                 "organization.leadership.person -> business.board_member.leader_of"]:
        for src in (["Los Angeles Dodgers"], ["Jamaica"], ["m.0_yv0g3", "Stan Kasten"]):
            fast = follow_metapath(kg, src, path, resolver=resolver)
            slow = follow_metapath(store, src, path, resolver=resolver)
            assert {p.nodes for p in fast.paths} == {p.nodes for p in slow.paths}


def test_follow_path_caps_paths_best_source_first(kg, resolver):
    found = follow_metapath(kg, ["Los Angeles Dodgers", "1959 World Series"],
                            "sports.sports_team.championships", resolver=resolver, max_paths=3)
    assert len(found.paths) == 3 and all(p.source == "Los Angeles Dodgers" for p in found.paths)


def test_shortest_paths(kg):
    paths = shortest_paths(kg, ["Jamaica"], ["USA"])
    assert [p.nodes for p in paths] == [("Jamaica", "English", "USA")]
    assert shortest_paths(kg, ["Jamaica"], []) == []
    assert shortest_paths(kg, ["Jamaica"], ["Per Kleppe"]) == []  # unreachable, returns at once
    assert shortest_paths(kg, ["Stan Kasten"], sorted(WORLD_SERIES), max_hops=3)


# ---------------------------------------------------------------- graph queries
@pytest.mark.parametrize("query", [
    "CREATE (n:Person {name: 'x'})",
    "MATCH (n) DETACH DELETE n",
    "MATCH (n) SET n.x = 1 RETURN n",
    "MATCH (n) CALL db.labels() YIELD label RETURN label",
    "MATCH (n) RETURN n; MATCH (m) DELETE m",
    "MATCH (n) MERGE (n)-[:R]->(m)",
    "MATCH (n) ＣＲＥＡＴＥ (m)",  # full-width letters, NFKC-normalised
    "MATCH (n) RETURN n // harmless\nREMOVE n.x",
])
def test_write_queries_are_refused(query):
    with pytest.raises(UnsafeQueryError):
        check_read_only(query)


def test_read_queries_pass_even_with_keywords_in_strings():
    q = "MATCH (n {name: 'CREATE DELETE'}) WHERE n.`set` = 1 RETURN n.name;"
    assert check_read_only(q) == q.rstrip(";")


def test_execute_query_rows_errors_and_refusals(kg):
    store = DelegatingStore(kg, cypher_rows=[[{"name": "Kingston"}],
                                             SyntaxError("Invalid input 'RETRN'")])
    ok = execute_query(store,
                       "MATCH (c)<-[:capital]-(:Entity {name:'Jamaica'}) RETURN c.name AS name")
    assert ok.ok and ok.rows == [{"name": "Kingston"}] and "Kingston" in ok.verbalize()
    bad = execute_query(store, "MATCH (n) RETRN n")
    assert not bad.ok and "Invalid input" in bad.verbalize()
    refused = execute_query(store, "MATCH (n) DETACH DELETE n")
    assert "refused" in refused.error and len(store.queries) == 2  # never sent
    assert "cannot run openCypher" in execute_query(kg, "MATCH (n) RETURN n").error


# ---------------------------------------------------------------- text-based scoring
def one_hot_embedder(kg: KnowledgeGraph) -> LookupEmbedder:
    names = kg.node_names + kg.relation_names
    table = {n: np.eye(len(names) + 1)[i] for i, n in enumerate(names)}
    return LookupEmbedder(table, fallback="zero")


def test_text_scoring_is_the_sum_of_three_cosines_and_top_k_is_sorted(kg):
    emb = one_hot_embedder(kg)
    scorer = TripletScorer.from_graph(kg, emb)
    q = (emb.embed_query("Jamaica") * 2 + emb.embed_query("capital") + emb.embed_query("English"))
    q = q / np.linalg.norm(q)
    scores = scorer.edge_scores(q)
    for e, t in enumerate(kg.edge_triples(range(kg.num_edges))):
        expected = sum(float(emb.embed_query(x) @ q) for x in (t.head, t.relation, t.tail))
        assert scores[e] == pytest.approx(expected, abs=1e-6)
    top = scorer.top_k(q, k=3)
    assert len(top) == 3 and [t.score for t in top] == sorted((t.score for t in top), reverse=True)
    assert top[0].as_tuple() == ("Jamaica", "language_spoken", "English")  # h and t both match
    assert top[1].as_tuple() == ("Jamaica", "capital", "Kingston")
    assert len(scorer.top_k(q, k=10_000)) == kg.num_edges


def test_text_scoring_on_a_generic_store_uses_the_neighbourhood(kg):
    emb = one_hot_embedder(kg)
    scorer = TripletScorer.from_graph(DelegatingStore(kg), emb)
    q = emb.embed_query("Jamaica")
    top = scorer.top_k(q, k=2, seeds=["Jamaica"])
    assert {t.head for t in top} == {"Jamaica"} and top[0].score == pytest.approx(1.0)
    assert scorer.top_k(q, k=2) == []  # no seeds, no neighbourhood


def test_graph_reranker_stages():
    kg = KnowledgeGraph.from_triples(
        [("A", f"r{i}", f"x{i}") for i in range(30)] + [("x0", "deep", "y0"), ("y0", "far", "z0")])
    calls = []

    def reranker(query, texts):
        calls.append(list(texts))
        # relations r0..r29 ranked by index; triplets by the number in the tail
        return [-int("".join(c for c in t.split("->")[-1] if c.isdigit()) or 99) for t in texts]

    rr = GraphReranker(kg, reranker, relation_top_k=5, triplet_top_k=3, hops=2)
    top = rr.retrieve("q", ["A"], k=2)
    assert len(calls[0]) == 31  # relations of the 2-hop neighbourhood (far is 3 hops away)
    assert len(calls[1]) == 5   # only triplets of the 5 kept relations
    assert [t.as_tuple() for t in top] == [("A", "r0", "x0"), ("A", "r1", "x1")]
    final = GraphReranker(kg, reranker, final_reranker=lambda q, ts: list(range(len(ts))),
                          relation_top_k=5, triplet_top_k=3)
    assert [t.tail for t in final.retrieve("q", ["A"], k=2)] == ["x2", "x1"]


# ---------------------------------------------------------------- temporal facts and tools
def test_temporal_quadruples_become_triples():
    assert temporal_to_triples([("A", "position held", "B", (1979, 1983))]) == [
        ("A", "position held (1979 - 1983)", "B")]
    assert temporal_to_triples([("A", "r", "B", 1990, 1990)]) == [("A", "r (1990)", "B")]
    assert temporal_to_triples([("A", "r", "B", None)]) == [("A", "r", "B")]


def test_graph_tools_text(kg):
    tools = GraphTools(kg)
    assert tools.lookup_entity_text("Los Angeles Dodgers").splitlines()[0].startswith(
        "Los Angeles Dodgers")
    text = tools.neighbors_text("English", "countries_spoken_in")
    assert "English -> countries_spoken_in -> USA | England" in text
    assert "Unknown relation" in tools.neighbors_text("English", "flies_to")
    fp = tools.follow_path_text("stan kasten",
                                "business.board_member.leader_of -> "
                                "organization.leadership.organization")
    assert "closest match 'Stan Kasten'" in fp and fp.endswith("Los Angeles Dodgers")
    assert "Jamaica -> language_spoken -> English -> countries_spoken_in -> USA" in \
        tools.shortest_path_text("Jamaica", "USA")
    assert "cannot run openCypher" in tools.run_cypher_text("MATCH (n) RETURN n")


def test_capped_paths_round_robin_over_direction_patterns():
    # MetaQA merges the film "2010" and the year 2010 into one node: walking release_year in
    # both directions from it reaches every film of 2010, which must not crowd out 1984.
    kg = KnowledgeGraph.from_triples(
        [("52 Pick-Up", "starred_actors", "Roy Scheider"),
         ("2010", "starred_actors", "Roy Scheider"),
         ("2010", "release_year", "1984")] + [(f"Film {i}", "release_year",
                                               "2010") for i in range(6)]
        + [("Zed Movie", "starred_actors", "Roy Scheider"), ("Zed Movie", "release_year", "1999")])
    resolver = RelationResolver(kg.list_relations())
    path = "starred_actors -> starred_actors -> release_year"
    full = follow_metapath(kg, ["52 Pick-Up"], path, resolver=resolver)
    assert {p.target for p in full.paths} == {"1984", "1999"} | {f"Film {i}" for i in range(6)}
    for store in (kg, DelegatingStore(kg)):
        capped = follow_metapath(store, ["52 Pick-Up"], path, resolver=resolver, max_paths=4)
        # two walks of each direction pattern (graph order alone would give 1984 + 3 films)
        assert {p.target for p in capped.paths} == {"1984", "1999", "Film 0", "Film 1"}


def test_cli_command_and_demo_step(capsys):
    from pathlib import Path

    from kgrag.cli import main
    from kgrag.commands.byokg import demo_steps
    from kgrag.commands.demo import run_demo

    movies = str(Path(__file__).resolve().parents[1] / "examples" / "data" / "movies.tsv")
    status = main(["byokg", movies, "Where was the director of Tokyo Godfathers born?",
                   "--entity", "Tokyo Godfathers", "--path", "directed_by -> born_in", "--linking",
                   "fuzzy"])
    out = capsys.readouterr().out
    assert status == 0
    assert "Tokyo Godfathers -> directed_by -> Satoshi Kon -> born_in -> Sapporo" in out
    lines = []
    run_demo(lines.append, steps=demo_steps())
    assert any("-> born_in -> Sapporo" in line for line in lines)
    assert any("LLM calls: 2" in line for line in lines)


def _brute_force_ends(triples, sources, relations):
    """(source, end) of every walk along ``relations`` (both directions, no immediate reuse of
    an edge unless it is a self-loop)."""
    walks = [(s, s, None) for s in sources]  # (source, current node, last triple)
    for rel in relations:
        nxt = []
        for src, node, last in walks:
            for t in triples:
                if t[1] != rel or (t == last and t[0] != t[2]):
                    continue
                if t[0] == node:
                    nxt.append((src, t[2], t))
                if t[2] == node and t[0] != t[2]:
                    nxt.append((src, t[0], t))
        walks = nxt
    return {(s, n) for s, n, _ in walks}


@settings(max_examples=150, deadline=None)
@given(
    edges=st.lists(st.tuples(st.integers(0, 6), st.sampled_from("abc"), st.integers(0, 6)),
                   min_size=1, max_size=20),
    path=st.lists(st.sampled_from("abc"), min_size=1, max_size=3),
    sources=st.lists(st.integers(0, 6), min_size=1, max_size=3),
)
def test_follow_metapath_matches_brute_force(edges, path, sources):
    triples = sorted({(f"n{h}", r, f"n{t}") for h, r, t in edges})
    kg = KnowledgeGraph.from_triples(triples)
    names = [f"n{s}" for s in sources if f"n{s}" in kg.node_index]
    resolver = RelationResolver(kg.list_relations())
    found = follow_metapath(kg, names, " -> ".join(path), resolver=resolver, max_paths=10**6)
    expected = _brute_force_ends(triples, list(dict.fromkeys(names)), path)
    if expected:
        assert not found.partial
        assert {(p.source, p.target) for p in found.paths} == expected
        assert len(found.paths) == len(expected)  # one walk per (source, end)
    else:
        assert found.partial or not found.paths
