"""UltraQuery, the neural relation projection UltRAG executes its queries with (plain PyTorch).

UltraQuery (Galkin et al., NeurIPS 2024) answers a projection ``x -> r`` for *any* graph without
training on it: relations are represented only by how they interact with each other, so the
published checkpoint transfers zero-shot. Our implementation of its forward pass (no PyG, no
torch-scatter; messages are summed by one fused numba pass per layer with the ``fast`` extra,
by PyTorch bag-sums without it -- :class:`TypedAdjacency`):

1. **Graph with inverses.** Every stored edge ``(h, r, t)`` also exists as ``(t, r + R, h)``, so
   the model sees ``2R`` relation types.
2. **Relation graph.** Its nodes are the ``2R`` relation types; an edge ``a <- b`` of one of four
   *meta-relations* joins two relations that share an entity: ``hh`` (both have it as head),
   ``tt`` (both as tail), ``ht`` (head of ``a``, tail of ``b``) and ``th`` (the reverse).
3. **Relation model** (6 layers): a conditional message-passing network on the relation graph,
   started from an all-ones vector on the query relation ``q``, gives every relation an
   embedding *relative to* ``q``.
4. **Entity model** (6 layers): the same kind of network on the entity graph, its edges typed by
   those relation embeddings. The boundary condition is the fuzzy input set times ``q``'s
   embedding -- a multi-source start, so a projection accepts any fuzzy set, not only a one-hot
   entity (what UltRAG's linked leaves need).
5. **Scoring MLP**: each node's final state, concatenated with ``q``'s embedding, gives a logit;
   the projection's output is its sigmoid (independent per node, not normalised).

Each layer computes ``update[i] = boundary[i] + sum over edges j -> i of rel[type] * h[j]`` and
``h' = relu(layer_norm(W [h, update] + b)) + h``. The direction in which messages travel along
the stored edge list, and every other detail that changes numbers, was matched against the
public reference implementation (DeepGraphLearning/ULTRA at commit 427966a): the golden-output
test (``tests/test_ultrag_neural.py``, fixtures in ``tests/data/ultraquery/``) checks all-entity
scores to 1e-4.

The weights (168,705 parameters, MIT) ship as ``weights/ultraquery.npz`` and are read with
``numpy.load(allow_pickle=False)``; :func:`load_weights` also takes another ``.npz`` in the same
layout. Inference only: everything runs under ``torch.inference_mode()``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.compiled import compiled_module
from kgrag.methods.ultrag._workers import (
    Workers,
    even_bounds,
    layer_workers,
    parts,
    run_parts,
    thread_buffer,
)

NUM_LAYERS = 6
DIM = 64
#: the layer norms' epsilon (PyTorch's default, as the checkpoint was trained with)
LAYER_NORM_EPS = 1e-5
#: memory for the background states of a prepared graph (:meth:`PreparedGraph.backgrounds`):
#: five layers x nodes x 64 float32 per query relation, 55 MB on MetaQA's 43k nodes, so its 18
#: relation types fit in 1 GiB; a graph whose one relation needs more than this gets none
BACKGROUND_BYTES = 1 << 30
#: meta-relations of the relation graph, in the checkpoint's embedding order
META_RELATIONS = ("hh", "tt", "ht", "th")
#: a layer split over threads (:mod:`._workers`): fewest rows per part, and a receiver's
#: update in edges' worth of message sums (MetaQA: about 230 ns per row's update on one core
#: against 34 ns per edge)
MIN_PART_ROWS = 1024
UPDATE_EDGES = 7
_PREFIX = "model.model."


def default_weights_path() -> Path:
    """The packaged UltraQuery checkpoint (``kgrag/methods/ultrag/weights/ultraquery.npz``)."""
    return Path(str(resources.files("kgrag.methods.ultrag") / "weights" / "ultraquery.npz"))


def load_weights(path: str | Path | None = None) -> dict[str, Any]:
    """The checkpoint as ``{key: torch.Tensor}`` (float32), read with numpy, never unpickled.

    ``path`` defaults to the packaged checkpoint; another file must use the same keys (the
    ULTRA repository's state-dict names, e.g. ``model.model.entity_model.mlp.0.weight``).
    """
    import torch

    file = Path(path) if path is not None else default_weights_path()
    with np.load(file, allow_pickle=False) as npz:
        arrays = {k: np.asarray(npz[k], dtype=np.float32) for k in npz.files}
    missing = [k for k in _expected_keys() if k not in arrays]
    if missing:
        raise ValueError(f"{file} is not an UltraQuery checkpoint: missing {missing[:3]}"
                         f"{' ...' if len(missing) > 3 else ''}")
    for key, shape in _expected_keys().items():
        if arrays[key].shape != shape:
            raise ValueError(f"{file}: {key} has shape {arrays[key].shape}, expected {shape}")
    return {k: torch.from_numpy(v) for k, v in arrays.items()}


def _expected_keys() -> dict[str, tuple[int, ...]]:
    keys: dict[str, tuple[int, ...]] = {}
    for part in ("relation_model", "entity_model"):
        for i in range(NUM_LAYERS):
            p = f"{_PREFIX}{part}.layers.{i}."
            keys[p + "linear.weight"] = (DIM, 2 * DIM)
            keys[p + "linear.bias"] = (DIM,)
            keys[p + "layer_norm.weight"] = (DIM,)
            keys[p + "layer_norm.bias"] = (DIM,)
            if part == "relation_model":
                keys[p + "relation.weight"] = (len(META_RELATIONS), DIM)
            else:
                for j in (0, 2):
                    keys[p + f"relation_projection.{j}.weight"] = (DIM, DIM)
                    keys[p + f"relation_projection.{j}.bias"] = (DIM,)
    keys[_PREFIX + "entity_model.mlp.0.weight"] = (2 * DIM, 2 * DIM)
    keys[_PREFIX + "entity_model.mlp.0.bias"] = (2 * DIM,)
    keys[_PREFIX + "entity_model.mlp.2.weight"] = (1, 2 * DIM)
    keys[_PREFIX + "entity_model.mlp.2.bias"] = (1,)
    return keys


# ------------------------------------------------------------------------------ typed message
# passing
class TypedAdjacency:
    """Sum of typed messages into each receiver, in cache-sized blocks of receivers.

    Edges ``sender -> receiver`` with a type. Messages are ``rel[type] * h[sender]``; grouping
    the edges by ``(receiver, type)`` *slots* gives, per receiver, ``sum over its slots of
    rel[type] * (sum of h over the slot's senders)`` -- one per-dimension scaling per slot, not
    per edge, and never an ``edges x dim`` tensor.

    Both sums are bag-sums (``embedding_bag`` with ``mode="sum"``: a product with a 0/1 CSR
    matrix), whose kernel is several times faster on one core than ``scipy.sparse`` (MetaQA,
    267k edges x 64: about 2 ms against 12-16 ms). The receivers go through in blocks of at
    most :data:`BLOCK_SLOTS` slots, so a block's slot sums stay in cache between being summed,
    scaled and summed again, in buffers reused from one block, layer and query to the next.

    With numba installed (``fused``) all of that is one pass instead
    (:func:`kgrag.methods.ultrag._kernels.typed_sum`): each receiver's sums are built in two
    row-sized accumulators, the senders' rows prefetched a few edges ahead (MetaQA, whole
    projections alternated with the PyTorch path: 72-87 against 86-98 ms).
    """

    #: most slots per block of receivers (a block's slot sums: this many rows of batch x dim)
    BLOCK_SLOTS = 8192

    def __init__(self, receivers: np.ndarray, senders: np.ndarray, types: np.ndarray,
                 num_nodes: int, num_types: int) -> None:
        import torch

        receivers = np.asarray(receivers, np.int64)
        senders = np.asarray(senders, np.int64)
        types = np.asarray(types, np.int64)
        self.num_nodes = num_nodes
        self.num_edges = len(receivers)
        num_types = max(num_types, 1)
        # int32 indices when they fit (the bag-sum kernel is a little faster with them)
        index_dtype = np.int32 if max(num_nodes, len(receivers)) < 2**31 else np.int64
        # slots sorted by receiver, then type (a receiver sums its slots in type order), and
        # bags of senders, one per slot, sorted by sender; duplicate edges stay duplicates
        # (summed, as the reference sums them)
        slots, slot_start, slot_senders = _sorted_slots(receivers, types, senders, num_types,
                                                        num_nodes)
        slot_senders = slot_senders.astype(index_dtype)
        slot_receiver = slots // num_types
        self.num_slots = len(slots)
        # first slot of each node, and the end of the last
        node_start = np.searchsorted(slot_receiver, np.arange(num_nodes + 1))
        self._slot_types = torch.from_numpy(slots % num_types)
        #: per block: (first node, end node, first slot, end slot, its slots' senders, their
        #: offsets, its nodes' slot offsets) -- offsets relative to the block
        self.blocks: list[tuple[int, int, int, int, Any, Any, Any]] = []
        node = 0
        while node < num_nodes:
            first_slot = int(node_start[node])
            # the most nodes whose slots fit in one block (at least one node)
            stop = int(np.searchsorted(node_start, first_slot + self.BLOCK_SLOTS, "right")) - 1
            stop = min(max(stop, node + 1), num_nodes)
            end_slot = int(node_start[stop])
            end_edge = int(slot_start[end_slot]) if end_slot < self.num_slots else self.num_edges
            first_edge = int(slot_start[first_slot]) if first_slot < end_slot else end_edge
            self.blocks.append((
                node, stop, first_slot, end_slot,
                torch.from_numpy(slot_senders[first_edge:end_edge].copy()),
                torch.from_numpy((slot_start[first_slot:end_slot] - first_edge)
                                 .astype(index_dtype)),
                torch.from_numpy((node_start[node:stop] - first_slot).astype(index_dtype))))
            node = stop
        #: most slots in one block
        self.max_block_slots = max((b[3] - b[2] for b in self.blocks), default=0)
        self._arange = torch.arange(self.max_block_slots, dtype=torch.int32
                                    if index_dtype == np.int32 else torch.int64)
        # each sender's receivers (sorted by sender), to grow the ball of nodes a sparse input
        # set reaches one layer at a time (:meth:`grow`)
        self._fanout_start = np.zeros(num_nodes + 1, np.int64)
        np.cumsum(np.bincount(senders, minlength=num_nodes), out=self._fanout_start[1:])
        self._fanout = receivers[np.argsort(senders, kind="stable")].astype(index_dtype)
        edge_start = np.append(slot_start, self.num_edges)
        #: the same structure as flat arrays, for the fused kernel (:mod:`._kernels`)
        self._node_start = np.asarray(node_start, np.int64)
        self._slot_start = np.asarray(edge_start, np.int64)
        self._slot_senders = slot_senders
        #: whether :meth:`aggregate` runs the fused numba kernel (numba installed); the
        #: PyTorch operations otherwise (both tested)
        self.fused = _fused_kernels() is not None
        self._row_bounds: dict[int, list[int]] = {}

    def reached(self, nodes: np.ndarray) -> np.ndarray:
        """Sorted ids of ``nodes`` and of every node receiving a message from one of them."""
        nodes = np.unique(np.asarray(nodes, np.int64))
        return self.grow(nodes, nodes)[0]

    def grow(self, ball: np.ndarray, frontier: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(ball plus every receiver of a message from frontier, the nodes that added)``,
        both sorted. Layer after layer, only the nodes the ball gained last time (the
        ``frontier``) can send to nodes outside it, so growing the ball costs their edges only,
        not a pass over the graph (start with ``frontier = ball``)."""
        starts = self._fanout_start[frontier]
        counts = self._fanout_start[frontier + 1] - starts
        total = int(counts.sum())
        if total == 0:
            return ball, frontier[:0]
        # the positions of the frontier's receivers: each sender's run, one after another
        firsts = np.cumsum(counts) - counts
        receivers = self._fanout[np.repeat(starts - firsts, counts) + np.arange(total)]
        before = np.zeros(self.num_nodes, bool)
        before[ball] = True
        inside = before.copy()
        inside[receivers] = True
        return np.flatnonzero(inside), np.flatnonzero(inside > before)

    def aggregate(self, h: Any, rel: Any, boundary: Any, out: Any = None,
                  scratch: Any = None) -> Any:
        """``boundary + sum_{j -> i} rel[:, type] * h[j]``, into ``out`` (or a new tensor).

        ``h`` / ``boundary`` / ``out``: ``(num_nodes, batch, dim)``, contiguous; ``rel``:
        ``(batch, num_types, dim)``; ``scratch``: ``max_block_slots x batch x dim`` floats for
        a block's scalings (or None: allocated here).
        """
        import torch
        import torch.nn.functional as F

        n, b, d = h.shape
        if out is None:
            out = torch.empty_like(boundary)
        if self.fused:
            return self._fused_aggregate(h, rel, boundary, out)
        if scratch is None:
            scratch = torch.empty(self.max_block_slots * b * d)
        flat, flat_out, flat_boundary = (t.reshape(n, b * d) for t in (h, out, boundary))
        per_type = rel.transpose(0, 1).reshape(-1, b * d)  # (types, batch * dim)
        for node, stop, first_slot, end_slot, senders, slot_offsets, node_offsets in self.blocks:
            block_out = flat_out[node:stop]
            if end_slot == first_slot:  # no messages into these nodes
                block_out.copy_(flat_boundary[node:stop])
                continue
            width = (end_slot - first_slot) * b * d
            # the block's two bag-sums are its only new tensors (embedding_bag takes no
            # output argument); at most BLOCK_SLOTS rows, they stay in cache
            sums = F.embedding_bag(senders, flat, slot_offsets, mode="sum")
            sums.mul_(torch.index_select(per_type, 0, self._slot_types[first_slot:end_slot],
                                         out=scratch[:width].view(-1, b * d)))
            received = F.embedding_bag(self._arange[:end_slot - first_slot], sums,
                                       node_offsets, mode="sum")
            torch.add(received, flat_boundary[node:stop], out=block_out)
        return out

    def aggregate_rows(self, h: Any, rel: Any, boundary: Any, rows: np.ndarray) -> Any:
        """:meth:`aggregate` for the receivers ``rows`` only: ``(len(rows), batch, dim)``, row
        ``i`` for node ``rows[i]``. One pass over just those receivers' edges with numba; the
        PyTorch path sums every receiver and keeps the rows asked for (same values)."""
        import torch

        _, b, d = h.shape
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        if not self.fused:
            return self.aggregate(h, rel, boundary)[torch.from_numpy(rows)]
        out = torch.empty(len(rows), b, d)
        flat_h, per_type, flat_boundary = self._kernel_inputs(h, rel, boundary)
        _fused_kernels().typed_sum_rows(flat_h, per_type, flat_boundary,
                                        out.view(len(rows), b * d).numpy(), rows,
                                        *self.kernel_graph)
        return out

    @staticmethod
    def _kernel_inputs(h: Any, rel: Any, boundary: Any) -> tuple[np.ndarray, ...]:
        """``(h, per-type vectors, boundary)`` as the fused kernels read them: C-contiguous
        float32 ``(nodes, batch * dim)`` / ``(types, batch * dim)`` arrays (a strided or
        other-typed input is copied)."""
        import torch

        n, b, d = h.shape
        flat_h, flat_boundary = (t.to(torch.float32).reshape(n, b * d).contiguous().numpy()
                                 for t in (h, boundary))
        per_type = np.ascontiguousarray(
            rel.transpose(0, 1).reshape(-1, b * d).numpy(), dtype=np.float32)
        return flat_h, per_type, flat_boundary

    def range_summer(self, h: Any, rel: Any, boundary: Any, out: Any
                     ) -> Callable[[int, int], None]:
        """``sums(lo, hi)``: :meth:`aggregate` of the receivers ``lo:hi`` into those rows of
        ``out`` with the fused kernel (so that threads can share a layer's receivers); the
        inputs are prepared once, here. Needs the fused kernel and a contiguous float32 ``out``."""
        import torch

        kernel = _fused_kernels().typed_sum
        n, b, d = h.shape
        if not out.is_contiguous() or out.dtype != torch.float32:
            raise ValueError("aggregate writes into a contiguous float32 tensor only")
        flat_h, per_type, flat_boundary = self._kernel_inputs(h, rel, boundary)
        flat_out = out.view(n, b * d).numpy()
        slots = self.kernel_graph

        def sums(lo: int, hi: int) -> None:
            kernel(flat_h, per_type, flat_boundary, flat_out, *slots, lo, hi)

        return sums

    @property
    def kernel_graph(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(node_start, slot_start, slot_types, senders)``: the slots as the fused kernels
        (:mod:`._kernels`) read them."""
        return self._node_start, self._slot_start, self._slot_types.numpy(), self._slot_senders

    def row_bounds(self, parts: int) -> list[int]:
        """Receiver ranges ``bounds[i]:bounds[i + 1]`` of about equal work for a layer split
        into ``parts`` (kept per count): a receiver costs its edges plus about
        :data:`UPDATE_EDGES` edges' worth of update; at most one part per
        :data:`MIN_PART_ROWS` receivers (a small graph is not worth splitting)."""
        found = self._row_bounds.get(parts)
        if found is None:
            edges = np.diff(self._slot_start[self._node_start])
            work = np.cumsum(edges + UPDATE_EDGES, dtype=np.float64)
            count = max(1, min(parts, self.num_nodes // MIN_PART_ROWS))
            total = float(work[-1]) if len(work) else 0.0
            cuts = np.searchsorted(work, total * np.arange(1, count) / count) + 1
            found = sorted({0, self.num_nodes, *(int(c) for c in cuts)})
            self._row_bounds[parts] = found
        return found

    def _fused_aggregate(self, h: Any, rel: Any, boundary: Any, out: Any) -> Any:
        """:meth:`aggregate` by :func:`._kernels.typed_sum`, on this thread (a layer split
        over threads runs :meth:`range_summer`'s parts instead, :mod:`._workers`)."""
        # (a strided or other-typed input is copied; the output must be written in place)
        self.range_summer(h, rel, boundary, out)(0, h.shape[0])
        return out


def _fused_kernels() -> Any:
    """The module of fused kernels (:mod:`._kernels`), or None without numba."""
    return compiled_module("kgrag.methods.ultrag._kernels")


def _sorted_slots(receivers: np.ndarray, types: np.ndarray, senders: np.ndarray,
                  num_types: int, num_nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(slots, first edge of each slot, senders)`` of typed edges sorted by
    ``(receiver, type, sender)``, slot key ``receiver * num_types + type``.

    One plain sort of a packed int64 key (no permutation, no second sort) when
    ``(slot * num_nodes + sender)`` fits; ``np.lexsort`` otherwise. Equal keys are identical
    edges, so the order among them does not matter and both give the same arrays.
    """
    slot_of = receivers * num_types + types
    if len(slot_of) and (int(slot_of.max()) + 1) * max(num_nodes, 1) < 2**62:
        key = slot_of * num_nodes + senders
        key.sort()
        sorted_senders = key % num_nodes
        sorted_slots = key // num_nodes
    else:
        order = np.lexsort((senders, slot_of))
        sorted_slots, sorted_senders = slot_of[order], senders[order]
    first = np.empty(len(sorted_slots), bool)
    first[:1] = True
    np.not_equal(sorted_slots[1:], sorted_slots[:-1], out=first[1:])
    slot_start = np.flatnonzero(first)
    return sorted_slots[slot_start], slot_start, sorted_senders


def relation_graph(heads: np.ndarray, rels: np.ndarray, tails: np.ndarray, num_nodes: int,
                   num_relations: int) -> TypedAdjacency:
    """The relation graph of a graph with ``num_relations`` base relations (``2R`` nodes).

    Built over the edges *with* inverses: relation ``a`` receives from ``b`` along meta-relation
    ``hh`` when some entity is the head of an ``a`` edge and of a ``b`` edge, ``tt`` for a shared
    tail, ``ht`` when an ``a`` head is a ``b`` tail, ``th`` when an ``a`` tail is a ``b`` head.
    Self-pairs (``a == b``) are included, as in the reference.
    """
    import scipy.sparse as sp

    n_types = 2 * num_relations
    src = np.concatenate([heads, tails]).astype(np.int64)
    typ = np.concatenate([rels, rels + num_relations]).astype(np.int64)
    # incidence: E_head[v, a] = 1 when v is the head of some edge of type a. With inverse
    # edges the tails of type a are the heads of its inverse, so E_tail = E_head with the two
    # halves of its columns swapped (P), and one product gives all four meta-relations:
    # hh = E_h'E_h = M, tt = P'MP, ht = E_h'E_t = MP, th = P'M.
    e_head = sp.csr_matrix((np.ones(len(src), np.float32), (src, typ)),
                           shape=(num_nodes, n_types))
    e_head.data[:] = 1
    shared = (e_head.T @ e_head).tocoo()
    swap = np.concatenate([np.arange(num_relations, n_types), np.arange(num_relations)])
    receivers, senders, types = [], [], []
    for k, (rows, cols) in enumerate(((shared.row, shared.col),
                                      (swap[shared.row], swap[shared.col]),
                                      (shared.row, swap[shared.col]),
                                      (swap[shared.row], shared.col))):
        receivers.append(rows.astype(np.int64))
        senders.append(cols.astype(np.int64))
        types.append(np.full(len(rows), k, np.int64))
    return TypedAdjacency(np.concatenate(receivers), np.concatenate(senders),
                          np.concatenate(types), n_types, len(META_RELATIONS))


def entity_graph(heads: np.ndarray, rels: np.ndarray, tails: np.ndarray, num_nodes: int,
                 num_relations: int) -> TypedAdjacency:
    """The entity graph with inverse edges, messages flowing as the checkpoint was trained.

    The reference stores ``[(h, t, r), (t, h, r + R)]`` and its fused kernel accumulates into
    the *first* endpoint: ``h`` receives from ``t`` with type ``r``, ``t`` from ``h`` with type
    ``r + R``.
    """
    heads = np.asarray(heads, np.int64)
    tails = np.asarray(tails, np.int64)
    rels = np.asarray(rels, np.int64)
    return TypedAdjacency(np.concatenate([heads, tails]), np.concatenate([tails, heads]),
                          np.concatenate([rels, rels + num_relations]), num_nodes,
                          2 * num_relations)


# ------------------------------------------------------------------------------------ the model
@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run with ``torch.set_num_threads(threads)`` (restored afterwards); ``None`` = as is."""
    import torch

    if threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)


class UltraQueryModel:
    """The UltraQuery network with loaded weights (no training code, no autograd).

    >>> import numpy as np
    >>> model = UltraQueryModel()              # the packaged checkpoint
    >>> heads, rels, tails = np.array([0, 1]), np.array([0, 0]), np.array([2, 2])
    >>> graph = model.prepare(heads, rels, tails, num_nodes=3, num_relations=1)
    >>> x = np.array([[1.0, 0.0, 0.0]], np.float32)   # the fuzzy set {node 0}
    >>> probs = model.project(graph, x, [0])   # x -> relation 0 (type 1 would be its inverse)
    >>> tuple(probs.shape), int(probs.argmax())
    ((1, 3), 2)
    """

    def __init__(self, weights: str | Path | dict[str, Any] | None = None) -> None:
        import torch

        self.weights = weights if isinstance(weights, dict) else load_weights(weights)
        w = self.weights
        self._rel_layers = [self._layer(f"{_PREFIX}relation_model.layers.{i}.")
                            for i in range(NUM_LAYERS)]
        self._ent_layers = [self._layer(f"{_PREFIX}entity_model.layers.{i}.")
                            for i in range(NUM_LAYERS)]
        mlp = _PREFIX + "entity_model.mlp."
        w0 = w[mlp + "0.weight"]
        # the MLP reads [node state, query embedding]: split its first matrix so the query part
        # is computed once per query, not once per node
        self._mlp0_state_t = w0[:, :DIM].t().contiguous()  # (dim, 2 dim), for mm
        self._mlp0_query = w0[:, DIM:].contiguous()
        self._mlp0_bias = w[mlp + "0.bias"]
        self._mlp2_vector = w[mlp + "2.weight"].reshape(-1).contiguous()
        self._mlp2_bias = w[mlp + "2.bias"]
        # the state a node reaches in the first entity layer when neither it nor any of its
        # in-neighbours is in the input set: relu(layer_norm(bias)) (see ``_propagate``)
        self._rest_state = self._update(self._ent_layers[0], torch.zeros(1, 1, DIM),
                                        torch.zeros(1, 1, DIM)).reshape(DIM)

    def _layer(self, prefix: str) -> dict[str, Any]:
        layer = {k[len(prefix):]: v for k, v in self.weights.items() if k.startswith(prefix)}
        # the update reads [h, update]: the two halves of its matrix, transposed for addmm
        layer["linear.weight_state"] = layer["linear.weight"][:, :DIM].t().contiguous()
        layer["linear.weight_update"] = layer["linear.weight"][:, DIM:].t().contiguous()
        return layer

    # ----------------------------------------------------------------------------- graphs
    @staticmethod
    def prepare(heads: np.ndarray, rels: np.ndarray, tails: np.ndarray, num_nodes: int,
                num_relations: int, *, background_bytes: int = BACKGROUND_BYTES
                ) -> PreparedGraph:
        """Everything the forward pass needs about one graph (built once, reused by queries);
        ``background_bytes``: memory for its background states (0: none;
        :meth:`PreparedGraph.backgrounds`)."""
        return PreparedGraph(heads, rels, tails, num_nodes, num_relations,
                             background_bytes=background_bytes)

    # ---------------------------------------------------------------------------- forward
    @staticmethod
    def _update(layer: dict[str, Any], h: Any, update: Any, out: Any = None,
                scratch: Any = None) -> Any:
        """``relu(layer_norm(W [h, update] + b)) + h``: a new tensor, or written into ``out``.

        With ``out`` the rows go through in blocks of ``len(scratch)`` (the linear layer's
        block in ``scratch``), so a layer allocates nothing of the graph's size. The layer
        norm, ReLU and short-cut are one numba pass with the ``fast`` extra
        (:func:`._kernels.norm_relu_add`), PyTorch operations without it.
        """
        import torch
        import torch.nn.functional as F

        weight_state, weight_update = layer["linear.weight_state"], layer["linear.weight_update"]
        norm = ((DIM,), layer["layer_norm.weight"], layer["layer_norm.bias"])
        kernels = _fused_kernels()
        flat, flat_update = h.reshape(-1, DIM), update.reshape(-1, DIM)

        def finish(lin: Any, short: Any, into: Any) -> None:
            """``into = relu(layer_norm(lin)) + short``: one numba pass, or PyTorch's three."""
            if kernels is not None:
                kernels.norm_relu_add(lin.numpy(), norm[1].numpy(), norm[2].numpy(),
                                      LAYER_NORM_EPS, short.contiguous().numpy(), into.numpy())
            else:
                torch.add(F.layer_norm(lin, *norm, eps=LAYER_NORM_EPS).relu_(), short, out=into)

        if out is None:
            # W [h, update] + b as two products into one buffer (no concatenated copy)
            lin = torch.addmm(layer["linear.bias"], flat, weight_state)
            lin.addmm_(flat_update, weight_update)
            finish(lin, flat, lin)
            return lin.view(h.shape)
        flat_out = out.view(-1, DIM)
        rows, block = len(flat), len(scratch)
        for start in range(0, rows, block):
            stop = min(rows, start + block)
            lin = torch.addmm(layer["linear.bias"], flat[start:stop], weight_state,
                              out=scratch[:stop - start])
            lin.addmm_(flat_update[start:stop], weight_update)
            finish(lin, flat[start:stop], flat_out[start:stop])
        return out

    def relation_embeddings(self, graph: PreparedGraph, relations: Sequence[int]) -> Any:
        """``(batch, 2R, dim)``: every relation's embedding conditioned on each query relation."""
        import torch

        n_types = 2 * graph.num_relations
        rel_ids = torch.as_tensor(list(relations), dtype=torch.int64)
        b = len(rel_ids)
        boundary = torch.zeros(n_types, b, DIM)
        boundary[rel_ids, torch.arange(b)] = 1.0
        h = boundary
        for layer in self._rel_layers:
            meta = layer["relation.weight"].unsqueeze(0).expand(b, -1, -1)
            h = self._update(layer, h, graph.relations.aggregate(h, meta, boundary))
        return h.transpose(0, 1)  # (batch, 2R, dim)

    def project(self, graph: PreparedGraph, x: Any, relations: Sequence[int],
                threshold: float = 0.0) -> Any:
        """Memberships ``(batch, num_nodes)`` of ``x[i] -> relations[i]`` for each batch row.

        ``x``: ``(batch, num_nodes)`` fuzzy input sets (array or tensor); ``relations``: relation
        type ids in ``[0, 2R)`` (``r + R`` is ``r`` traversed backwards). Memberships at or
        below ``threshold`` are zeroed before propagation (UltraQuery's intermediate threshold;
        0.0 for this checkpoint).
        """
        import torch

        with torch.inference_mode():
            # graph-sized work on this thread is numpy's or the workers' (:mod:`._workers`:
            # a PyTorch operation here would leave its OpenMP threads spinning beside them)
            x_np = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
            if x_np.ndim != 2 or x_np.shape[1] != graph.num_nodes or (
                    x_np.shape[0] != len(relations)):
                raise ValueError(f"x must have shape ({len(relations)}, {graph.num_nodes}), "
                                 f"got {tuple(x_np.shape)}")
            if threshold > 0:
                x_np = np.where(x_np > threshold, x_np, np.float32(0))
            x = torch.from_numpy(x_np)
            rel_emb = graph.cached_relation_embeddings(self, relations)  # (b, 2R, d)
            b = len(relations)
            query = rel_emb[torch.arange(b), torch.as_tensor(list(relations))]  # (b, d)
            inputs = np.flatnonzero((x_np != 0).any(axis=0))
            with self._workers(graph) as workers:
                # before this thread's buffers are used: a missing background is computed
                # with buffers of its own
                backgrounds = (graph.backgrounds(self, relations)
                               if len(inputs) <= graph.num_nodes // 2 else None)
                # the node states are (nodes, batch, dim), node-major and contiguous: every
                # layer's sums run over the first axis; they live in this thread's buffers
                work = graph.workspace(b)
                boundary = work.boundary
                by_node = x.t().unsqueeze(-1)

                def start(lo: int, hi: int) -> None:
                    torch.mul(by_node[lo:hi], query.unsqueeze(0), out=boundary[lo:hi])

                run_parts(workers, start,
                          even_bounds(graph.num_nodes, parts(workers), MIN_PART_ROWS))
                h = self._propagate(graph, boundary, relations, rel_emb, inputs, work,
                                    backgrounds, workers=workers, source=(x, query))
                return self._score(h, query, work.hidden, workers)

    @staticmethod
    def _workers(graph: PreparedGraph) -> Any:
        """:func:`._workers.layer_workers` when the graph's layers can be split (the fused
        sums; PyTorch on more than one thread): a context giving the pool or None."""
        return layer_workers(graph.entities.fused)

    def _propagate(self, graph: PreparedGraph, boundary: Any, relations: Sequence[int],
                   rel_emb: Any, inputs: np.ndarray, work: Workspace,
                   backgrounds: list[list[Any]] | None, keep: list[Any] | None = None,
                   workers: Workers | None = None,
                   source: tuple[Any, Any] | None = None) -> Any:
        """The six entity layers from ``boundary`` (non-zero on the nodes ``inputs`` only);
        returns the last layer's states (one of ``work``'s buffers).

        **Only the nodes the input set reaches are computed** while they are at most half the
        graph. After layer ``l`` a node more than ``l`` message hops from every input node has
        exactly the state it would have for an *empty* input set (its own boundary row is zero,
        and by induction so are the differences of all its in-neighbours' states): its
        *background* state, which depends only on the graph and the query relation. Layer ``l``
        therefore sums messages and runs the update for the ``l``-hop ball only (the set of
        nodes reached so far plus every node receiving a message from it) and copies every
        other row from ``backgrounds[j][l]`` (batch row ``j``; :meth:`PreparedGraph.backgrounds`)
        -- in the first layer that is one vector for all of them, ``relu(layer_norm(bias))``,
        so no background is needed there. On MetaQA an anchor entity's balls cover about 0,
        0.5, 3-25, 16-77 and 51-97 % of the 43k nodes after layers 1-5. Without backgrounds
        (a large input set, the first projection of a relation, or over the memory budget),
        layers after the first are computed for every node, as before. Exact up to float
        rounding: a row computed in a smaller matrix product may round differently.

        ``keep``: each layer's states are appended to it (copies), for the backgrounds.
        ``workers``: a pool to split each layer's rows over (:mod:`._workers`; None: this
        thread) -- the same sums and updates row by row, whichever thread computes a row.
        ``source``: ``(x, query)``, the input sets ``(batch, nodes)`` and query vectors
        ``(batch, dim)`` whose product is ``boundary``; with the fused kernels a dense first
        layer is then computed from them (:meth:`_first_layer`), not from ``boundary``.
        """
        import torch

        n = graph.num_nodes
        ball = frontier = inputs
        sparse = len(inputs) <= n // 2
        h = boundary
        for i, layer in enumerate(self._ent_layers):
            typed = graph.layer_relations(self, i, relations, rel_emb)  # (b, 2R, d)
            out = work.states[i % 2]  # never h: layer i reads states[(i - 1) % 2]
            if sparse:
                ball, frontier = graph.entities.grow(ball, frontier)
                sparse = len(ball) <= n // 2 and (i == 0 or backgrounds is not None)
            if sparse:
                far = (None if i == 0 or backgrounds is None
                       else [states[i] for states in backgrounds])
                self._ball_layer(graph.entities, layer, h, typed, boundary, out, ball, far,
                                 workers)
            elif i == 0 and source is not None and graph.entities.fused:
                self._first_layer(graph.entities, layer, *source, typed, out, workers)
            else:
                self._full_layer(graph.entities, layer, h, typed, boundary, out, work, workers)
            h = out
            if keep is not None:
                keep.append(torch.from_numpy(h.numpy().copy()))
        return h

    def _first_layer(self, entities: TypedAdjacency, layer: dict[str, Any], x: Any,
                     query: Any, typed: Any, out: Any, workers: Workers | None) -> None:
        """The first entity layer on every node from a dense input set ``x`` (batch, nodes)
        and the query vectors (batch, dim), into ``out``: its states are ``x[v] q``, one
        scalar per node times a vector, so its sums gather the scalars only and its two matrix
        products shrink to one per batch row and edge type (:func:`._kernels.first_layer`:
        MetaQA, one thread, batch of two: 8 against ~50 ms). Rows split over ``workers``."""
        import torch

        kernel = _fused_kernels().first_layer
        weight_update = layer["linear.weight_update"]
        direct = (query @ (layer["linear.weight_state"] + weight_update)).contiguous().numpy()
        per_type = (torch.mul(typed, query.unsqueeze(1)) @ weight_update).contiguous().numpy()
        inputs = np.ascontiguousarray(x.numpy(), dtype=np.float32)
        vectors = query.contiguous().numpy()
        flat_out = out.numpy()
        fixed = (layer["linear.bias"].numpy(), layer["layer_norm.weight"].numpy(),
                 layer["layer_norm.bias"].numpy())
        slots = entities.kernel_graph

        def rows(lo: int, hi: int) -> None:
            kernel(inputs, fixed[0], direct, per_type, vectors, fixed[1], fixed[2],
                   LAYER_NORM_EPS, flat_out, *slots, lo, hi)

        run_parts(workers, rows, entities.row_bounds(parts(workers)))

    def _full_layer(self, entities: TypedAdjacency, layer: dict[str, Any], h: Any, typed: Any,
                    boundary: Any, out: Any, work: Workspace,
                    workers: Workers | None) -> None:
        """One layer on every node into ``out``: the message sums into ``work.update``, then
        the update; with ``workers``, both for one range of receivers after another on the
        workers (:meth:`TypedAdjacency.row_bounds`)."""
        if workers is None:
            update = entities.aggregate(h, typed, boundary, work.update, work.slots)
            self._update(layer, h, update, out, work.block)
            return
        sums = entities.range_summer(h, typed, boundary, work.update)
        block_shape = tuple(work.block.shape)

        def rows(lo: int, hi: int) -> None:
            sums(lo, hi)
            self._update(layer, h[lo:hi], work.update[lo:hi], out[lo:hi],
                         thread_buffer("block", block_shape))

        run_parts(workers, rows, entities.row_bounds(parts(workers)))

    def _ball_layer(self, entities: TypedAdjacency, layer: dict[str, Any], h: Any, typed: Any,
                    boundary: Any, out: Any, ball: np.ndarray, backgrounds: list[Any] | None,
                    workers: Workers | None) -> None:
        """One layer on the nodes of ``ball`` only, every other row of ``out`` copied from
        ``backgrounds`` (batch row ``j``'s states for this layer; None in the first layer,
        where all of them are :attr:`_rest_state`). See :meth:`_propagate`."""
        import torch

        n = len(out)

        def copy(lo: int, hi: int) -> None:
            if backgrounds is None:
                out[lo:hi].copy_(self._rest_state.expand(out[lo:hi].shape))
            else:
                for j, states in enumerate(backgrounds):
                    out[lo:hi, j].copy_(states[lo:hi])

        def compute(lo: int, hi: int) -> None:
            some = ball[lo:hi]
            rows = torch.from_numpy(some)
            update = entities.aggregate_rows(h, typed, boundary, some)
            out[rows] = self._update(layer, h[rows].contiguous(), update)

        run_parts(workers, copy, even_bounds(n, parts(workers), MIN_PART_ROWS))
        if len(ball):
            run_parts(workers, compute,
                      even_bounds(len(ball), parts(workers), MIN_PART_ROWS // 4))

    def background_states(self, graph: PreparedGraph, relation: int) -> list[Any]:
        """The states ``(nodes, dim)`` after each entity layer for an empty input set along
        ``relation`` (see :meth:`_propagate`); the first is None (one vector for every node,
        ``relu(layer_norm(bias))``, not stored). One full forward pass, with its own buffers."""
        import torch

        with torch.inference_mode():
            rel_emb = graph.cached_relation_embeddings(self, [relation])
            work = Workspace(graph.entities, 1)
            boundary = work.boundary
            boundary.numpy().fill(0)  # numpy: no PyTorch threads on this thread (_workers)
            keep: list[Any] = []
            with self._workers(graph) as workers:
                self._propagate(graph, boundary, [relation], rel_emb, np.empty(0, np.int64),
                                work, None, keep, workers)
        return [None] + [state.reshape(graph.num_nodes, DIM) for state in keep[1:]]

    def _score(self, h: Any, query: Any, hidden: Any,
               workers: Workers | None = None) -> Any:
        """Sigmoid of the scoring MLP on ``[node state, query embedding]``: ``(batch, nodes)``.

        The query half of the first matrix is applied once per query (it is a bias of the
        node half), and the nodes go through in blocks (``hidden``: a ``block x 2 dim``
        buffer), which measured about twice as fast on MetaQA as one ``nodes x 128`` tensor.
        With ``workers`` the nodes are split over them, each with a buffer of its own.
        """
        import torch
        import torch.nn.functional as F

        n, b, d = h.shape
        query_bias = F.linear(query, self._mlp0_query, self._mlp0_bias)  # (b, 2d)
        logits = torch.empty(n * b)
        flat = h.reshape(n * b, d)

        def nodes(lo: int, hi: int) -> None:
            scratch = hidden if workers is None else thread_buffer("hidden",
                                                                   tuple(hidden.shape))
            block = max(1, len(scratch) // b)
            for start in range(lo, hi, block):
                stop = min(hi, start + block)
                rows = (stop - start) * b
                hid = torch.mm(flat[start * b:stop * b], self._mlp0_state_t,
                               out=scratch[:rows])
                hid.view(stop - start, b, 2 * d).add_(query_bias).relu_()
                torch.mv(hid, self._mlp2_vector, out=logits[start * b:stop * b])
            logits[lo * b:hi * b].add_(self._mlp2_bias).sigmoid_()

        run_parts(workers, nodes, even_bounds(n, parts(workers), MIN_PART_ROWS))
        scores = logits.view(n, b)
        # (a batch of one is already laid out as (1, nodes); more rows are transposed by numpy)
        return scores.t() if b == 1 else torch.from_numpy(
            np.ascontiguousarray(scores.numpy().T))

    def layer_relation_vectors(self, layer: int, rel_emb: Any) -> Any:
        """Layer ``layer``'s edge-type vectors: its own 2-layer MLP over the relation embeddings."""
        import torch.nn.functional as F

        p = self._ent_layers[layer]
        hidden = F.relu(F.linear(rel_emb, p["relation_projection.0.weight"],
                                 p["relation_projection.0.bias"]))
        return F.linear(hidden, p["relation_projection.2.weight"], p["relation_projection.2.bias"])


class Workspace:
    """Buffers of one forward pass on one graph: ``4 x nodes x batch x 64`` floats plus blocks
    (about 45 MB per thread for MetaQA's 43k nodes and one projection at a time)."""

    #: rows per block of the layer updates and of the scoring MLP
    BLOCK = 8192

    def __init__(self, entities: TypedAdjacency, batch: int) -> None:
        import torch

        num_nodes = entities.num_nodes
        shape = (num_nodes, batch, DIM)
        self.batch = batch
        self.boundary = torch.empty(shape)
        self.update = torch.empty(shape)
        #: the node states, alternating between layers
        self.states = (torch.empty(shape), torch.empty(shape))
        rows = max(1, min(num_nodes * batch, self.BLOCK))
        #: a block of the layer update's linear layer
        self.block = torch.empty(rows, DIM)
        self.hidden = torch.empty(max(rows, batch), 2 * DIM)
        #: a block of slot scalings (:meth:`TypedAdjacency.aggregate`)
        self.slots = torch.empty(entities.max_block_slots * batch * DIM)


class PreparedGraph:
    """One graph in the model's form: entity and relation graphs plus per-relation caches.

    The relation model's output depends only on the graph and the query relation, so it is
    cached per query relation (as are the six layers' projected edge-type vectors): a query that
    projects along a relation already seen skips the relation model entirely. So are the
    entity layers' *background* states (:meth:`backgrounds`), within ``background_bytes``.
    """

    def __init__(self, heads: np.ndarray, rels: np.ndarray, tails: np.ndarray, num_nodes: int,
                 num_relations: int, *, background_bytes: int = BACKGROUND_BYTES) -> None:
        if background_bytes < 0:
            raise ValueError("background_bytes must be >= 0")
        self.num_nodes = int(num_nodes)
        self.num_relations = int(num_relations)
        self.num_edges = len(heads)
        self.entities = entity_graph(heads, rels, tails, num_nodes, num_relations)
        self.relations = relation_graph(heads, rels, tails, num_nodes, num_relations)
        self._rel_cache: dict[int, Any] = {}
        self._layer_cache: dict[tuple[int, int], Any] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        self.background_bytes = int(background_bytes)
        self._background: dict[int, list[Any]] = {}
        self._anchor_uses: dict[int, int] = {}

    @property
    def background_size(self) -> int:
        """Bytes of one query relation's background states (five layers of node states)."""
        return (NUM_LAYERS - 1) * self.num_nodes * DIM * 4

    def backgrounds(self, model: UltraQueryModel, relations: Sequence[int]
                    ) -> list[list[Any]] | None:
        """Per relation, the entity layers' states for an empty input set
        (:meth:`UltraQueryModel.background_states`), which a projection from a small input
        set copies for every node it does not reach (:meth:`UltraQueryModel._propagate`);
        None when one of them is not kept.

        Computing one costs a full forward pass, so it is done on a relation's *second*
        projection from a small set, not its first (a graph prepared for one query, like a
        subgraph, never pays it), and kept within ``background_bytes``: when full, a relation
        replaces the kept one with the fewest such projections only once it has had at least
        twice as many (so under an even mix the cache settles instead of recomputing in turn,
        and a relation that becomes popular still gets in).
        """
        size = self.background_size
        if size == 0 or size > self.background_bytes:
            return None
        relations = [int(r) for r in relations]
        with self._lock:  # every row counts, also those after one that has none
            for relation in relations:
                self._anchor_uses[relation] = self._anchor_uses.get(relation, 0) + 1
        out = []
        for relation in relations:
            with self._lock:
                found = self._background.get(relation)
                admit = (found is None and self._anchor_uses[relation] >= 2
                         and self._room_for(relation, size) is not None)
            if found is None:
                if not admit:
                    return None
                found = model.background_states(self, relation)
                with self._lock:
                    evict = self._room_for(relation, size)
                    if evict is not None and relation not in self._background:
                        for old in evict:
                            del self._background[old]
                        self._background[relation] = found
            out.append(found)
        return out

    def _room_for(self, relation: int, size: int) -> list[int] | None:
        """The kept relations to drop so that ``relation``'s backgrounds fit (the least used
        first; only ones used at most half as often), or None when they cannot. Under the
        lock."""
        free = self.background_bytes - size * len(self._background)
        if free >= size:
            return []
        uses = self._anchor_uses.get(relation, 0)
        drop = []
        for old in sorted(self._background, key=lambda r: (self._anchor_uses.get(r, 0), r)):
            if 2 * self._anchor_uses.get(old, 0) > uses:
                return None
            drop.append(old)
            free += size
            if free >= size:
                return drop
        return None

    def workspace(self, batch: int) -> Workspace:
        """This thread's forward-pass buffers for ``batch`` projections at a time (kept).

        Allocating the node-state tensors afresh for every projection let the C allocator
        hand their memory back to the system in between, and the page faults of touching it
        again cost about a quarter of a MetaQA projection; the buffers are per thread, so
        threads can share one graph.
        """
        work = getattr(self._local, "work", None)
        if work is None or work.batch != batch:
            work = Workspace(self.entities, batch)
            self._local.work = work
        return work

    def cached_relation_embeddings(self, model: UltraQueryModel, relations: Sequence[int]
                                   ) -> Any:
        import torch

        todo = sorted({int(r) for r in relations if int(r) not in self._rel_cache})
        if todo:
            if min(todo) < 0 or max(todo) >= 2 * self.num_relations:
                raise ValueError(f"relation type ids must be in [0, {2 * self.num_relations})")
            emb = model.relation_embeddings(self, todo)
            with self._lock:
                for r, e in zip(todo, emb):
                    self._rel_cache[r] = e
        return torch.stack([self._rel_cache[int(r)] for r in relations])

    def layer_relations(self, model: UltraQueryModel, layer: int, relations: Sequence[int],
                        rel_emb: Any) -> Any:
        import torch

        out = []
        for i, r in enumerate(relations):
            key = (layer, int(r))
            found = self._layer_cache.get(key)
            if found is None:
                found = model.layer_relation_vectors(layer, rel_emb[i])
                with self._lock:
                    self._layer_cache[key] = found
            out.append(found)
        return torch.stack(out)
