"""kgrag.embed.similarity: the same product as ``@``, on one thread or split over row blocks."""

import numpy as np
import pytest

import kgrag.embed.similarity as matvec_module
from kgrag.embed import matvec


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matvec_equals_matmul(dtype):
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((1001, 37)).astype(dtype)
    vector = rng.standard_normal(37).astype(dtype)
    out = matvec(matrix, vector)
    assert out.dtype == dtype and out.shape == (1001,)
    assert np.allclose(out, matrix @ vector, rtol=1e-5, atol=1e-5)


def test_row_blocks_cover_every_row(monkeypatch):
    monkeypatch.setattr(matvec_module, "PARALLEL_MIN_ELEMENTS", 1)
    monkeypatch.setattr(matvec_module, "_workers", lambda: 3)
    rng = np.random.default_rng(1)
    matrix = rng.standard_normal((10, 4)).astype(np.float32)
    vector = rng.standard_normal(4).astype(np.float32)
    assert np.allclose(matvec(matrix, vector), matrix @ vector, atol=1e-6)
    assert matvec(np.zeros((0, 4), np.float32), vector).shape == (0,)


def test_mixed_precision_and_views():
    rng = np.random.default_rng(2)
    matrix = rng.standard_normal((50, 8)).astype(np.float32)[::2]  # a strided view
    vector = rng.standard_normal(8)  # float64
    out = matvec(matrix, vector)
    assert out.dtype == np.float64
    assert np.allclose(out, matrix @ vector)


@pytest.mark.parametrize("shapes", [((3, 4), (5,)), ((3,), (3,)), ((3, 4), (4, 1))])
def test_shape_errors_are_clear(shapes):
    with pytest.raises(ValueError, match="matvec needs"):
        matvec(np.zeros(shapes[0]), np.zeros(shapes[1]))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_scans_with_a_fresh_pool(monkeypatch):
    """The parent's pool threads do not exist in a fork; the child must not wait on them."""
    import multiprocessing

    monkeypatch.setattr(matvec_module, "PARALLEL_MIN_ELEMENTS", 1)
    monkeypatch.setattr(matvec_module, "_workers", lambda: 2)
    matrix = np.arange(40, dtype=np.float32).reshape(10, 4)
    vector = np.ones(4, dtype=np.float32)
    import threading

    barrier = threading.Barrier(2)
    pool = matvec_module._get_pool()
    list(pool.map(lambda _: barrier.wait(timeout=10), range(2)))  # two workers, both now idle
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        result = pool.apply_async(_child_scan, (matrix, vector))
        assert np.allclose(result.get(timeout=20), matrix @ vector)


def _child_scan(matrix, vector):
    matvec_module.PARALLEL_MIN_ELEMENTS = 1
    matvec_module._workers = lambda: 2
    return matvec(matrix, vector)
