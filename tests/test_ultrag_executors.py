"""One executor interface: neural (UltraQuery), symbolic and the exact-first hybrid (the default).

Both executors must accept and refuse exactly the same queries (parsing and binding are shared)
and return a membership in [0, 1] for every entity; the pipeline's ``executor=`` option, the
size rule (SEPPR subgraphs beyond ``full_graph_max_nodes``) and the CLI flag are checked here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgrag import KnowledgeGraph
from kgrag.graph import read_triples
from kgrag.methods.ultrag import (
    NeuralFuzzyExecutor,
    QueryError,
    SymbolicFuzzyExecutor,
    UltRAG,
    one_hot,
)
from kgrag.methods.ultrag.neural import UltraQueryProjector

MOVIES = Path(__file__).resolve().parents[1] / "shared" / "kgrag" / "data" / "movies.tsv"


@pytest.fixture(scope="module")
def movies() -> KnowledgeGraph:
    return read_triples(MOVIES)


@pytest.fixture(scope="module")
def both(movies):
    return {"neural": UltRAG(movies, linking="exact", executor="neural", threads=1),
            "symbolic": UltRAG(movies, linking="exact", executor="symbolic"),
            "hybrid": UltRAG(movies, linking="exact", executor="hybrid", threads=1)}


def _query_texts(num_nodes: int, relations: list[str]) -> st.SearchStrategy[str]:
    """Query text: valid trees over ids and names, plus near-misses (unknown ids, bare
    entities, unbalanced brackets, one-operand AND...)."""
    leaf = st.one_of(
        st.integers(0, num_nodes + 3).map(lambda i: f"Q{i}"),  # may be out of range
        st.sampled_from(['"Paprika"', '"Japan"', '"Animation"', '"Nobody Here"']))
    rel = st.one_of(
        st.integers(0, len(relations) + 2).map(lambda i: f"P{i}"),  # may be out of range
        st.sampled_from(relations + ["not_a_relation"]),
    ).flatmap(lambda r: st.sampled_from([r, r + "_inv"]))

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, rel).map(lambda t: f"{t[0]} -> {t[1]}"),
            st.lists(inner, min_size=1, max_size=3).map(lambda xs: "AND(" + ", ".join(xs) + ")"),
            st.lists(inner, min_size=2, max_size=2).map(lambda xs: "OR(" + ", ".join(xs) + ")"),
            inner.map(lambda x: f"NOT({x})"),
        )

    tree = st.recursive(st.tuples(leaf, rel).map(lambda t: f"{t[0]} -> {t[1]}") | leaf,
                        extend, max_leaves=4)
    garbage = st.one_of(tree.map(lambda t: t + ")"), tree.map(lambda t: t.replace("->", "=>", 1)),
                        st.text(max_size=12))
    return st.one_of(tree, tree, garbage)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_neural_and_symbolic_accept_the_same_queries_and_score_in_unit_interval(
        movies, both, data):
    text = data.draw(_query_texts(movies.num_nodes, movies.relation_names[:4]))
    outcomes = {}
    for kind, method in both.items():
        try:
            scores = method.run(text).scores
        except QueryError as exc:
            outcomes[kind] = type(exc).__name__
            continue
        assert scores.shape == (movies.num_nodes,)
        assert scores.dtype == np.float32
        assert np.all(np.isfinite(scores)) and scores.min() >= 0 and scores.max() <= 1
        outcomes[kind] = "ok"
    assert outcomes["neural"] == outcomes["symbolic"] == outcomes["hybrid"], text


def test_neural_option_matches_the_executor(movies):
    method = UltRAG(movies, linking="exact", executor="neural")
    assert method.executor_kind == "neural"
    assert isinstance(method.graph_executor.executor, NeuralFuzzyExecutor)
    query = 'AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by'
    execution = method.run(query)
    ids = [movies.node_index[n] for n in ("Animation", "Japan")]
    direct = NeuralFuzzyExecutor(movies).execute(
        query.replace('"Animation"', f"Q{ids[0]}").replace('"Japan"', f"Q{ids[1]}"),
        [one_hot([ids[0]], movies.num_nodes), one_hot([ids[1]], movies.num_nodes)])
    np.testing.assert_allclose(execution.scores, direct, atol=1e-6)
    top = [e.name for e in method.execute(query, top_k=2)]
    assert set(top) == {"Satoshi Kon", "Hayao Miyazaki"}  # the symbolic answers rank first
    assert 0 < execution.scores.min() and execution.scores.max() < 1  # soft, every entity
    symbolic = UltRAG(movies, linking="exact", executor="symbolic").run(query).scores
    assert set(np.flatnonzero(symbolic == 1)) == {movies.node_index[n] for n in top}


def test_executor_option_is_validated(movies):
    with pytest.raises(ValueError, match="executor must be one of"):
        UltRAG(movies, executor="quantum")
    with pytest.raises(ValueError, match="threads"):
        UltRAG(movies, threads=0)
    assert isinstance(UltRAG(movies, executor="symbolic").graph_executor.executor,
                      SymbolicFuzzyExecutor)


def test_the_executors_are_reached_through_graph_executor(movies):
    method = UltRAG(movies, executor="symbolic", linking="exact")
    assert not hasattr(method, "store_executor")  # the deprecated accessors are gone
    assert isinstance(method.executor_kind, str)
    store_executor = method.graph_executor.store_executor
    query = '"Satoshi Kon" -> directed_by_inv'
    by_name = store_executor.execute_names(query, [{"Satoshi Kon": 1.0}])
    assert set(by_name) == {e.name for e in method.execute(query)} != set()


def test_size_rule_runs_large_graphs_on_seppr_subgraphs(movies):
    """Beyond full_graph_max_nodes the neural executor runs on the SEPPR top-k subgraph."""
    small = UltRAG(movies, linking="exact", executor="neural", full_graph_max_nodes=50,
                   subgraph_k=60)
    assert small.graph_executor.subgraph_k == 60
    run = small.run('"Satoshi Kon" -> directed_by_inv')
    assert run.subgraph_nodes == 60
    assert np.count_nonzero(run.scores) <= 60  # entities outside the subgraph score 0
    assert {e.name for e in small.execute('"Satoshi Kon" -> directed_by_inv', top_k=4)} == {
        "Tokyo Godfathers", "Perfect Blue", "Paprika", "Millennium Actress"}
    default_k = UltRAG(movies, linking="exact", full_graph_max_nodes=50)
    assert default_k.graph_executor.subgraph_k == 30_000  # the paper's k
    whole = UltRAG(movies, linking="exact")
    assert whole.graph_executor.subgraph_k is None
    assert whole.run('"Paprika" -> directed_by').subgraph_nodes is None


def test_threads_are_set_for_the_forward_pass_and_restored(movies):
    import torch

    before = torch.get_num_threads()
    projector = UltraQueryProjector(movies, threads=1)
    out = projector.project(one_hot([0], movies.num_nodes), 0, False)
    assert out.shape == (movies.num_nodes,) and torch.get_num_threads() == before


def test_cli_executor_flag(capsys):
    from kgrag import cli

    query = 'AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by'
    assert cli.main(["ultrag", str(MOVIES), query, "--executor", "symbolic"]) == 0
    out = capsys.readouterr().out
    assert "1.000  Satoshi Kon" in out and "1.000  Hayao Miyazaki" in out
    assert cli.main(["ultrag", str(MOVIES), query, "--executor", "neural", "--threads", "1"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  ")]
    names = " ".join(lines[:2])
    assert "Satoshi Kon" in names and "Hayao Miyazaki" in names
    assert "1.000  Satoshi Kon" not in names  # neural memberships are soft


def test_both_adapters_pass_the_executor_option_through(movies):
    from langchain_kgrag import UltRAGRetriever
    from llama_index_kgrag import UltRAGQueryEngine
    from llama_index_kgrag import UltRAGRetriever as LIUltRAGRetriever

    query = '"Satoshi Kon" -> directed_by_inv'
    for kind in ("neural", "symbolic"):
        lc = UltRAGRetriever.from_graph(movies, linking="exact", executor=kind, k=4)
        li = LIUltRAGRetriever.from_graph(movies, linking="exact", executor=kind)
        engine = UltRAGQueryEngine.from_graph(movies, linking="exact", executor=kind)
        assert lc.method.executor_kind == li.method.executor_kind == kind
        assert engine.method.executor_kind == kind
        docs = lc.execute(query)
        scores = [d.metadata["score"] for d in docs]
        assert {d.metadata["entity"] for d in docs} == {
            "Tokyo Godfathers", "Perfect Blue", "Paprika", "Millennium Actress"}
        assert (scores == [1.0] * 4) == (kind == "symbolic")
        nodes = li.execute(query)
        assert {n.node.metadata["entity"] for n in nodes[:4]} == {d.metadata["entity"]
                                                                  for d in docs}


def test_membership_floor_keeps_near_zero_entities_out_of_the_results(movies):
    """UltraQuery scores every entity; the near-zero tail (1e-21 ... 1e-4) is not listed by
    default, the fuzzy set itself is not cut, and retrieve says how many were left out."""
    from kgrag.methods.ultrag.config import DEFAULT_MIN_MEMBERSHIP

    query = 'AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by'
    method = UltRAG(movies, linking="exact", executor="neural", top_k=200)
    scores = method.run(query).scores
    tail = int(np.count_nonzero((scores > 0) & (scores < DEFAULT_MIN_MEMBERSHIP)))
    listed = int(np.count_nonzero(scores >= DEFAULT_MIN_MEMBERSHIP))
    # the list: all 198 entities, down to 1.8e-4; 54 of them reach 0.001
    assert tail > 100 and 0 < listed < tail and scores.min() < 1e-3
    items = method.execute(query)
    assert len(items) == listed and min(e.score for e in items) >= DEFAULT_MIN_MEMBERSHIP
    assert [e.name for e in items[:2]] in (["Satoshi Kon", "Hayao Miyazaki"],
                                           ["Hayao Miyazaki", "Satoshi Kon"])
    result = method.retrieve_query(query)
    assert len(result.items) == listed
    assert result.metadata["below_min_membership"] == min(tail, 200 - listed)
    assert result.metadata["min_membership"] == DEFAULT_MIN_MEMBERSHIP
    assert result.metadata["support_size"] == tail + listed  # the scores are not cut
    everything = UltRAG(movies, linking="exact", executor="neural", top_k=200,
                        min_membership=0.0)
    full = everything.retrieve_query(query)
    assert len(full.items) == min(200, tail + listed)
    assert full.metadata["below_min_membership"] == 0
    assert [e.name for e in full.items[:listed]] == [e.name for e in result.items]
    assert len(method.ranked(scores, min_membership=0.0)) == len(full.items)
    assert len(method.ranked(scores, min_membership=0.5)) == sum(e.score >= 0.5 for e in items)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "0.1", True])
def test_membership_floor_is_validated(movies, bad):
    from kgrag.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="min_membership"):
        UltRAG(movies, executor="symbolic", min_membership=bad)
    with pytest.raises(ConfigurationError, match="min_membership"):
        UltRAG(movies, executor="symbolic").ranked(np.ones(movies.num_nodes, np.float32),
                                                   min_membership=bad)
