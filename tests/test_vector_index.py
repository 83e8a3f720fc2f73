"""kgrag.embed.vector_index: the one vector index linking and SimGRAG search (build, search,
save, load; cosine and L2; flat, int8, HNSW and "auto")."""

from __future__ import annotations

import numpy as np
import pytest

from kgrag.embed.exact_l2 import int8_available
from kgrag.embed.vector_index import AUTO_HNSW_MAX_K, VectorIndex, resolve_kind
from kgrag.errors import GraphLoadError


def _unit(rows: int, dim: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_auto_resolves_by_size_and_by_the_k_searches_ask_for():
    assert resolve_kind(999, hnsw_threshold=1000) == "flat"
    assert resolve_kind(1000, hnsw_threshold=1000) == "hnsw"
    assert resolve_kind(1000, hnsw_threshold=1000, expected_k=AUTO_HNSW_MAX_K) == "hnsw"
    big_k = resolve_kind(1000, metric="l2", hnsw_threshold=1000, expected_k=AUTO_HNSW_MAX_K + 1)
    assert big_k == ("int8" if int8_available() else "flat")
    # cosine has no int8 scan: a large k stays exact with the flat index
    assert resolve_kind(1000, hnsw_threshold=1000, expected_k=AUTO_HNSW_MAX_K + 1) == "flat"
    with pytest.raises(ValueError, match="L2 metric only"):
        resolve_kind(10, "int8")
    with pytest.raises(ValueError, match="metric"):
        resolve_kind(10, metric="dot")


def test_exact_searches_agree_with_brute_force():
    vectors, queries = _unit(300, 16, 0), _unit(4, 16, 1)
    cosine = VectorIndex.build(vectors, index="flat")
    scores, ids = cosine.search(queries, 5)
    want = np.argsort(-(queries @ vectors.T), axis=1, kind="stable")[:, :5]
    assert cosine.kind == "flat" and cosine.metric == "cosine" and ids.tolist() == want.tolist()
    np.testing.assert_allclose(scores, np.take_along_axis(queries @ vectors.T, want, 1), rtol=1e-5)
    l2 = VectorIndex.build(vectors, metric="l2", index="flat")
    squared, ids = l2.search(queries, 5)
    full = ((queries[:, None, :] - vectors[None, :, :]) ** 2).sum(-1)
    assert ids.tolist() == np.argsort(full, axis=1, kind="stable")[:, :5].tolist()
    assert l2.search(queries, 10_000)[1].shape == (4, 300)  # k is capped at the size


@pytest.mark.parametrize("metric, index", [("cosine", "flat"), ("cosine", "hnsw"),
                                           ("l2", "flat"), ("l2", "hnsw"), ("l2", "int8")])
def test_save_and_load_give_the_same_answers_without_pickle(tmp_path, metric, index):
    if index == "int8" and not int8_available():
        pytest.skip("the int8 scan needs numba")
    vectors, queries = _unit(400, 24, 2), _unit(3, 24, 3)
    # efSearch fixed at build is stored in the file; a per-search factor is given to load
    built = VectorIndex.build(vectors, metric=metric, index=index, hnsw_m=8, ef_construction=40,
                              ef_search=None if metric == "l2" else 48)
    path = tmp_path / "index.bin"
    built.save(path)
    if index in ("flat", "int8") and metric == "l2":  # a plain matrix: np.load without pickle
        np.testing.assert_array_equal(np.load(path, allow_pickle=False), vectors)
    for mmap in (False, True):
        loaded = VectorIndex.load(path, mmap=mmap, index=index if index == "int8" else "flat",
                                  ef_search_factor=8 if metric == "l2" else None)
        assert (loaded.metric, loaded.kind, len(loaded), loaded.dimension) == (
            metric, index, 400, 24)
        for got, want in zip(loaded.search(queries, 7), built.search(queries, 7)):
            np.testing.assert_array_equal(got, want)


def test_an_empty_index_and_bad_files_are_handled(tmp_path):
    empty = VectorIndex.build(np.zeros((0, 4), np.float32), index="flat")
    values, ids = empty.search(np.ones((2, 4), np.float32), 3)
    assert values.shape == ids.shape == (2, 0)
    with pytest.raises(ValueError, match="dimension"):
        empty.search(np.ones((1, 5), np.float32), 1)
    bad = tmp_path / "bad.faiss"
    bad.write_bytes(b"not an index")
    with pytest.raises(GraphLoadError):
        VectorIndex.load(bad)
    with pytest.raises(GraphLoadError, match="no vector index"):
        VectorIndex.load(tmp_path)
