"""Query executors: fuzzy sets over every node of the graph, one membership value per node.

UltRAG's executor ``X`` maps the query and one fuzzy set per leaf to a fuzzy set over all
entities (``[0, 1]^|V|``). The paper uses the neural UltraQuery model; this module provides

* :class:`QueryExecutor` -- the protocol any executor satisfies (``execute(query, leaf_sets)``);
* :class:`Projector` -- the narrower seam for a *learned relation projection*: UltraQuery's
  neural projection takes a fuzzy set and a relation and returns per-node probabilities, while
  intersections / unions are fuzzy logic. Plug a neural projector into
  :class:`FuzzyQueryExecutor` and the rest of the pipeline is unchanged (see the docs page for
  what an UltraQuery wrapper needs);
* :class:`SparseRelationProjector` and :class:`SymbolicFuzzyExecutor` -- the symbolic default:
  exact edge traversal on one ``scipy.sparse`` CSR matrix per relation and direction, built once
  from the graph's integer arrays and cached per graph.

Semantics (``x`` a fuzzy set, ``A_r`` the 0/1 adjacency of relation ``r``):

* projection ``x -> r``: ``"max"`` (default; max-product, as ULTRA's ``SymbolicTraversal``)
  ``t[v] = max_{(u,r,v)} x[u]``; ``"noisy_or"`` ``t[v] = 1 - prod (1 - x[u])``; ``"sum"``
  ``t[v] = min(1, sum x[u])``. ``r_inv`` runs the same over reversed edges.
* intersection: t-norm ``"product"`` (default, UltraQuery's default logic) ``x*y``, ``"godel"``
  ``min(x, y)``, ``"lukasiewicz"`` ``max(0, x + y - 1)``; union and negation (extension) use the
  matching t-conorm (``x + y - xy``, ``max``, ``min(1, x + y)``) and ``1 - x``.

On crisp (0/1) leaves every mode gives the crisp set semantics of the query.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from kgrag.graph.memory import KnowledgeGraph
from kgrag.methods.ultrag.query import (
    Entity,
    Intersection,
    Negation,
    Projection,
    Query,
    QueryStructureError,
    Relation,
    Union_,
    leaves,
    parse_query,
)
from kgrag.methods.ultrag.vocabulary import GraphVocabulary

PROJECTIONS = ("max", "noisy_or", "sum")
LOGICS = ("product", "godel", "lukasiewicz")
FUZZY_DTYPE = np.float32
#: A set whose support is at most 1/SPARSE_FRACTION of the nodes is handled by its support.
SPARSE_FRACTION = 16


# ------------------------------------------------------------------------------------ protocols
@runtime_checkable
class Projector(Protocol):
    """A relation projection over fuzzy sets (the seam for a neural projection such as UltraQuery).

    ``project(x, relation, inverse)`` takes a membership vector ``x`` (float, length
    ``num_nodes``, values in [0, 1]) and returns the memberships of the nodes reached by one edge
    of relation id ``relation`` (traversed tail -> head when ``inverse``), same shape, in [0, 1].
    """

    num_nodes: int

    def project(self, x: np.ndarray, relation: int, inverse: bool) -> np.ndarray: ...


@runtime_checkable
class QueryExecutor(Protocol):
    """Executes a query AST given one fuzzy set per leaf (in :func:`leaves` order).

    A leaf set is a membership vector of length ``num_nodes``, or (for small sets, which
    spares the executor a scan of every node) a pair ``(node ids, memberships)``.

    Returns the membership vector of the answer set (float, length ``num_nodes``, in [0, 1]).
    """

    num_nodes: int

    def execute(self, query: Query, leaf_sets: Sequence[np.ndarray]) -> np.ndarray: ...


# -------------------------------------------------------------------------- sparse relation index
class _RelationBlock:
    """Edges of one relation in one direction: a CSR matrix over the nodes that have such edges.

    ``rows`` are the (sorted) source nodes; ``matrix[i]`` holds the targets of ``rows[i]``. Only
    rows with edges are stored, so the total size over all relations is O(E), not O(R * N).
    """

    __slots__ = ("matrix", "rows")

    def __init__(self, sources: np.ndarray, targets: np.ndarray, num_nodes: int) -> None:
        import scipy.sparse as sp

        if len(sources):
            starts = np.flatnonzero(np.r_[True, sources[1:] != sources[:-1]])
            self.rows = sources[starts].astype(np.int64)
            indptr = np.r_[starts, len(sources)].astype(np.int64)
        else:
            self.rows = np.empty(0, np.int64)
            indptr = np.zeros(1, np.int64)
        data = np.ones(len(targets), dtype=FUZZY_DTYPE)
        self.matrix = sp.csr_matrix((data, targets.astype(np.int32), indptr),
                                    shape=(len(self.rows), num_nodes))

    @property
    def num_edges(self) -> int:
        return int(self.matrix.nnz)


class RelationMatrices:
    """Per-relation sparse adjacency of a :class:`KnowledgeGraph`, built lazily and cached.

    Use :meth:`for_graph` to share one instance per graph (a weak-keyed cache). The edges are
    grouped by relation once per direction (one stable argsort of the relation array); each
    relation's matrix is built on first use.
    """

    _cache: ClassVar[weakref.WeakKeyDictionary[KnowledgeGraph, RelationMatrices]] = \
        weakref.WeakKeyDictionary()
    _cache_lock = threading.Lock()

    def __init__(self, kg: KnowledgeGraph) -> None:
        self.num_nodes = kg.num_nodes
        self.num_relations = kg.num_relations
        self._heads = kg.heads
        self._tails = kg.tails
        self._rels = kg.rels
        self._in_order = kg.in_order
        self._groups: dict[bool, tuple[np.ndarray, np.ndarray]] = {}
        self._blocks: dict[tuple[int, bool], _RelationBlock] = {}
        self._lock = threading.Lock()

    @classmethod
    def for_graph(cls, kg: KnowledgeGraph) -> RelationMatrices:
        with cls._cache_lock:
            found = cls._cache.get(kg)
            if found is None:
                found = cls(kg)
                cls._cache[kg] = found
            return found

    def _grouping(self, inverse: bool) -> tuple[np.ndarray, np.ndarray]:
        """Edge ids ordered by (relation, source, target) and the relation boundaries."""
        if inverse not in self._groups:
            # forward: edges are stored by (head, rel, tail); inverse: in_order is (tail, rel, head)
            base = self._in_order.astype(np.int64) if inverse else np.arange(len(self._rels))
            order = base[np.argsort(self._rels[base], kind="stable")]
            bounds = np.zeros(self.num_relations + 1, np.int64)
            np.cumsum(np.bincount(self._rels, minlength=self.num_relations), out=bounds[1:])
            dtype = np.int32 if len(order) < 2**31 else np.int64
            self._groups[inverse] = (order.astype(dtype), bounds)
        return self._groups[inverse]

    def block(self, relation: int, inverse: bool) -> _RelationBlock:
        key = (int(relation), bool(inverse))
        found = self._blocks.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._blocks.get(key)
            if found is None:
                order, bounds = self._grouping(inverse)
                edges = order[bounds[relation]:bounds[relation + 1]]
                src, dst = (self._tails, self._heads) if inverse else (self._heads, self._tails)
                found = _RelationBlock(src[edges], dst[edges], self.num_nodes)
                self._blocks[key] = found
            return found

    def build_all(self) -> RelationMatrices:
        """Build every relation's matrices now (e.g. before timing queries)."""
        for rel in range(self.num_relations):
            self.block(rel, False)
            self.block(rel, True)
        return self


class FuzzySet:
    """A fuzzy set held sparsely (sorted ``ids`` + ``values``) or densely (a vector).

    Small sets -- at most ``1/SPARSE_FRACTION`` of the nodes, the usual case for seeds, linked
    mentions and most intermediate results -- stay sparse, so a query over a few entities costs
    nothing proportional to |V| until the final vector is materialised.
    """

    __slots__ = ("dense", "ids", "values")

    def __init__(self, ids: np.ndarray | None = None, values: np.ndarray | None = None,
                 dense: np.ndarray | None = None) -> None:
        self.ids = ids
        self.values = values
        self.dense = dense

    @classmethod
    def from_pairs(cls, ids: np.ndarray, values: np.ndarray, num_nodes: int) -> FuzzySet:
        """Sparse when small, dense otherwise; ``ids`` sorted and unique, zeros dropped."""
        keep = values != 0
        ids, values = ids[keep], values[keep].astype(FUZZY_DTYPE, copy=False)
        if len(ids) * SPARSE_FRACTION <= num_nodes:
            return cls(ids.astype(np.int64, copy=False), values)
        dense = np.zeros(num_nodes, dtype=FUZZY_DTYPE)
        dense[ids] = values
        return cls(dense=dense)

    @property
    def is_sparse(self) -> bool:
        return self.dense is None

    def is_empty(self) -> bool:
        return len(self.ids) == 0 if self.dense is None else not np.any(self.dense)

    def to_dense(self, num_nodes: int) -> np.ndarray:
        if self.dense is not None:
            return self.dense
        out = np.zeros(num_nodes, dtype=FUZZY_DTYPE)
        out[self.ids] = self.values
        return out

    def at(self, ids: np.ndarray) -> np.ndarray:
        """Memberships of the (sorted) ``ids`` (0 where absent)."""
        if self.dense is not None:
            return self.dense[ids]
        if len(self.ids) == 0:
            return np.zeros(len(ids), dtype=FUZZY_DTYPE)
        pos = np.minimum(np.searchsorted(self.ids, ids), len(self.ids) - 1)
        return np.where(self.ids[pos] == ids, self.values[pos], 0).astype(FUZZY_DTYPE)


class SparseRelationProjector:
    """Exact relation projection on per-relation CSR matrices (symbolic, no learning)."""

    def __init__(self, kg: KnowledgeGraph, mode: str = "max") -> None:
        if mode not in PROJECTIONS:
            raise ValueError(f"projection must be one of {PROJECTIONS}, got {mode!r}")
        self.mode = mode
        self.matrices = RelationMatrices.for_graph(kg)
        self.num_nodes = kg.num_nodes

    def project(self, x: np.ndarray, relation: int, inverse: bool) -> np.ndarray:
        return self.project_set(FuzzySet(dense=np.asarray(x, dtype=FUZZY_DTYPE)), relation,
                                inverse).to_dense(self.num_nodes)

    def project_set(self, x: FuzzySet, relation: int, inverse: bool) -> FuzzySet:
        """:meth:`project` on a :class:`FuzzySet`; a small frontier never touches all nodes."""
        block = self.matrices.block(relation, inverse)
        empty = FuzzySet(np.empty(0, np.int64), np.empty(0, FUZZY_DTYPE))
        if len(block.rows) == 0:
            return empty
        active, weights = self._active_rows(x, block.rows)
        if len(active) == 0:
            return empty
        sub = block.matrix[active]  # CSR row selection: only the edges leaving the support
        weights = weights.astype(FUZZY_DTYPE, copy=False)
        targets = sub.indices
        crisp = bool(np.all(weights == 1))
        if len(targets) * SPARSE_FRACTION <= self.num_nodes:  # reduce per target by sorting
            if self.mode == "max" and crisp:
                ids = np.unique(targets)
                return FuzzySet(ids.astype(np.int64), np.ones(len(ids), FUZZY_DTYPE))
            w = np.repeat(weights, np.diff(sub.indptr))
            order = np.argsort(targets, kind="stable")
            sorted_targets, w = targets[order], w[order]
            ids, starts = np.unique(sorted_targets, return_index=True)
            if self.mode == "max":
                values = np.maximum.reduceat(w, starts)
            elif self.mode == "sum":
                values = np.minimum(np.add.reduceat(w, starts), 1)
            else:
                values = self._noisy_or(w, starts)
            return FuzzySet.from_pairs(ids.astype(np.int64), values, self.num_nodes)
        out = np.zeros(self.num_nodes, dtype=FUZZY_DTYPE)
        if self.mode == "max":
            if crisp:  # reachability, no reduction needed
                out[targets] = 1
            else:
                np.maximum.at(out, targets, np.repeat(weights, np.diff(sub.indptr)))
        elif self.mode == "sum":
            np.minimum(sub.T @ weights, 1, out=out)
        else:  # noisy-OR: 1 - prod(1 - x) = 1 - exp(sum log(1 - x)), exact ones kept exact
            logs = np.log1p(-np.minimum(weights.astype(np.float64), 1 - 1e-12))
            out[:] = -np.expm1(sub.T @ logs)
            certain = sub.T @ (weights >= 1).astype(FUZZY_DTYPE)
            out[certain > 0] = 1
        return FuzzySet(dense=out)

    @staticmethod
    def _noisy_or(w: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """``1 - prod(1 - w)`` per segment; a segment containing a 1 is exactly 1."""
        logs = np.log1p(-np.minimum(w.astype(np.float64), 1 - 1e-12))
        values = -np.expm1(np.add.reduceat(logs, starts))
        values[np.maximum.reduceat(w, starts) >= 1] = 1
        return values.astype(FUZZY_DTYPE)

    @staticmethod
    def _active_rows(x: FuzzySet, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions in ``rows`` of the nodes with non-zero membership, and those memberships.

        A sparse set is looked up in the relation's sorted row list; a dense one gathers its
        vector over the rows.
        """
        if x.is_sparse:
            if len(x.ids) == 0:
                return np.empty(0, np.int64), np.empty(0, FUZZY_DTYPE)
            pos = np.minimum(np.searchsorted(rows, x.ids), len(rows) - 1)
            hit = rows[pos] == x.ids
            return pos[hit], x.values[hit]
        xr = x.dense[rows]
        active = np.flatnonzero(xr != 0)  # on a bool mask: far faster than on floats
        return active, xr[active]


# ------------------------------------------------------------------------------------ executors
def _t_norm(logic: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    if logic == "product":
        return np.multiply
    if logic == "godel":
        return np.minimum
    return lambda x, y: np.maximum(x + y - 1, 0)


def _t_conorm(logic: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    if logic == "product":
        return lambda x, y: x + y - x * y
    if logic == "godel":
        return np.maximum
    return lambda x, y: np.minimum(x + y, 1)


class FuzzyQueryExecutor:
    """Evaluates a query bottom-up with any :class:`Projector` and a fuzzy logic.

    Parameters
    ----------
    projector:
        the relation projection (symbolic by default; a neural one plugs in here).
    vocabulary:
        binds relation tokens (``P3``, ``directed_by_inv``...) to relation ids.
    logic:
        ``"product"`` (default), ``"godel"`` or ``"lukasiewicz"`` for AND / OR.
    threshold:
        memberships below it are zeroed after each projection (UltraQuery's optional
        intermediate threshold; 0 = off, the default).
    soft_and:
        off by default (crisp baseline). When on, an intersection whose t-norm is zero
        everywhere, although every operand is non-empty, falls back to the mean of its operands,
        so a slightly wrong query still yields a ranking (our extension, not in the paper).
    """

    def __init__(self, projector: Projector, vocabulary: GraphVocabulary, *,
                 logic: str = "product", threshold: float = 0.0, soft_and: bool = False) -> None:
        if logic not in LOGICS:
            raise ValueError(f"logic must be one of {LOGICS}, got {logic!r}")
        if not 0.0 <= threshold < 1.0:
            raise ValueError("threshold must be in [0, 1)")
        self.projector = projector
        self.vocabulary = vocabulary
        self.logic = logic
        self.threshold = threshold
        self.soft_and = soft_and
        self.num_nodes = projector.num_nodes
        self._and = _t_norm(logic)
        self._or = _t_conorm(logic)

    def execute(self, query: Query | str, leaf_sets: Sequence[np.ndarray]) -> np.ndarray:
        query = parse_query(query)
        query_leaves = leaves(query)
        if len(leaf_sets) != len(query_leaves):
            raise ValueError(f"the query has {len(query_leaves)} leaves but {len(leaf_sets)} "
                             "leaf sets were given")
        sets = [self._check_set(x) for x in leaf_sets]
        # resolve every relation first: an unknown relation fails before any work is done
        for node in _projections(query):
            self.vocabulary.resolve_relation(node.relation)
        position = iter(range(len(sets)))
        return self._eval(query, sets, position).to_dense(self.num_nodes)

    def _check_set(self, x: Any) -> FuzzySet:
        if isinstance(x, tuple):  # sparse leaf: (node ids, memberships), no O(|V|) scan
            ids, values = (np.asarray(x[0], dtype=np.int64), np.asarray(x[1], dtype=FUZZY_DTYPE))
            if ids.shape != values.shape or ids.ndim != 1:
                raise ValueError("a sparse leaf set is (ids, memberships) of equal length")
            if len(ids) and (ids.min() < 0 or ids.max() >= self.num_nodes):
                raise ValueError("a sparse leaf set names a node id outside the graph")
            if not np.all((values >= 0) & (values <= 1)):
                raise ValueError("leaf memberships must be finite and in [0, 1]")
            order = np.lexsort((-values, ids))  # by id; a repeated id keeps its largest value
            ids, values = ids[order], values[order]
            first = np.r_[True, ids[1:] != ids[:-1]] if len(ids) else np.empty(0, bool)
            return FuzzySet.from_pairs(ids[first], values[first], self.num_nodes)
        x = np.asarray(x, dtype=FUZZY_DTYPE)
        if x.shape != (self.num_nodes,):
            raise ValueError(f"a leaf set must have shape ({self.num_nodes},), got {x.shape}")
        support = np.flatnonzero(x != 0)  # NaN counts as non-zero, and fails the range check
        values = x[support]
        if not np.all((values > 0) & (values <= 1)):
            raise ValueError("leaf memberships must be finite and in [0, 1]")
        if len(support) * SPARSE_FRACTION <= self.num_nodes:
            return FuzzySet(support.astype(np.int64), values)
        return FuzzySet(dense=x)

    def _project(self, x: FuzzySet, relation: Relation) -> FuzzySet:
        rel, inverse = self.vocabulary.resolve_relation(relation)
        if isinstance(self.projector, SparseRelationProjector):
            y = self.projector.project_set(x, rel, inverse)
        else:  # a plugged-in (e.g. neural) projector: dense in, validated dense out
            out = np.asarray(self.projector.project(x.to_dense(self.num_nodes), rel, inverse),
                             dtype=FUZZY_DTYPE)
            if out.shape != (self.num_nodes,):
                raise ValueError(f"the projector returned shape {out.shape}, expected "
                                 f"({self.num_nodes},)")
            y = FuzzySet(dense=np.nan_to_num(np.clip(out, 0, 1), nan=0.0).astype(
                FUZZY_DTYPE, copy=False))
        if self.threshold > 0:
            if y.is_sparse:
                keep = y.values >= self.threshold
                y = FuzzySet(y.ids[keep], y.values[keep])
            else:
                y.dense[y.dense < self.threshold] = 0
        return y

    def _combine(self, operands: list[FuzzySet],
                 op: Callable[[np.ndarray, np.ndarray], np.ndarray], conjunctive: bool
                 ) -> FuzzySet:
        """Fold ``op`` over the operands.

        AND only needs the entities in every sparse operand (each t-norm is 0 when one side
        is 0); OR of sparse operands needs the union of their ids (each t-conorm keeps the
        other side when one side is 0). Otherwise the fold runs on dense vectors.
        """
        sparse = [x for x in operands if x.is_sparse]
        if conjunctive and sparse:
            ids = sparse[0].ids
            for x in sparse[1:]:
                ids = np.intersect1d(ids, x.ids, assume_unique=True)
        elif not conjunctive and len(sparse) == len(operands):
            ids = operands[0].ids
            for x in operands[1:]:
                ids = np.union1d(ids, x.ids)
        else:
            result = operands[0].to_dense(self.num_nodes)
            for x in operands[1:]:
                result = op(result, x.to_dense(self.num_nodes))
            return FuzzySet(dense=result.astype(FUZZY_DTYPE, copy=False))
        values = operands[0].at(ids)
        for x in operands[1:]:
            values = op(values, x.at(ids))
        return FuzzySet.from_pairs(ids, np.asarray(values, dtype=FUZZY_DTYPE), self.num_nodes)

    def _eval(self, node: Any, sets: list[FuzzySet], position: Any) -> FuzzySet:
        if isinstance(node, Entity):
            return sets[next(position)]
        if isinstance(node, Projection):
            return self._project(self._eval(node.operand, sets, position), node.relation)
        if isinstance(node, Negation):
            x = self._eval(node.operand, sets, position).to_dense(self.num_nodes)
            return FuzzySet(dense=(1 - x).astype(FUZZY_DTYPE))
        operands = [self._eval(q, sets, position) for q in node.operands]
        if isinstance(node, Intersection):
            result = self._combine(operands, self._and, conjunctive=True)
            if self.soft_and and result.is_empty() and not any(x.is_empty() for x in operands):
                mean = np.mean([x.to_dense(self.num_nodes) for x in operands], axis=0)
                return FuzzySet(dense=mean.astype(FUZZY_DTYPE))
            return result
        if isinstance(node, Union_):
            return self._combine(operands, self._or, conjunctive=False)
        raise QueryStructureError(f"not a query node: {node!r}")  # pragma: no cover


def _projections(query: Query) -> list[Projection]:
    out: list[Projection] = []
    stack: list[Any] = [query]
    while stack:
        node = stack.pop()
        if isinstance(node, Projection):
            out.append(node)
            stack.append(node.operand)
        elif isinstance(node, Negation):
            stack.append(node.operand)
        elif isinstance(node, (Intersection, Union_)):
            stack.extend(node.operands)
    return out


class SymbolicFuzzyExecutor(FuzzyQueryExecutor):
    """The symbolic default: :class:`SparseRelationProjector` + fuzzy logic, on one graph.

    >>> kg = KnowledgeGraph.from_triples([("a", "r", "b"), ("a", "r", "c")])
    >>> ex = SymbolicFuzzyExecutor(kg)
    >>> ex.execute("Q0 -> r", [one_hot([0], kg.num_nodes)]).tolist()
    [0.0, 1.0, 1.0]
    """

    def __init__(self, kg: KnowledgeGraph, *, projection: str = "max", logic: str = "product",
                 threshold: float = 0.0, soft_and: bool = False,
                 vocabulary: GraphVocabulary | None = None) -> None:
        super().__init__(SparseRelationProjector(kg, projection),
                         vocabulary or GraphVocabulary.from_graph(kg),
                         logic=logic, threshold=threshold, soft_and=soft_and)
        self.kg = kg
        self.projection = projection


# ------------------------------------------------------------------------------------- helpers
def one_hot(nodes: Sequence[int] | np.ndarray, num_nodes: int) -> np.ndarray:
    """The crisp set of ``nodes`` (membership 1) as a fuzzy-set vector."""
    x = np.zeros(num_nodes, dtype=FUZZY_DTYPE)
    x[np.asarray(nodes, dtype=np.int64)] = 1
    return x


def fuzzy_set(memberships: dict[int, float], num_nodes: int) -> np.ndarray:
    """A fuzzy-set vector from ``{node id: membership}``."""
    x = np.zeros(num_nodes, dtype=FUZZY_DTYPE)
    if memberships:
        ids = np.fromiter(memberships.keys(), dtype=np.int64, count=len(memberships))
        x[ids] = np.fromiter(memberships.values(), dtype=np.float64, count=len(memberships))
    return x


def top_k(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(node ids, scores)`` of the ``k`` highest non-zero memberships.

    Sorted by score descending, ties by node id ascending (deterministic).
    """
    support = np.flatnonzero(x != 0)
    if len(support) == 0 or k <= 0:
        return np.empty(0, np.int64), np.empty(0, FUZZY_DTYPE)
    scores = x[support]
    if len(support) > k:
        keep = np.argpartition(-scores, k - 1)[:k]
        # include every node tied with the k-th score so the tie order below is by id
        kth = scores[keep].min()
        keep = np.flatnonzero(scores >= kth)
        support, scores = support[keep], scores[keep]
    order = np.lexsort((support, -scores))[:k]
    return support[order].astype(np.int64), scores[order]
