"""UltraQuery's fast forward pass against a plain one written from the layer equations.

``kgrag.methods.ultrag.ultraquery`` sums messages with bag-sums over cache-sized blocks of
receivers, computes the first entity layer only on the nodes the input set reaches, and scores
nodes in blocks, in reused buffers. The reference here does none of that: one message per edge
(an ``edges x dim`` tensor), ``index_add_``, every layer on every node. Both use the packaged
weights; they must agree to 1e-5 on random small graphs (duplicate edges, self-loops, nodes
without edges, one-hot / fuzzy / empty input sets, batches of several relations).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from kgrag.methods.ultrag import _workers, ultraquery
from kgrag.methods.ultrag.ultraquery import DIM, NUM_LAYERS, TypedAdjacency, UltraQueryModel

P = "model.model."


def _messages(h, receivers, senders, types, rel, boundary):
    """``boundary + sum over edges of rel[:, type] * h[sender]``, one message per edge."""
    out = boundary.clone()
    msg = h[senders] * rel[:, types].transpose(0, 1)  # (edges, batch, dim)
    return out.index_add_(0, receivers, msg)


def _layer(w, prefix, h, update):
    lin = torch.cat([h, update], -1) @ w[prefix + "linear.weight"].t() + w[prefix + "linear.bias"]
    norm = F.layer_norm(lin, (DIM,), w[prefix + "layer_norm.weight"], w[prefix + "layer_norm.bias"])
    return F.relu(norm) + h


def _relation_edges(heads, rels, tails, num_relations):
    """The relation graph by sets: ``a`` receives from ``b`` along hh / tt / ht / th."""
    n_types = 2 * num_relations
    head_of = [set() for _ in range(n_types)]
    tail_of = [set() for _ in range(n_types)]
    for h, r, t in zip(heads, rels, tails):
        head_of[r].add(h), tail_of[r].add(t)
        head_of[r + num_relations].add(t), tail_of[r + num_relations].add(h)
    edges = []
    for k, (mine, theirs) in enumerate(((head_of, head_of), (tail_of, tail_of),
                                        (head_of, tail_of), (tail_of, head_of))):
        edges += [(a, b, k) for a in range(n_types) for b in range(n_types)
                  if mine[a] & theirs[b]]
    return (torch.tensor([e[i] for e in edges], dtype=torch.int64) for i in range(3))


def _reference(w, heads, rels, tails, num_nodes, num_relations, x, relations):
    n_types, b = 2 * num_relations, len(relations)
    rr, rs, rt = _relation_edges(heads, rels, tails, num_relations)
    boundary = torch.zeros(n_types, b, DIM)
    boundary[torch.tensor(relations), torch.arange(b)] = 1.0
    h = boundary
    for i in range(NUM_LAYERS):
        p = f"{P}relation_model.layers.{i}."
        meta = w[p + "relation.weight"].unsqueeze(0).expand(b, -1, -1)
        h = _layer(w, p, h, _messages(h, rr, rs, rt, meta, boundary))
    rel_emb = h.transpose(0, 1)  # (b, 2R, d)
    query = rel_emb[torch.arange(b), torch.tensor(relations)]
    heads_t, tails_t = torch.as_tensor(heads), torch.as_tensor(tails)
    receivers = torch.cat([heads_t, tails_t])
    senders = torch.cat([tails_t, heads_t])
    types = torch.cat([torch.as_tensor(rels), torch.as_tensor(rels) + num_relations])
    boundary = torch.as_tensor(x).t().unsqueeze(-1) * query.unsqueeze(0)
    h = boundary
    for i in range(NUM_LAYERS):
        p = f"{P}entity_model.layers.{i}."
        hidden = F.relu(F.linear(rel_emb, w[p + "relation_projection.0.weight"],
                                 w[p + "relation_projection.0.bias"]))
        typed = F.linear(hidden, w[p + "relation_projection.2.weight"],
                         w[p + "relation_projection.2.bias"])
        h = _layer(w, p, h, _messages(h, receivers, senders, types, typed, boundary))
    features = torch.cat([h, query.unsqueeze(0).expand(num_nodes, -1, -1)], -1)
    hidden = F.relu(F.linear(features, w[P + "entity_model.mlp.0.weight"],
                             w[P + "entity_model.mlp.0.bias"]))
    logits = F.linear(hidden, w[P + "entity_model.mlp.2.weight"], w[P + "entity_model.mlp.2.bias"])
    return torch.sigmoid(logits.squeeze(-1)).t()


def _random_graph(rng, num_nodes, num_edges, num_relations):
    heads = rng.integers(0, num_nodes, num_edges)
    tails = rng.integers(0, num_nodes, num_edges)
    rels = rng.integers(0, num_relations, num_edges)
    # a duplicated edge and a self-loop; the last nodes have no edges at all
    heads = np.append(heads, [heads[0], 1]) % max(num_nodes - 3, 1)
    tails = np.append(tails, [tails[0], 1]) % max(num_nodes - 3, 1)
    rels = np.append(rels, [rels[0], 0])
    return heads, rels, tails


@pytest.fixture(scope="module")
def model():
    return UltraQueryModel()


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few slots / nodes, so every test graph spans several of them."""
    monkeypatch.setattr(TypedAdjacency, "BLOCK_SLOTS", 7)
    monkeypatch.setattr(ultraquery.Workspace, "BLOCK", 5)


@pytest.fixture(params=["fused", "torch"])
def summing(request, monkeypatch):
    """Both ways of summing the messages: the fused numba kernel (``fast`` extra) and the
    PyTorch operations (without numba)."""
    if request.param == "fused":
        pytest.importorskip("numba")
    else:
        monkeypatch.setattr(ultraquery, "_fused_kernels", lambda: None)
    return request.param == "fused"


@pytest.fixture(params=[1, 2], ids=["one-thread", "split-rows"])
def threads(request, monkeypatch):
    """One PyTorch thread (every layer on the calling thread) and two, with parts of a few rows
    so that every layer and the scoring are split over the worker threads; yields the names of
    the threads that ran parts."""
    ran: list[str] = []
    if request.param == 2:
        monkeypatch.setattr(ultraquery, "MIN_PART_ROWS", 2)
        run = _workers._in_inference_mode

        def spy(task, lo, hi):
            ran.append(threading.current_thread().name)
            run(task, lo, hi)

        monkeypatch.setattr(_workers, "_in_inference_mode", spy)
    with ultraquery.torch_threads(request.param):
        yield ran


@pytest.mark.parametrize("seed", range(6))
def test_fast_forward_pass_equals_the_plain_one(model, small_blocks, summing, threads, seed):
    rng = np.random.default_rng(seed)
    num_nodes, num_relations = int(rng.integers(8, 40)), int(rng.integers(1, 5))
    heads, rels, tails = _random_graph(rng, num_nodes, int(rng.integers(5, 80)), num_relations)
    graph = model.prepare(heads, rels, tails, num_nodes, num_relations)
    assert len(graph.entities.blocks) > 1
    assert graph.entities.fused is summing and graph.relations.fused is summing
    relations = [int(r) for r in rng.integers(0, 2 * num_relations, 3)]
    one_hot = np.zeros((3, num_nodes), np.float32)
    one_hot[np.arange(3), rng.integers(0, num_nodes, 3)] = 1.0  # the sparse first layer
    fuzzy = rng.random((3, num_nodes)).astype(np.float32)  # the dense first layer
    fuzzy[0, : num_nodes // 2] = 0
    empty = np.zeros((3, num_nodes), np.float32)
    for x in (one_hot, fuzzy, empty):
        expected = _reference(model.weights, heads, rels, tails, num_nodes, num_relations, x,
                              relations)
        together = model.project(graph, x, relations)
        assert together.shape == (3, num_nodes)
        torch.testing.assert_close(together, expected, atol=1e-5, rtol=0)
        for i, r in enumerate(relations):  # batch size 1: another workspace
            torch.testing.assert_close(model.project(graph, x[i:i + 1], [r])[0], expected[i],
                                       atol=1e-5, rtol=0)
    # split over the workers exactly when there are two threads and the fused sums
    assert bool(threads) is (summing and torch.get_num_threads() == 2)
    assert all(name.startswith("kgrag-ultraquery") for name in threads)


def test_graph_without_edges(model, summing):
    """No messages at all: every node keeps only its boundary condition."""
    empty = np.array([], np.int64)
    graph = model.prepare(empty, empty, empty, 4, 2)
    x = np.eye(4, dtype=np.float32)[:2]
    expected = _reference(model.weights, empty, empty, empty, 4, 2, x, [0, 3])
    torch.testing.assert_close(model.project(graph, x, [0, 3]), expected, atol=1e-5, rtol=0)


def test_results_do_not_share_the_reused_buffers(model, summing):
    """Each projection returns its own tensor: a later one does not overwrite it."""
    rng = np.random.default_rng(0)
    heads, rels, tails = _random_graph(rng, 20, 40, 2)
    graph = model.prepare(heads, rels, tails, 20, 2)
    x = np.zeros((1, 20), np.float32)
    x[0, 3] = 1
    first = model.project(graph, x, [0])
    kept = first.clone()
    model.project(graph, rng.random((1, 20)).astype(np.float32), [1])
    assert torch.equal(first, kept)


def test_fused_sums_equal_the_torch_sums_and_refuse_strided_states():
    """The fused kernel and the PyTorch bag-sums give the same sums (float32 rounding) on a
    batch of states; a strided input is read as it is, a strided output (which would be filled
    through a copy and lost) is refused."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(3)
    heads, rels, tails = _random_graph(rng, 30, 120, 3)
    adjacency = ultraquery.entity_graph(heads, rels, tails, 30, 3)
    assert adjacency.fused
    h = torch.randn(30, 2, DIM)
    boundary = torch.randn(30, 2, DIM)
    rel = torch.randn(2, 6, DIM)
    fused = adjacency.aggregate(h, rel, boundary)
    adjacency.fused = False
    plain = adjacency.aggregate(h, rel, boundary)
    torch.testing.assert_close(fused, plain, atol=1e-5, rtol=1e-5)
    adjacency.fused = True
    strided = h.transpose(0, 1).contiguous().transpose(0, 1)  # same values, other strides
    torch.testing.assert_close(adjacency.aggregate(strided, rel, boundary), fused)
    with pytest.raises(ValueError, match="contiguous"):
        adjacency.aggregate(h, rel, boundary, out=torch.empty(2, 30, DIM).transpose(0, 1))


def _chain_graph(rng, num_nodes, num_relations):
    """Edges between nearby node ids only: an anchor's message ball grows a few nodes per
    layer, so every layer runs on the ball with the rest copied from the backgrounds."""
    heads = np.arange(num_nodes - 1)
    tails = heads + 1
    skips = rng.integers(0, num_nodes - 3, num_nodes // 4)
    heads, tails = np.append(heads, skips), np.append(tails, skips + 3)
    rels = rng.integers(0, num_relations, len(heads))
    return heads, rels, tails


def test_far_nodes_copy_the_background_states(model, small_blocks, summing, threads):
    """From a relation's second projection of a small input set on, the nodes outside each
    layer's ball are copied from its background states: equal to the plain pass (one-hot,
    fuzzy and mixed-relation batches), with the backgrounds kept for the relations used."""
    rng = np.random.default_rng(11)
    num_nodes, num_relations = 150, 3
    heads, rels, tails = _chain_graph(rng, num_nodes, num_relations)
    graph = model.prepare(heads, rels, tails, num_nodes, num_relations)
    calls = []
    compute = model.background_states
    try:
        model.background_states = lambda g, r: calls.append(r) or compute(g, r)
        for round_ in range(3):
            relations = [0, 4, 0] if round_ < 2 else [4, 1, 0]
            x = np.zeros((3, num_nodes), np.float32)
            x[0, 70] = 1.0
            x[1, [10, 11]] = [0.3, 0.9]
            x[2, 140] = 0.5
            expected = _reference(model.weights, heads, rels, tails, num_nodes, num_relations,
                                  x, relations)
            torch.testing.assert_close(model.project(graph, x, relations), expected, atol=1e-5,
                                       rtol=0)
    finally:
        del model.background_states
    # relation 0: used twice in the first batch -> computed there; 4 on its second use;
    # 1 only once: none
    assert sorted(calls) == [0, 4] and sorted(graph._background) == [0, 4]
    assert graph._background[0][0] is None and len(graph._background[0]) == NUM_LAYERS
    # a large input set is computed densely: no background is asked for
    dense = rng.random((1, num_nodes)).astype(np.float32)
    torch.testing.assert_close(
        model.project(graph, dense, [1]),
        _reference(model.weights, heads, rels, tails, num_nodes, num_relations, dense, [1]),
        atol=1e-5, rtol=0)
    assert sorted(graph._background) == [0, 4]


def test_backgrounds_are_kept_within_their_budget(model):
    """The byte budget holds as many relations' backgrounds as fit; a new relation replaces
    the least used one only once it has been used twice as often; 0 keeps none."""
    rng = np.random.default_rng(2)
    heads, rels, tails = _chain_graph(rng, 60, 4)
    graph = model.prepare(heads, rels, tails, 60, 4, background_bytes=0)
    assert graph.backgrounds(model, [0]) is None and graph.backgrounds(model, [0]) is None
    assert not graph._background
    graph = model.prepare(heads, rels, tails, 60, 4)
    graph.background_bytes = 2 * graph.background_size  # two relations
    for r in (0, 0, 1, 1):
        graph.backgrounds(model, [r])
    assert sorted(graph._background) == [0, 1]
    assert graph.backgrounds(model, [2]) is None  # first use
    assert graph.backgrounds(model, [2]) is None  # used as often as the kept ones: no room
    assert graph.backgrounds(model, [2]) is None  # 3 uses: not twice the kept ones' 2
    kept = graph.backgrounds(model, [2])  # 4 uses: replaces one
    assert kept is not None and sorted(graph._background) in ([0, 2], [1, 2])
    assert len(graph._background) * graph.background_size <= graph.background_bytes
    with pytest.raises(ValueError, match="background_bytes"):
        model.prepare(heads, rels, tails, 60, 4, background_bytes=-1)


def test_sums_for_some_receivers_equal_those_rows_of_all_sums(summing):
    """``aggregate_rows`` gives exactly the rows of ``aggregate`` it is asked for, in order."""
    rng = np.random.default_rng(4)
    heads, rels, tails = _random_graph(rng, 40, 150, 3)
    adjacency = ultraquery.entity_graph(heads, rels, tails, 40, 3)
    assert adjacency.fused is summing
    h, boundary, rel = torch.randn(40, 2, DIM), torch.randn(40, 2, DIM), torch.randn(2, 6, DIM)
    every = adjacency.aggregate(h, rel, boundary)
    rows = np.array([39, 0, 17, 17, 5])
    torch.testing.assert_close(adjacency.aggregate_rows(h, rel, boundary, rows),
                               every[torch.from_numpy(rows)], atol=1e-6, rtol=0)
    assert adjacency.aggregate_rows(h, rel, boundary, rows[:0]).shape == (0, 2, DIM)


def test_every_row_of_a_batch_counts_as_a_use(model):
    """A batch row after one without backgrounds still counts: its relation's next use is its
    second and gets them."""
    rng = np.random.default_rng(5)
    heads, rels, tails = _chain_graph(rng, 40, 3)
    graph = model.prepare(heads, rels, tails, 40, 3)
    assert graph.backgrounds(model, [1, 2]) is None  # both first uses
    kept = graph.backgrounds(model, [2])
    assert kept is not None and sorted(graph._background) == [2]
    assert graph._anchor_uses == {1: 1, 2: 2}
