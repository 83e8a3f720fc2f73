"""UltraQuery, the neural relation projection UltRAG executes its queries with (plain PyTorch).

UltraQuery (Galkin et al., NeurIPS 2024) answers a projection ``x -> r`` for *any* graph without
training on it: relations are represented only by how they interact with each other, so the
published checkpoint transfers zero-shot. Our implementation of its forward pass (no PyG, no
torch-scatter, no compiled kernels; messages are one sparse matrix product per layer):

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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

NUM_LAYERS = 6
DIM = 64
#: meta-relations of the relation graph, in the checkpoint's embedding order
META_RELATIONS = ("hh", "tt", "ht", "th")
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


# ------------------------------------------------------------------------------ typed message passing
class TypedAdjacency:
    """Sum of typed messages into each receiver, as one sparse product per layer.

    Edges ``sender -> receiver`` with a type. Messages are ``rel[type] * h[sender]``; grouping
    the edges by ``(type, receiver)`` *slots* gives ``sum_slots rel[type] * (A @ h)[slot]`` with
    ``A`` the 0/1 slot-by-sender CSR matrix: one spmm over all edges, one in-place scaling per
    type segment and one scatter-add over the slots -- never an ``edges x dim`` tensor.
    """

    def __init__(self, receivers: np.ndarray, senders: np.ndarray, types: np.ndarray,
                 num_nodes: int, num_types: int) -> None:
        import scipy.sparse as sp
        import torch

        receivers = np.asarray(receivers, np.int64)
        senders = np.asarray(senders, np.int64)
        types = np.asarray(types, np.int64)
        key = types * max(num_nodes, 1) + receivers  # slots sorted by type, then receiver
        slots, slot_of_edge = np.unique(key, return_inverse=True)
        self.num_nodes = num_nodes
        self.num_edges = len(receivers)
        # float32 CSR; duplicate (slot, sender) entries are summed, as the reference sums them
        self.matrix = sp.csr_matrix(
            (np.ones(len(senders), np.float32), (slot_of_edge.reshape(-1), senders)),
            shape=(len(slots), num_nodes), dtype=np.float32)
        self.slot_receiver = torch.from_numpy(slots % max(num_nodes, 1))
        slot_type = slots // max(num_nodes, 1)
        starts = np.searchsorted(slot_type, np.arange(num_types + 1))
        #: (type, first slot, end slot) of every type that has edges
        self.segments = [(t, int(starts[t]), int(starts[t + 1])) for t in range(num_types)
                         if starts[t + 1] > starts[t]]

    def aggregate(self, h: Any, rel: Any, boundary: Any) -> Any:
        """``boundary + sum_{j -> i} rel[:, type] * h[j]``.

        ``h`` / ``boundary``: ``(num_nodes, batch, dim)``; ``rel``: ``(batch, num_types, dim)``.
        """
        import torch

        n, b, d = h.shape
        gathered = torch.from_numpy(self.matrix @ h.reshape(n, b * d).numpy()).view(-1, b, d)
        for t, start, stop in self.segments:
            gathered[start:stop].mul_(rel[:, t])
        return boundary.index_add(0, self.slot_receiver, gathered)


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
        self._mlp0_state = w0[:, :DIM].contiguous()
        self._mlp0_query = w0[:, DIM:].contiguous()
        self._mlp0_bias = w[mlp + "0.bias"]
        self._mlp2_weight = w[mlp + "2.weight"]
        self._mlp2_bias = w[mlp + "2.bias"]

    def _layer(self, prefix: str) -> dict[str, Any]:
        layer = {k[len(prefix):]: v for k, v in self.weights.items() if k.startswith(prefix)}
        # the update reads [h, update]: the two halves of its matrix, transposed for addmm
        layer["linear.weight_state"] = layer["linear.weight"][:, :DIM].t().contiguous()
        layer["linear.weight_update"] = layer["linear.weight"][:, DIM:].t().contiguous()
        return layer

    # ----------------------------------------------------------------------------- graphs
    @staticmethod
    def prepare(heads: np.ndarray, rels: np.ndarray, tails: np.ndarray, num_nodes: int,
                num_relations: int) -> PreparedGraph:
        """Everything the forward pass needs about one graph (built once, reused by queries)."""
        return PreparedGraph(heads, rels, tails, num_nodes, num_relations)

    # ---------------------------------------------------------------------------- forward
    @staticmethod
    def _update(layer: dict[str, Any], h: Any, update: Any) -> Any:
        import torch
        import torch.nn.functional as F

        # W [h, update] + b as two products into one buffer (no concatenated copy)
        flat = h.reshape(-1, DIM)
        out = torch.addmm(layer["linear.bias"], flat, layer["linear.weight_state"])
        out.addmm_(update.reshape(-1, DIM), layer["linear.weight_update"])
        out = F.layer_norm(out, (DIM,), layer["layer_norm.weight"], layer["layer_norm.bias"])
        return out.relu_().add_(flat).view(h.shape)  # short-cut

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
        import torch.nn.functional as F

        with torch.inference_mode():
            x = torch.as_tensor(np.asarray(x, dtype=np.float32))
            if x.ndim != 2 or x.shape[1] != graph.num_nodes or x.shape[0] != len(relations):
                raise ValueError(f"x must have shape ({len(relations)}, {graph.num_nodes}), "
                                 f"got {tuple(x.shape)}")
            if threshold > 0:
                x = torch.where(x > threshold, x, torch.zeros_like(x))
            rel_emb = graph.cached_relation_embeddings(self, relations)  # (b, 2R, d)
            b = len(relations)
            query = rel_emb[torch.arange(b), torch.as_tensor(list(relations))]  # (b, d)
            # (nodes, batch, dim), node-major and contiguous: every layer's sparse product and
            # scatter-add run over the first axis
            boundary = (x.t().contiguous().unsqueeze(-1) * query.unsqueeze(0)).contiguous()
            h = boundary
            for i, layer in enumerate(self._ent_layers):
                typed = graph.layer_relations(self, i, relations, rel_emb)  # (b, 2R, d)
                h = self._update(layer, h, graph.entities.aggregate(h, typed, boundary))
            hidden = F.linear(h, self._mlp0_state) + (
                F.linear(query, self._mlp0_query, self._mlp0_bias)).unsqueeze(0)
            logits = F.linear(F.relu(hidden), self._mlp2_weight, self._mlp2_bias).squeeze(-1)
            return torch.sigmoid(logits).t().contiguous()  # (b, n)

    def layer_relation_vectors(self, layer: int, rel_emb: Any) -> Any:
        """Layer ``layer``'s edge-type vectors: its own 2-layer MLP over the relation embeddings."""
        import torch.nn.functional as F

        p = self._ent_layers[layer]
        hidden = F.relu(F.linear(rel_emb, p["relation_projection.0.weight"],
                                 p["relation_projection.0.bias"]))
        return F.linear(hidden, p["relation_projection.2.weight"], p["relation_projection.2.bias"])


class PreparedGraph:
    """One graph in the model's form: entity and relation graphs plus per-relation caches.

    The relation model's output depends only on the graph and the query relation, so it is
    cached per query relation (as are the six layers' projected edge-type vectors): a query that
    projects along a relation already seen skips the relation model entirely.
    """

    def __init__(self, heads: np.ndarray, rels: np.ndarray, tails: np.ndarray, num_nodes: int,
                 num_relations: int) -> None:
        self.num_nodes = int(num_nodes)
        self.num_relations = int(num_relations)
        self.num_edges = len(heads)
        self.entities = entity_graph(heads, rels, tails, num_nodes, num_relations)
        self.relations = relation_graph(heads, rels, tails, num_nodes, num_relations)
        self._rel_cache: dict[int, Any] = {}
        self._layer_cache: dict[tuple[int, int], Any] = {}
        self._lock = threading.Lock()

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
