"""Exactness of the fast per-query preparation of UltRAG's neural executor on large graphs.

* SEPPR (Alg. 2) pushes from the non-zero nodes while they are few instead of multiplying by
  the whole adjacency: the scores must be *bit for bit* those of the plain pull product (so the
  top-k node set and its order cannot change).
* :class:`TypedAdjacency` sorts its edges with one packed key: its slots, bags and blocks must
  equal the ones of a plain ``np.unique`` + ``np.lexsort`` construction, on both key paths.
"""

from __future__ import annotations

import numpy as np
import pytest

from kgrag import KnowledgeGraph
from kgrag.methods.ultrag import seppr
from kgrag.methods.ultrag.ultraquery import TypedAdjacency, _sorted_slots


def _random_graph(rng: np.random.Generator, n: int, e: int, r: int) -> KnowledgeGraph:
    # skewed heads / tails (hubs), parallel edges of different relations, self-loops, and
    # nodes without edges (ids above n - 5 are never drawn)
    heads = np.minimum(rng.zipf(1.6, e) - 1, n - 6)
    tails = rng.integers(0, n - 5, e)
    rels = rng.integers(0, r, e)
    return KnowledgeGraph.from_arrays(heads, rels, tails, [f"e{i}" for i in range(n)],
                                      [f"r{i}" for i in range(r)])


def _plain_scores(kg: KnowledgeGraph, seeds, alpha: float, steps: int,
                  symmetric: bool) -> np.ndarray:
    """Algorithm 2 with one pull product over every row per step (the original code)."""
    import scipy.sparse as sp

    heads, tails = kg.heads.astype(np.int64), kg.tails.astype(np.int64)
    src, dst = ((np.concatenate([heads, tails]), np.concatenate([tails, heads])) if symmetric
                else (heads, tails))
    degree = np.bincount(src, minlength=kg.num_nodes).astype(np.float64)
    a_t = sp.csr_matrix((np.ones(len(src)), (dst, src)), shape=(kg.num_nodes, kg.num_nodes))
    inv = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    x0 = seppr.seed_vector(kg.num_nodes, seeds)
    x = x0.copy()
    for _ in range(steps):
        x = alpha * (a_t @ (x * inv)) + (1 - alpha) * x0
    return x


@pytest.mark.parametrize("share", [0.0, 0.05, 0.4, 1.0])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_seppr_push_equals_pull_bit_for_bit(monkeypatch, share, symmetric, seed):
    rng = np.random.default_rng(seed)
    kg = _random_graph(rng, n=int(rng.integers(50, 3000)), e=int(rng.integers(100, 8000)),
                       r=int(rng.integers(1, 12)))
    monkeypatch.setattr(seppr, "PUSH_SHARE", share)  # 0: always pull, 1: push every step
    fuzzy = np.zeros(kg.num_nodes)
    fuzzy[rng.integers(0, kg.num_nodes, 3)] = rng.random(3) + 0.1
    for seeds in ([int(rng.integers(kg.num_nodes))], rng.integers(0, kg.num_nodes, 4), fuzzy,
                  [kg.num_nodes - 1]):  # the last: a node without edges
        for alpha, steps in ((seppr.PAPER_ALPHA, seppr.PAPER_STEPS), (0.5, 8), (1.0, 2)):
            got = seppr.seppr_scores(kg, seeds, alpha=alpha, steps=steps, symmetric=symmetric)
            want = _plain_scores(kg, seeds, alpha, steps, symmetric)
            assert np.array_equal(got, want)
            k = int(rng.integers(1, kg.num_nodes))
            nodes = seppr.seppr_nodes(kg, seeds, k=k, alpha=alpha, steps=steps,
                                      symmetric=symmetric)
            support = np.flatnonzero(want > 0)
            order = support[np.lexsort((support, -want[support]))][:k]
            assert np.array_equal(nodes, order)


def _plain_slots(receivers, types, senders, num_types):
    """``np.unique`` + ``np.lexsort``: what TypedAdjacency did before the packed sort."""
    slots, slot_of_edge = np.unique(receivers * num_types + types, return_inverse=True)
    slot_of_edge = slot_of_edge.reshape(-1)
    order = np.lexsort((senders, slot_of_edge))
    counts = np.bincount(slot_of_edge, minlength=len(slots))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return slots, starts, senders[order]


@pytest.mark.parametrize("seed", range(6))
def test_sorted_slots_equal_unique_and_lexsort(seed):
    rng = np.random.default_rng(seed)
    n, t, e = int(rng.integers(1, 500)), int(rng.integers(1, 9)), int(rng.integers(0, 3000))
    receivers, senders = rng.integers(0, n, e), rng.integers(0, n, e)
    types = rng.integers(0, t, e)
    want = _plain_slots(receivers, types, senders, t)
    # a huge node count forces the lexsort path (the packed key would overflow int64)
    for num_nodes in (n, 2**60):
        got = _sorted_slots(receivers, types, senders, t, num_nodes)
        for a, b in zip(got, want):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(4))
def test_typed_adjacency_blocks_and_reach(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    n, t, e = int(rng.integers(2, 400)), int(rng.integers(1, 7)), int(rng.integers(0, 4000))
    receivers, senders = rng.integers(0, n - 1, e), rng.integers(0, n - 1, e)
    types = rng.integers(0, t, e)
    monkeypatch.setattr(TypedAdjacency, "BLOCK_SLOTS", int(rng.integers(1, 64)))
    adj = TypedAdjacency(receivers, senders, types, n, t)
    slots, starts, slot_senders = _plain_slots(receivers, types, senders, t)
    assert adj.num_slots == len(slots)
    assert np.array_equal(adj._slot_types.numpy(), slots % t)
    bags, node_slots = [], []
    for _node, _stop, first, end, block_senders, offsets, node_offsets in adj.blocks:
        bags.append(block_senders.numpy())
        node_slots.append(node_offsets.numpy() + first)
        assert np.array_equal(offsets.numpy() + (starts[first] if end > first else 0),
                              starts[first:end])
    assert np.array_equal(np.concatenate(bags), slot_senders)
    receiver_of_slot = slots // t
    assert np.array_equal(np.concatenate(node_slots),
                          np.searchsorted(receiver_of_slot, np.arange(n)))
    # reached: the nodes themselves and every receiver of a message from one of them
    for picked in (rng.integers(0, n, 3), np.array([n - 1]), np.arange(n)):
        want = set(picked.tolist()) | set(receivers[np.isin(senders, picked)].tolist())
        assert adj.reached(picked).tolist() == sorted(want)
        # grown a layer at a time from the last layer's new nodes: the same balls
        ball = frontier = np.unique(picked)
        for _ in range(4):
            before = ball
            ball, frontier = adj.grow(ball, frontier)
            assert ball.tolist() == adj.reached(before).tolist()
            assert frontier.tolist() == sorted(set(ball.tolist()) - set(before.tolist()))
