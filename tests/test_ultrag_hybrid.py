"""The default executor: exact where the graph knows, neural (UltraQuery) where it does not.

Checked on small graphs: proved answers outrank every neural guess (including where UltraQuery
alone ranks a wrong entity first), neural guesses fill the ranking where the graph proves
nothing, the neural executor is skipped when every projection has exact answers, each result
carries a confidence in [0, 1] and the frequency prior, and relations on which the neural
executor does not beat the prior are flagged.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kgrag import KnowledgeGraph
from kgrag.graph import read_triples
from kgrag.methods.ultrag import UltRAG
from kgrag.methods.ultrag.hybrid import EXACT_TIER, HybridGraphExecutor, exact_first
from kgrag.methods.ultrag.prior_check import expected_reciprocal_rank

MOVIES = Path(__file__).resolve().parents[1] / "shared" / "kgrag" / "data" / "movies.tsv"
SET_IN_JAMAICA = '"Jamaica" -> set_in_inv'


@pytest.fixture(scope="module")
def movies() -> KnowledgeGraph:
    return read_triples(MOVIES)


@pytest.fixture(scope="module")
def methods(movies):
    return {kind: UltRAG(movies, linking="exact", executor=kind, threads=1)
            for kind in ("hybrid", "neural", "symbolic")}


def test_hybrid_is_the_default(movies):
    method = UltRAG(movies, linking="exact")
    assert method.executor_kind == "hybrid"
    assert isinstance(method.graph_executor, HybridGraphExecutor)


def test_proved_answers_rank_above_a_wrong_neural_top_answer(methods):
    """UltraQuery alone puts 'The Harder They Come' (made in Jamaica, set in Kingston) first
    for the films set in Jamaica; the default ranks the two films the graph proves first."""
    neural = [e.name for e in methods["neural"].execute(SET_IN_JAMAICA, top_k=3)]
    exact = {e.name for e in methods["symbolic"].execute(SET_IN_JAMAICA)}
    assert exact == {"Cool Runnings", "Dr. No"}
    assert neural[0] not in exact  # the neural executor's own mistake
    default = methods["hybrid"].execute(SET_IN_JAMAICA)
    assert {e.name for e in default} == exact  # complete here: neural not needed, no guesses
    assert all(e.metadata["source"] == "exact" and e.score == 1.0 for e in default)


def test_exact_answers_outrank_neural_guesses_which_fill_the_rest(movies, methods):
    """With min_exact_answers above the proved count the neural guesses fill the ranking:
    every proved answer first, then the guesses in the neural executor's own order."""
    fill = UltRAG(movies, linking="exact", threads=1, min_exact_answers=10)
    execution = fill.run(SET_IN_JAMAICA)
    assert execution.neural_scores is not None and "min_exact_answers=10" in \
        execution.neural_reason
    items = fill.execute(SET_IN_JAMAICA, top_k=8)
    sources = [e.metadata["source"] for e in items]
    assert sources[:2] == ["exact", "exact"] and set(sources[2:]) == {"neural"}
    assert min(e.score for e in items[:2]) > EXACT_TIER >= max(e.score for e in items[2:])
    proved = {e.name for e in items[:2]}
    neural_order = [e.name for e in methods["neural"].execute(SET_IN_JAMAICA, top_k=10)
                    if e.name not in proved]
    assert [e.name for e in items[2:]] == neural_order[:6]
    scores = [e.score for e in items]
    assert scores == sorted(scores, reverse=True)


def test_where_the_graph_proves_nothing_the_result_is_the_neural_ranking(movies, methods):
    query = '"Japan" -> directed_by'  # a country directs nothing: the exact answer is empty
    result = methods["hybrid"].retrieve_query(query)
    summary = result.metadata["executor"]
    assert summary["exact_answers"] == 0 and summary["neural"] and summary["guessing"]
    assert "no exact answer" in summary["reason"]
    neural = methods["neural"].execute(query, top_k=10)
    assert [e.name for e in result.items[:10]] == [e.name for e in neural]
    for hybrid_item, neural_item in zip(result.items, neural):
        assert hybrid_item.metadata["source"] == "neural"
        assert hybrid_item.score == pytest.approx(EXACT_TIER * neural_item.score, rel=1e-6)
        assert hybrid_item.metadata["confidence"] == pytest.approx(neural_item.score, rel=1e-6)


def test_an_or_branch_without_exact_answers_runs_the_neural_executor(methods):
    """OR(proved, unproved): the proved answers stay first, the missing branch is filled."""
    query = f'OR({SET_IN_JAMAICA}, "Japan" -> directed_by)'
    execution = methods["hybrid"].run(query)
    assert execution.neural_scores is not None
    assert execution.neural_reason == 'no exact answer for "Japan" -> directed_by'
    items = methods["hybrid"].execute(query, top_k=5)
    assert {e.name for e in items[:2]} == {"Cool Runnings", "Dr. No"}
    assert [e.metadata["source"] for e in items] == ["exact"] * 2 + ["neural"] * 3


def test_neural_executor_is_skipped_when_every_projection_has_exact_answers(movies,
                                                                           monkeypatch):
    method = UltRAG(movies, linking="exact", threads=1)
    neural = method.graph_executor.neural

    def fail(*args, **kwargs):
        raise AssertionError("the neural executor ran")

    monkeypatch.setattr(neural, "execute", fail)
    query = 'AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by'
    result = method.retrieve_query(query)
    assert {e.name for e in result.items} == {"Satoshi Kon", "Hayao Miyazaki"}
    assert result.metadata["executor"] == {"kind": "hybrid", "exact_answers": 2,
                                           "neural": False, "reason": None,
                                           "guessing": False}
    # one projection without an exact answer (an AND branch here) needs the neural executor
    with pytest.raises(AssertionError, match="neural executor ran"):
        method.run('AND("Animation" -> has_genre_inv, "Japan" -> directed_by_inv)')


def test_confidence_and_prior_metadata(movies, methods):
    genre = movies.relation_index["has_genre"]
    tails = movies.tails[movies.rels == genre]
    for kind, method in methods.items():
        for query in (SET_IN_JAMAICA, '"Japan" -> directed_by', '"Paprika" -> has_genre'):
            items = method.execute(query, top_k=20)
            assert items or (kind, query) == ("symbolic", '"Japan" -> directed_by')
            for item in items:
                assert 0.0 <= item.metadata["confidence"] <= 1.0
                assert item.metadata["source"] in ("exact", "neural")
                assert 0.0 <= item.metadata["prior"] <= 1.0
    # the prior of "-> has_genre" is the share of has_genre edges ending at the entity
    animation = movies.node_index["Animation"]
    item = next(e for e in methods["symbolic"].execute('"Paprika" -> has_genre')
                if e.name == "Animation")
    assert item.metadata["prior"] == pytest.approx(np.mean(tails == animation))


def test_exact_first_scores_keep_each_tier_in_its_executors_order():
    exact = np.array([0.0, 1.0, 0.4, 0.0, 0.0], np.float32)
    neural = np.array([0.9, 0.1, 0.2, 0.3, 0.0], np.float32)
    combined = exact_first(exact, neural)
    assert np.argsort(-combined).tolist()[:4] == [1, 2, 0, 3]
    assert combined.max() <= 1 and combined.min() >= 0
    assert exact_first(exact, None)[[0, 3]].tolist() == [0.0, 0.0]


def test_expected_reciprocal_rank_counts_ties_and_filters():
    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.5])
    # target 0 ties with 2 and 4, one entity above: ranks 2, 3 or 4 equally likely
    assert expected_reciprocal_rank(scores, 0, np.array([], np.int64)) == pytest.approx(
        (1 / 2 + 1 / 3 + 1 / 4) / 3)
    assert expected_reciprocal_rank(scores, 0, np.array([1, 2, 4])) == 1.0


def test_relations_where_neural_does_not_beat_the_prior_are_flagged():
    """'genre' is almost always Drama (the prior is right); each film's director is also its
    writer (UltraQuery finds a held-out director from the writer; the prior cannot)."""
    triples = []
    for i in range(24):
        film, person = f"Film {i}", f"Person {i}"
        triples += [(film, "directed_by", person), (film, "written_by", person),
                    (film, "genre", "Comedy" if i == 0 else "Drama")]
    method = UltRAG(KnowledgeGraph.from_triples(triples), linking="exact", threads=1)
    checks = {c.token: c for c in method.check_relations(relations=["directed_by", "genre"],
                                                          per_relation=6)}
    assert checks["genre"].prior_mrr == pytest.approx(1.0)
    assert checks["genre"].flagged
    assert checks["directed_by"].neural_mrr > checks["directed_by"].prior_mrr
    assert not checks["directed_by"].flagged
    # a neural guess along a flagged relation says so in the result
    summary = method.retrieve_query('"Person 3" -> genre').metadata["executor"]
    assert summary["neural"] and summary["prior_beats_neural"] == ["genre"]
    summary = method.retrieve_query('"Film 3" -> directed_by').metadata["executor"]
    assert not summary["neural"] and "prior_beats_neural" not in summary


def test_answers_that_are_only_the_query_s_own_entity_do_not_skip_the_neural_executor(
        movies, methods):
    """'Films by Paprika's director' proves Paprika itself (and the director's other films);
    with the other films' edges gone only Paprika is left, which the question starts from:
    the graph has proved nothing asked for, so the neural executor runs."""
    query = '"Paprika" -> directed_by -> directed_by_inv'
    assert methods["hybrid"].run(query).neural_scores is None  # other Satoshi Kon films
    director = movies.node_index["Satoshi Kon"]
    directed = movies.relation_index["directed_by"]
    keep = ~((movies.tails == director) & (movies.rels == directed)
             & (movies.heads != movies.node_index["Paprika"]))
    alone = KnowledgeGraph.from_arrays(movies.heads[keep], movies.rels[keep],
                                       movies.tails[keep], movies.node_names,
                                       movies.relation_names)
    method = UltRAG(alone, linking="exact", threads=1)
    execution = method.run(query)
    assert np.flatnonzero(execution.exact_scores).tolist() == [movies.node_index["Paprika"]]
    assert execution.neural_scores is not None
    assert "besides the query's own entities" in execution.neural_reason
