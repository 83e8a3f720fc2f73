"""The worker threads UltraQuery splits its layers over (``kgrag.methods.ultrag._workers``):
thread counts restored, every part run before returning (also on failure), parts as asked."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

from kgrag.methods.ultrag import _workers, ultraquery
from kgrag.methods.ultrag.ultraquery import torch_threads


def test_layer_workers_use_one_pytorch_thread_each_and_leave_the_callers_alone():
    with torch_threads(2):
        with _workers.layer_workers() as workers:
            assert workers is not None and workers.count == 2
            assert torch.get_num_threads() == 2  # the caller's setting is not touched ...
            fresh: list[int] = []  # ... nor what a thread starting PyTorch now gets
            thread = threading.Thread(target=lambda: fresh.append(torch.get_num_threads()))
            thread.start(), thread.join()
            assert fresh == [2]
            with _workers.layer_workers() as nested:  # re-entrant: the same pool
                assert nested is workers
            seen: list[tuple[str, int]] = []
            _workers.run_parts(workers, lambda lo, hi: seen.append(
                (threading.current_thread().name, torch.get_num_threads())), [0, 1, 2, 3])
            assert len(seen) == 3
            assert all(name.startswith("kgrag-ultraquery") and count == 1
                       for name, count in seen)
        assert torch.get_num_threads() == 2
    with torch_threads(1), _workers.layer_workers() as workers:
        assert workers is None  # one thread: everything on the caller
    with torch_threads(2), _workers.layer_workers(enabled=False) as workers:
        assert workers is None and torch.get_num_threads() == 2


def test_run_parts_covers_every_range_once_and_runs_in_inference_mode():
    done: list[tuple[int, int]] = []
    modes: list[bool] = []

    def task(lo: int, hi: int) -> None:
        done.append((lo, hi))
        modes.append(torch.is_inference_mode_enabled())

    bounds = [0, 3, 3, 10, 12]
    with torch_threads(2), _workers.layer_workers() as workers:
        _workers.run_parts(workers, task, bounds)
    assert sorted(done) == [(0, 3), (3, 3), (3, 10), (10, 12)] and all(modes)
    done.clear()
    _workers.run_parts(None, task, bounds)  # on this thread, in order
    assert done == [(0, 3), (3, 3), (3, 10), (10, 12)]


def test_a_failing_part_is_raised_after_every_started_part_has_finished():
    finished: list[int] = []

    def task(lo: int, hi: int) -> None:
        if lo == 0:
            raise RuntimeError("part 0 failed")
        time.sleep(0.05)
        finished.append(lo)

    with torch_threads(2), _workers.layer_workers() as workers:
        with pytest.raises(RuntimeError, match="part 0 failed"):
            _workers.run_parts(workers, task, [0, 1, 2, 3, 4])
        running = [f for f in threading.enumerate() if f.name.startswith("kgrag-ultraquery")]
    # whatever started has finished when run_parts returns; nothing runs afterwards
    count = len(finished)
    time.sleep(0.1)
    assert len(finished) == count and running


@pytest.mark.parametrize(("count", "parts", "least", "expected"), [
    (10, 4, 2, [0, 2, 5, 7, 10]),
    (10, 4, 4, [0, 5, 10]),  # at least 4 rows per part: two parts
    (3, 4, 4, [0, 3]),  # fewer rows than one part: one
    (0, 4, 1, [0, 0]),
])
def test_even_bounds(count, parts, least, expected):
    assert _workers.even_bounds(count, parts, least) == expected


def test_thread_buffer_is_kept_per_thread_and_shape():
    first = _workers.thread_buffer("probe", (4, 2))
    assert _workers.thread_buffer("probe", (4, 2)) is first
    assert _workers.thread_buffer("probe", (5, 2)).shape == (5, 2)
    other: list[torch.Tensor] = []
    thread = threading.Thread(target=lambda: other.append(_workers.thread_buffer("probe", (5, 2))))
    thread.start(), thread.join()
    assert other[0] is not _workers.thread_buffer("probe", (5, 2))


def test_row_bounds_split_by_edges_and_rows(monkeypatch):
    """A receiver costs its edges plus UPDATE_EDGES: a hub with 100 in-edges weighs as much
    as 13 leaves; no part is shorter than MIN_PART_ROWS."""
    heads = np.zeros(100, np.int64)
    tails = np.arange(1, 101)
    adjacency = ultraquery.entity_graph(heads, np.zeros(100, np.int64), tails, 101, 1)
    monkeypatch.setattr(ultraquery, "UPDATE_EDGES", 7)
    monkeypatch.setattr(ultraquery, "MIN_PART_ROWS", 1)
    # costs: hub 100 + 7, each leaf 1 + 7; half of 907 is reached after the hub and 44 leaves
    assert adjacency.row_bounds(2) == [0, 45, 101]
    assert adjacency.row_bounds(2) is adjacency.row_bounds(2)  # kept
    monkeypatch.setattr(ultraquery, "MIN_PART_ROWS", 60)
    adjacency._row_bounds.clear()
    assert adjacency.row_bounds(2) == [0, 101]


def test_the_sums_constant_row_length_is_the_models_width():
    """The fused sums compile a batch of one with a constant row length: the model's."""
    kernels = pytest.importorskip("kgrag.methods.ultrag._kernels")
    assert kernels.STATE_WIDTH == ultraquery.DIM


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_splits_layers_over_a_fresh_pool():
    """The parent's worker threads do not exist in a fork; the child must not wait on them."""
    import multiprocessing

    with torch_threads(2), _workers.layer_workers() as workers:
        assert workers is not None
        barrier = threading.Barrier(2)
        _workers.run_parts(workers, lambda lo, hi: barrier.wait(timeout=10), [0, 1, 2])
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        assert pool.apply_async(_child_parts).get(timeout=30) == [(0, 1), (1, 2), (2, 3)]


def _child_parts() -> list[tuple[int, int]]:
    done: list[tuple[int, int]] = []
    with torch_threads(2), _workers.layer_workers() as workers:
        assert workers is not None
        _workers.run_parts(workers, lambda lo, hi: done.append((lo, hi)), [0, 1, 2, 3])
    return sorted(done)
