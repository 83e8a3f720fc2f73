"""GraphRAFT core: template enumeration, label ranking, Cypher rendering, constrained decoding."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgrag import KnowledgeGraph
from kgrag.methods.graphraft.decoding import (
    CandidateTrie,
    constrained_beam_search,
    exhaustive_scores,
)
from kgrag.methods.graphraft.enumeration import best_label, enumerate_candidates, rank_for_training
from kgrag.methods.graphraft.patterns import PathPattern


@pytest.fixture()
def toy_kg():
    return KnowledgeGraph.from_triples([
        ("CYP3A4", "ENZYME", "Ivermectin"),
        ("Ivermectin", "INDICATION", "strongyloidiasis"),
        ("Thiabendazole", "INDICATION", "strongyloidiasis"),
        ("CYP3A4", "ENZYME", "Albendazole"),
        ("melanoma", "ASSOCIATED_WITH", "TNFSF8"),
    ])


def _summary(cands):
    return {(c.pattern.family, c.pattern.source, c.pattern.relations, c.pattern.target): c.total
            for c in cands}


def test_exact_candidate_sets_and_counts(toy_kg):
    cands = enumerate_candidates(toy_kg, ["CYP3A4", "strongyloidiasis"])
    assert _summary(cands) == {
        ("1hop", "CYP3A4", ("ENZYME",), None): 2,
        ("1hop", "strongyloidiasis", ("INDICATION",), None): 2,
        # 2hop never returns the source itself (tgt <> src)
        ("2hop", "CYP3A4", ("ENZYME", "INDICATION"), None): 1,
        ("2hop", "strongyloidiasis", ("INDICATION", "ENZYME"), None): 1,
        # 2path is generated in both orders, as the paper's query does
        ("2path", "CYP3A4", ("ENZYME", "INDICATION"), "strongyloidiasis"): 1,
        ("2path", "strongyloidiasis", ("INDICATION", "ENZYME"), "CYP3A4"): 1,
    }
    for c in cands:  # every candidate is executable and returns exactly `total` nodes
        assert len(c.pattern.execute(toy_kg)) == c.total > 0


def test_hits_ranking_and_label_filter(toy_kg):
    cands = enumerate_candidates(toy_kg, ["CYP3A4", "strongyloidiasis"], gold=["Ivermectin"])
    ranked = rank_for_training(cands)
    assert ranked[0].pattern.family == "2path" and (ranked[0].hits, ranked[0].total) == (1, 1)
    assert [(c.hits, c.total) for c in ranked[2:4]] == [(1, 2), (1, 2)]
    assert ranked[2].text < ranked[3].text  # deterministic tie-break
    assert best_label(cands, n_gold=1) == ranked[0]
    assert best_label(cands, n_gold=2) is None  # recall 1/2 < 1: question dropped


def test_precision_threshold_is_inclusive():
    kg = KnowledgeGraph.from_triples([("hub", "r", f"n{i}") for i in range(10)])
    cands = enumerate_candidates(kg, ["hub"], gold=["n3"])
    assert best_label(cands, 1, min_precision=0.1) is not None  # 1/10 == 0.1 kept
    assert best_label(cands, 1, min_precision=0.11) is None


def test_cypher_is_parameterised_and_text_escapes_names():
    p = PathPattern("2path", 'say "hi"\\', ("R`1", "R2"), target="B")
    query, params = p.to_cypher()
    assert params == {"n1": 'say "hi"\\', "n3": "B"}
    assert "say" not in query and "`R``1`" in query
    text = p.text()
    assert json.dumps('say "hi"\\') in text
    assert text == ('MATCH (x1 {name: "say \\"hi\\"\\\\"})-[r1:`R``1`]-(x2)-[r2:`R2`]-'
                    '(x3 {name: "B"}) WHERE x1 <> x3 RETURN DISTINCT x2.name AS name')


def test_pattern_validation():
    with pytest.raises(ValueError):
        PathPattern("3hop", "a", ("r",))
    with pytest.raises(ValueError):
        PathPattern("2path", "a", ("r", "s"))


class CharScorer:
    """Character tokens; pseudo-random but fixed logits per prefix (plus optional biases)."""

    eos_token_id = 0

    def __init__(self, seed=0, bias=None):
        self.rng = np.random.default_rng(seed)
        self.table = {}
        self.bias = bias or {}
        self.allowed_log = []

    def encode(self, text):
        return [ord(c) for c in text]

    def next_token_logits(self, prompt, prefixes):
        rows = []
        for p in prefixes:
            key = tuple(p)
            if key not in self.table:
                row = self.rng.normal(size=256) * 2
                for tok, val in self.bias.get("".join(map(chr, p)), {}).items():
                    row[tok] = val
                self.table[key] = row
            rows.append(self.table[key])
        return np.array(rows)


def test_mask_blocks_preferred_illegal_token():
    # the model strongly wants '")' right after the name; only '" ' style continuations are legal
    cands = ['(x {name: "X-linked ichthyosis"}) RETURN', '(x {name: "X-linked ichthyosis"})-[r]']
    name = '(x {name: "X-linked ichthyosis'
    scorer = CharScorer(bias={name: {ord(")"): 50.0}})
    ranked = constrained_beam_search(scorer, "q", cands, beam_width=2)
    assert sorted(i for i, _ in ranked) == [0, 1]
    trie = CandidateTrie([scorer.encode(c) for c in cands], 0)
    assert trie.allowed(scorer.encode(name)) == [ord('"')]


def test_prefix_candidates_and_eos_only_after_end():
    scorer = CharScorer(seed=3)
    trie = CandidateTrie([scorer.encode("TNF"), scorer.encode("TNFSF8")], 0)
    assert trie.allowed(scorer.encode("TNF")) == [0, ord("S")]
    assert trie.allowed(scorer.encode("TNF") + [0]) == []
    ranked = constrained_beam_search(scorer, "q", ["TNF", "TNFSF8"], beam_width=5)
    assert sorted(i for i, _ in ranked) == [0, 1]


@settings(max_examples=60, deadline=None)
@given(
    cands=st.lists(st.text(alphabet="abAB(){}\" ", min_size=1, max_size=8), min_size=1,
                   max_size=7, unique=True),
    seed=st.integers(0, 10_000),
    width=st.integers(1, 8),
)
def test_beam_output_is_always_a_candidate_and_exact_when_wide(cands, seed, width):
    scorer = CharScorer(seed)
    ranked = constrained_beam_search(scorer, "q", cands, beam_width=width)
    assert len(ranked) == min(width, len(cands))
    assert len({i for i, _ in ranked}) == len(ranked)
    assert all(0 <= i < len(cands) for i, _ in ranked)
    exact = exhaustive_scores(scorer, "q", cands)
    if width >= len(cands):
        assert [i for i, _ in ranked] == sorted(range(len(cands)),
                                                key=lambda i: (-exact[i],
                                                               scorer.encode(cands[i]) + [0]))
    for i, lp in ranked:  # a beam's score is its candidate's exact log-probability
        assert lp == pytest.approx(exact[i])


def test_canonical_order_and_one_candidate_set_per_node(toy_kg):
    cands = enumerate_candidates(toy_kg, ["strongyloidiasis", " CYP3A4 ", "CYP3A4", "nobody"])
    keys = [(c.pattern.family, c.pattern.source) for c in cands]
    assert keys == [("1hop", "strongyloidiasis"), ("1hop", "CYP3A4"),
                    ("2hop", "strongyloidiasis"), ("2hop", "CYP3A4"),
                    ("2path", "strongyloidiasis"), ("2path", "CYP3A4")]


def test_cypher_for_a_store_mapping():
    p = PathPattern("2hop", "Ivermectin", ("INDICATION", "ENZYME"))
    assert p.to_cypher() == (
        "MATCH (x1 {name: $n1}) WITH x1 MATCH (x1)-[r1:`INDICATION`]-(x2)-[r2:`ENZYME`]-(x3) "
        "WHERE x3 <> x1 AND x2.name IS NOT NULL AND x3.name IS NOT NULL "
        "RETURN DISTINCT x3.name AS name",
        {"n1": "Ivermectin"})
    query, params = p.to_cypher("title", node_label="Thing", relation_property="rel",
                                relationship_type="REL")
    assert query == (
        "MATCH (x1:`Thing` {`title`: $n1}) WITH x1 "
        "MATCH (x1)-[r1:`REL`]-(x2:`Thing`)-[r2:`REL`]-(x3:`Thing`) WHERE x3 <> x1 AND r1.`rel` = "
        "$r1 AND r2.`rel` = $r2 AND x2.`title` IS NOT NULL AND "
        "x3.`title` IS NOT NULL RETURN DISTINCT x3.`title` AS name")
    assert params == {"n1": "Ivermectin", "r1": "INDICATION", "r2": "ENZYME"}
    two_path, _ = PathPattern("2path", "A", ("R", "S"), target="B").to_cypher()
    assert two_path.startswith("MATCH (x1 {name: $n1}) MATCH (x3 {name: $n3}) WITH x1, x3 "
                               "MATCH (x1)-[r1:`R`]-(x2)-[r2:`S`]-(x3) WHERE x1 <> x3")


def _oracle(triples, entities, gold):
    """Every non-empty template instance by plain set algebra: {(family, src, rels, tgt): nodes}."""
    from collections import defaultdict

    nbr = defaultdict(set)
    for h, r, t in triples:
        nbr[(h, r)].add(t)
        nbr[(t, r)].add(h)
    rels = sorted({r for _, r, _ in triples})
    out = {}

    def keep(key, found):
        if found:
            out[key] = found

    for e in entities:
        for r1 in rels:
            first = nbr[(e, r1)]
            keep(("1hop", e, (r1,), None), first)
            for r2 in rels:
                keep(("2hop", e, (r1, r2), None), set().union(*(nbr[(m, r2)] for m in first)) - {e})
                for f in entities:
                    if f != e:
                        keep(("2path", e, (r1, r2), f), first & nbr[(f, r2)])
    return out


@settings(max_examples=60, deadline=None)
@given(
    edges=st.lists(st.tuples(st.integers(0, 7), st.sampled_from(["a", "b", "c"]),
                             st.integers(0, 7)),
                   min_size=1, max_size=30),
    picks=st.lists(st.integers(0, 7), min_size=1, max_size=3, unique=True),
    gold_ids=st.sets(st.integers(0, 7), max_size=4),
)
def test_enumeration_and_execution_equal_set_algebra(edges, picks, gold_ids):
    triples = [(f"n{h}", r, f"n{t}") for h, r, t in edges]
    kg = KnowledgeGraph.from_triples(triples)
    entities = [f"n{i}" for i in picks if kg.has_node(f"n{i}")]
    gold = {f"n{i}" for i in gold_ids}
    cands = enumerate_candidates(kg, entities, gold=sorted(gold))
    got = {(c.pattern.family, c.pattern.source, c.pattern.relations,
            c.pattern.target): (c.total, c.hits)
           for c in cands}
    assert len(got) == len(cands)  # no duplicate candidates
    expected = _oracle(set(triples), entities, gold)
    assert got == {key: (len(found), len(found & gold)) for key, found in expected.items()}
    for c in cands:  # native execution returns exactly those nodes
        key = (c.pattern.family, c.pattern.source, c.pattern.relations, c.pattern.target)
        assert set(c.pattern.execute(kg)) == expected[key]
