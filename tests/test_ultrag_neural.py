"""UltRAG's neural executor (UltraQuery) against golden outputs of the reference implementation.

Fixtures: ``tests/data/ultraquery/`` (how they were made: its README). Every query's scores over
every entity must match the reference to 1e-4 (max abs difference) with the same top-10 ranking.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kgrag import KnowledgeGraph
from kgrag.graph import read_triples
from kgrag.methods.ultrag import NeuralFuzzyExecutor, parse_query
from kgrag.methods.ultrag.ultraquery import UltraQueryModel, default_weights_path, load_weights

DATA = Path(__file__).parent / "data" / "ultraquery"
PACKAGED_MOVIES = Path(__file__).parents[1] / "shared" / "kgrag" / "data" / "movies.tsv"


def _fixture(name: str) -> tuple[KnowledgeGraph, dict, np.ndarray]:
    arrays = np.load(DATA / f"{name}.npz", allow_pickle=False)
    meta = json.loads((DATA / f"{name}.json").read_text())
    kg = KnowledgeGraph.from_arrays(arrays["heads"], arrays["rels"], arrays["tails"],
                                    arrays["entity_names"].tolist(),
                                    arrays["relation_names"].tolist())
    return kg, meta, arrays["scores"]


def _top10(x: np.ndarray) -> list[int]:
    ids = np.arange(len(x))
    return ids[np.lexsort((ids, -x))][:10].tolist()


def _same_ranking(got: np.ndarray, expected: np.ndarray, tie: float = 1e-5) -> bool:
    """Identical top-10, where entities the reference scores within ``tie`` of each other
    (structurally symmetric nodes; their order is float summation noise, ~4e-7) may swap."""
    ours, theirs = _top10(got), _top10(expected)
    return all(abs(float(expected[a]) - float(expected[b])) <= tie for a, b in zip(ours, theirs))


def _rel(r: int, num_relations: int) -> str:
    return f"P{r}" if r < num_relations else f"P{r - num_relations}_inv"


def _run(kg: KnowledgeGraph, executor: NeuralFuzzyExecutor, record: dict) -> np.ndarray:
    if record["dsl"] is not None:
        query = parse_query(record["dsl"])
        from kgrag.methods.ultrag import leaves
        sets = [(np.array([int(leaf.text[1:])]), np.ones(1, np.float32))
                for leaf in leaves(query)]
        return executor.execute(query, sets)
    # a fuzzy leaf: the linked-mention case, several entities with memberships < 1
    dsl = "Q0" + "".join(f" -> {_rel(r, kg.num_relations)}" for r in record["relations"])
    leaf = (np.array(record["leaf_ids"]), np.array(record["leaf_memberships"], np.float32))
    return executor.execute(dsl, [leaf])


@pytest.mark.parametrize("name", ["movies", "metaqa_sample"])
def test_scores_match_the_reference(name):
    kg, meta, golden = _fixture(name)
    assert (kg.num_nodes, kg.num_relations) == (meta["num_nodes"], meta["num_relations"])
    executor = NeuralFuzzyExecutor(kg, threads=1)
    shapes = set()
    exact = 0
    for record, expected in zip(meta["queries"], golden):
        got = _run(kg, executor, record)
        assert got.shape == expected.shape
        diff = float(np.abs(got - expected).max())
        assert diff <= 1e-4, (record, diff)
        assert _same_ranking(got, expected), record
        exact += _top10(got) == _top10(expected)
        shapes.add(record["shape"])
    assert {"1p", "2p", "3p", "2i", "3i", "ip", "pi", "2in", "inp", "pin", "2u",
            "fuzzy-1p", "fuzzy-2p"} <= shapes
    # ties aside, the orders are the same: at most a few queries have a swapped near-tie
    assert exact >= len(golden) - 3


def test_movies_fixture_is_the_packaged_graph():
    """The golden graph is kgrag's own movies graph, read the way kgrag reads it."""
    kg, _, _ = _fixture("movies")
    packaged = read_triples(PACKAGED_MOVIES)
    assert kg.node_names == packaged.node_names
    assert kg.relation_names == packaged.relation_names
    for a, b in ((kg.heads, packaged.heads), (kg.rels, packaged.rels), (kg.tails, packaged.tails)):
        np.testing.assert_array_equal(a, b)


def test_batched_projections_equal_one_at_a_time():
    kg, meta, _ = _fixture("movies")
    executor = NeuralFuzzyExecutor(kg, threads=1)
    queries = [r["dsl"] for r in meta["queries"] if r["dsl"]][:12]
    from kgrag.methods.ultrag import leaves
    sets = [[(np.array([int(leaf.text[1:])]), np.ones(1, np.float32))
             for leaf in leaves(parse_query(q))] for q in queries]
    together = executor.execute_many(queries, sets)
    for q, s, x in zip(queries, sets, together):
        np.testing.assert_allclose(x, executor.execute(q, s), atol=1e-6)


def test_weights_load_without_pickle_and_reject_other_files(tmp_path):
    weights = load_weights()
    assert sum(int(np.prod(t.shape)) for t in weights.values()) == 168_705
    assert default_weights_path().with_name("LICENSE").read_text().startswith("MIT License")
    # another checkpoint in the same layout is accepted; a wrong layout is refused
    path = tmp_path / "copy.npz"
    np.savez(path, **{k: v.numpy() for k, v in weights.items()})
    assert isinstance(UltraQueryModel(path), UltraQueryModel)
    bad = tmp_path / "bad.npz"
    np.savez(bad, something=np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="not an UltraQuery checkpoint"):
        load_weights(bad)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, **{k: v.numpy() for k, v in weights.items()},
             extra=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError):
        load_weights(pickled)  # object arrays need pickle, which is never allowed
