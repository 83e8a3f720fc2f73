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

from kgrag.graph.base import IdIndexedGraph
from kgrag.graph.memory import KnowledgeGraph  # noqa: F401 (the doctests use it)
from kgrag.methods.ultrag.query import (
    Entity,
    Intersection,
    Negation,
    Projection,
    Query,
    QueryStructureError,
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


#: one leaf's fuzzy set for an in-memory executor: a membership vector over every node, or
#: (small sets) a pair ``(node ids, memberships)``
LeafSet = np.ndarray | tuple[np.ndarray, np.ndarray]


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
class BatchProjector(Projector, Protocol):
    """A :class:`Projector` that also runs several projections at once (one forward pass):
    ``project_many(xs, relations, inverses)`` with ``xs`` of shape ``(batch, num_nodes)``."""

    def project_many(self, xs: np.ndarray, relations: Sequence[int],
                     inverses: Sequence[bool]) -> np.ndarray: ...


@runtime_checkable
class QueryExecutor(Protocol):
    """Executes a query AST given one fuzzy set per leaf (in :func:`leaves` order).

    A leaf set is a membership vector of length ``num_nodes``, or (for small sets, which
    spares the executor a scan of every node) a pair ``(node ids, memberships)``.

    Returns the membership vector of the answer set (float, length ``num_nodes``, in [0, 1]).
    """

    num_nodes: int

    def execute(self, query: Query, leaf_sets: Sequence[LeafSet]) -> np.ndarray: ...


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

    _cache: ClassVar[weakref.WeakKeyDictionary[IdIndexedGraph, RelationMatrices]] = \
        weakref.WeakKeyDictionary()
    _cache_lock = threading.Lock()

    def __init__(self, kg: IdIndexedGraph) -> None:
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
    def for_graph(cls, kg: IdIndexedGraph) -> RelationMatrices:
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


_NO_IDS = np.empty(0, np.int64)
_NO_VALUES = np.empty(0, FUZZY_DTYPE)


class FuzzySet:
    """A fuzzy set held sparsely (sorted ``ids`` + ``values``) or densely (a vector).

    Small sets -- at most ``1/SPARSE_FRACTION`` of the nodes, the usual case for seeds, linked
    mentions and most intermediate results -- stay sparse, so a query over a few entities costs
    nothing proportional to |V| until the final vector is materialised.
    """

    __slots__ = ("dense", "ids", "values")

    def __init__(self, ids: np.ndarray | None = None, values: np.ndarray | None = None,
                 dense: np.ndarray | None = None) -> None:
        #: sparse form: sorted node ids and their memberships (empty when ``dense`` is set)
        self.ids: np.ndarray = ids if ids is not None else _NO_IDS
        self.values: np.ndarray = values if values is not None else _NO_VALUES
        #: dense form: one membership per node, or ``None`` for a sparse set
        self.dense: np.ndarray | None = dense

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

    def __init__(self, kg: IdIndexedGraph, mode: str = "max") -> None:
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
        if x.dense is None:
            if len(x.ids) == 0:
                return np.empty(0, np.int64), np.empty(0, FUZZY_DTYPE)
            pos = np.minimum(np.searchsorted(rows, x.ids), len(rows) - 1)
            hit = rows[pos] == x.ids
            return pos[hit], x.values[hit]
        xr = x.dense[rows]
        active = np.flatnonzero(xr != 0)  # on a bool mask: far faster than on floats
        return active, xr[active]


# --------------------------------------------------------------------------------- fuzzy logic
#: t-norms (AND) and t-conorms (OR); each works on numpy arrays and on Python floats alike, so
#: the array sets and the store's dictionaries share one definition.
T_NORMS: dict[str, Callable[[Any, Any], Any]] = {
    "product": lambda x, y: x * y,
    "godel": lambda x, y: np.minimum(x, y),
    "lukasiewicz": lambda x, y: np.maximum(x + y - 1, 0),
}
T_CONORMS: dict[str, Callable[[Any, Any], Any]] = {
    "product": lambda x, y: x + y - x * y,
    "godel": lambda x, y: np.maximum(x, y),
    "lukasiewicz": lambda x, y: np.minimum(x + y, 1),
}


@runtime_checkable
class SetAlgebra(Protocol):
    """How one backend holds fuzzy sets; the query evaluator is written once over it.

    ``S`` is the backend's set type: a :class:`FuzzySet` over node ids for in-memory graphs
    (symbolic or neural projection), ``{name: membership}`` for a GraphStore.

    * ``leaf(x)`` validates one leaf set as given by the caller;
    * ``project(batch)`` runs several independent projections ``(set, relation id, inverse)``
      at once (a neural projection batches them into one forward pass);
    * ``combine(operands, op, conjunctive)`` folds a t-norm / t-conorm over the operands;
    * ``complement(x)`` is ``1 - x`` (may refuse when the backend cannot list every node);
    * ``mean(operands)`` (soft AND), ``is_empty(x)``, ``cut(x, threshold)``, ``output(x)``.
    """

    def leaf(self, x: Any) -> Any: ...

    def project(self, batch: Sequence[tuple[Any, int, bool]]) -> list[Any]: ...

    def combine(self, operands: Sequence[Any], op: Callable[[Any, Any], Any],
                conjunctive: bool) -> Any: ...

    def complement(self, x: Any) -> Any: ...

    def mean(self, operands: Sequence[Any]) -> Any: ...

    def is_empty(self, x: Any) -> bool: ...

    def cut(self, x: Any, threshold: float) -> Any: ...

    def output(self, x: Any) -> Any: ...


class FuzzyQueryExecutor:
    """Evaluates queries bottom-up over any :class:`SetAlgebra` with a fuzzy logic.

    The one place where UltRAG's fuzzy semantics live: relation binding, AND / OR / NOT with the
    chosen logic, the optional post-projection threshold and soft AND. Backends only say how
    sets are stored and projected (:class:`ArraySets` for in-memory graphs -- symbolic or neural
    projection --, :class:`~kgrag.methods.ultrag.store_executor.StoreSets` for databases).

    Projections whose operands are ready are run together, as one ``algebra.project`` batch
    (the branches of an ``AND``, or several queries given to :meth:`execute_many`); other
    operators run as soon as their operands are ready, as in UltraQuery's stack machine.

    Parameters
    ----------
    projector:
        a :class:`Projector` (wrapped in :class:`ArraySets`) or a :class:`SetAlgebra`.
    vocabulary:
        binds relation tokens (``P3``, ``directed_by_inv``...) to relation ids.
    logic:
        ``"product"`` (default), ``"godel"`` or ``"lukasiewicz"`` for AND / OR.
    threshold:
        memberships below it are zeroed after each projection (0 = off, the default).
    soft_and:
        off by default (crisp baseline). When on, an intersection whose t-norm is zero
        everywhere, although every operand is non-empty, falls back to the mean of its operands,
        so a slightly wrong query still yields a ranking (our extension, not in the paper).
    """

    def __init__(self, projector: Projector | SetAlgebra, vocabulary: GraphVocabulary, *,
                 logic: str = "product", threshold: float = 0.0, soft_and: bool = False) -> None:
        if logic not in LOGICS:
            raise ValueError(f"logic must be one of {LOGICS}, got {logic!r}")
        if not 0.0 <= threshold < 1.0:
            raise ValueError("threshold must be in [0, 1)")
        if isinstance(projector, SetAlgebra):
            self.algebra: SetAlgebra = projector
        else:
            self.algebra = ArraySets(projector)
        #: the projector and node count of sets over node ids (``None`` for other algebras,
        #: e.g. a GraphStore's sets by name)
        self.projector: Projector | None = None
        self.num_nodes: int | None = None
        if isinstance(self.algebra, ArraySets):
            self.projector = self.algebra.projector
            self.num_nodes = self.algebra.num_nodes
        self.vocabulary = vocabulary
        self.logic = logic
        self.threshold = threshold
        self.soft_and = soft_and
        self._and = T_NORMS[logic]
        self._or = T_CONORMS[logic]

    def execute(self, query: Query | str, leaf_sets: Sequence[Any]) -> Any:
        """The answer set of ``query`` (a membership vector for in-memory graphs)."""
        return self.execute_many([query], [leaf_sets])[0]

    def execute_many(self, queries: Sequence[Query | str],
                     leaf_sets: Sequence[Sequence[Any]]) -> list[Any]:
        """Several queries at once; their ready projections share each ``project`` batch."""
        nodes, roots, values = self._evaluate(queries, leaf_sets)
        return [self.algebra.output(values[root]) for root in roots]

    def execute_traced(self, query: Query | str, leaf_sets: Sequence[Any]
                       ) -> tuple[Any, list[Projection]]:
        """:meth:`execute`, plus the projections of ``query`` whose own result is empty.

        An empty projection is a place where the graph has no edge for the query (a missing
        fact, or a wrong relation): UltRAG's hybrid executor asks the neural one there.
        """
        nodes, roots, values = self._evaluate([query], [leaf_sets])
        empty = [node for i, node in enumerate(nodes)
                 if isinstance(node, Projection) and self.algebra.is_empty(values[i])]
        return self.algebra.output(values[roots[0]]), empty

    def _evaluate(self, queries: Sequence[Query | str], leaf_sets: Sequence[Sequence[Any]]
                  ) -> tuple[list[Any], list[int], dict[int, Any]]:
        """Every node of ``queries`` (post-order), the roots' positions and every node's set."""
        if len(queries) != len(leaf_sets):
            raise ValueError("one list of leaf sets per query")
        parsed = [parse_query(q) for q in queries]
        roots: list[int] = []
        nodes: list[Any] = []
        children: list[list[int]] = []
        sets: dict[int, Any] = {}
        for query, given in zip(parsed, leaf_sets):
            query_leaves = leaves(query)
            if len(given) != len(query_leaves):
                raise ValueError(f"the query has {len(query_leaves)} leaves but {len(given)} "
                                 "leaf sets were given")
            # resolve every relation first: an unknown relation fails before any work is done
            for node in _projections(query):
                self.vocabulary.resolve_relation(node.relation)
            first_leaf = len(nodes)
            roots.append(_flatten(query, nodes, children))
            leaf_positions = [i for i in range(first_leaf, len(nodes))
                              if isinstance(nodes[i], Entity)]
            for position, x in zip(leaf_positions, given):
                sets[position] = self.algebra.leaf(x)
        return nodes, roots, self._run(nodes, children, sets)

    def _run(self, nodes: list[Any], children: list[list[int]], values: dict[int, Any]
             ) -> dict[int, Any]:
        pending = [i for i in range(len(nodes)) if i not in values]
        while pending:
            progressed = True
            while progressed:  # everything but projections, as soon as it is ready
                progressed = False
                for i in pending:
                    if isinstance(nodes[i], Projection) or any(c not in values
                                                               for c in children[i]):
                        continue
                    values[i] = self._operator(nodes[i], [values[c] for c in children[i]])
                    progressed = True
                pending = [i for i in pending if i not in values]
            ready = [i for i in pending if all(c in values for c in children[i])]
            if not ready:
                break
            batch = []
            for i in ready:
                rel, inverse = self.vocabulary.resolve_relation(nodes[i].relation)
                batch.append((values[children[i][0]], rel, inverse))
            for i, y in zip(ready, self.algebra.project(batch)):
                values[i] = self.algebra.cut(y, self.threshold) if self.threshold > 0 else y
            pending = [i for i in pending if i not in values]
        return values

    def _operator(self, node: Any, operands: list[Any]) -> Any:
        if isinstance(node, Negation):
            return self.algebra.complement(operands[0])
        if isinstance(node, Intersection):
            result = self.algebra.combine(operands, self._and, True)
            if self.soft_and and self.algebra.is_empty(result) and not any(
                    self.algebra.is_empty(x) for x in operands):
                return self.algebra.mean(operands)
            return result
        if isinstance(node, Union_):
            return self.algebra.combine(operands, self._or, False)
        raise QueryStructureError(f"not a query node: {node!r}")  # pragma: no cover


def _flatten(query: Any, nodes: list[Any], children: list[list[int]]) -> int:
    """Append ``query``'s nodes in post-order (leaves in :func:`leaves` order); root index."""
    if isinstance(query, Entity):
        nodes.append(query)
        children.append([])
        return len(nodes) - 1
    if isinstance(query, (Projection, Negation)):
        kids = [_flatten(query.operand, nodes, children)]
    elif isinstance(query, (Intersection, Union_)):
        kids = [_flatten(q, nodes, children) for q in query.operands]
    else:
        raise QueryStructureError(f"not a query node: {query!r}")
    nodes.append(query)
    children.append(kids)
    return len(nodes) - 1


class ArraySets:
    """:class:`SetAlgebra` over node ids of an in-memory graph (:class:`FuzzySet` values).

    Projection is delegated to a :class:`Projector`: the symbolic
    :class:`SparseRelationProjector` keeps small sets sparse; any other projector (UltraQuery)
    gets dense vectors, several at once when it has ``project_many``.
    """

    def __init__(self, projector: Projector) -> None:
        self.projector = projector
        self.num_nodes = projector.num_nodes

    def leaf(self, x: Any) -> FuzzySet:
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

    def project(self, batch: Sequence[tuple[FuzzySet, int, bool]]) -> list[FuzzySet]:
        projector = self.projector
        if isinstance(projector, SparseRelationProjector):
            return [projector.project_set(x, rel, inverse) for x, rel, inverse in batch]
        dense = [x.to_dense(self.num_nodes) for x, _, _ in batch]
        if isinstance(projector, BatchProjector):
            outs = list(projector.project_many(np.stack(dense), [r for _, r, _ in batch],
                                               [inv for _, _, inv in batch]))
        else:
            outs = [projector.project(x, rel, inv) for x, (_, rel, inv) in zip(dense, batch)]
        result = []
        for out in outs:  # a plugged-in projector: validated, clipped to [0, 1]
            out = np.asarray(out, dtype=FUZZY_DTYPE)
            if out.shape != (self.num_nodes,):
                raise ValueError(f"the projector returned shape {out.shape}, expected "
                                 f"({self.num_nodes},)")
            result.append(FuzzySet(dense=np.nan_to_num(np.clip(out, 0, 1), nan=0.0).astype(
                FUZZY_DTYPE, copy=False)))
        return result

    def combine(self, operands: Sequence[FuzzySet], op: Callable[[Any, Any], Any],
                conjunctive: bool) -> FuzzySet:
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
            return FuzzySet(dense=np.asarray(result, dtype=FUZZY_DTYPE))
        values = operands[0].at(ids)
        for x in operands[1:]:
            values = op(values, x.at(ids))
        return FuzzySet.from_pairs(ids, np.asarray(values, dtype=FUZZY_DTYPE), self.num_nodes)

    def complement(self, x: FuzzySet) -> FuzzySet:
        return FuzzySet(dense=(1 - x.to_dense(self.num_nodes)).astype(FUZZY_DTYPE))

    def mean(self, operands: Sequence[FuzzySet]) -> FuzzySet:
        mean = np.mean([x.to_dense(self.num_nodes) for x in operands], axis=0)
        return FuzzySet(dense=mean.astype(FUZZY_DTYPE))

    def is_empty(self, x: FuzzySet) -> bool:
        return x.is_empty()

    def cut(self, x: FuzzySet, threshold: float) -> FuzzySet:
        if x.dense is None:
            keep = x.values >= threshold
            return FuzzySet(x.ids[keep], x.values[keep])
        dense = x.dense.copy()
        dense[dense < threshold] = 0
        return FuzzySet(dense=dense)

    def output(self, x: FuzzySet) -> np.ndarray:
        return x.to_dense(self.num_nodes)


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
    """The symbolic executor: :class:`SparseRelationProjector` + fuzzy logic, on one graph.

    >>> kg = KnowledgeGraph.from_triples([("a", "r", "b"), ("a", "r", "c")])
    >>> ex = SymbolicFuzzyExecutor(kg)
    >>> ex.execute("Q0 -> r", [one_hot([0], kg.num_nodes)]).tolist()
    [0.0, 1.0, 1.0]
    """

    num_nodes: int  # always over node ids (an ArraySets algebra)

    def __init__(self, kg: IdIndexedGraph, *, projection: str = "max", logic: str = "product",
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
