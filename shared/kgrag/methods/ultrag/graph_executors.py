"""One executor per graph kind: everything in UltRAG's execution that depends on where the graph is.

UltRAG runs on an in-memory :class:`~kgrag.graph.memory.KnowledgeGraph` or on any
:class:`~kgrag.graph.base.GraphStore` (Neo4j, FalkorDB). What differs between the two is held
here, behind one interface, :class:`GraphExecutor`, chosen once when the method is set up
(:func:`graph_executor`):

* :class:`MemoryGraphExecutor` -- leaves are node ids, fuzzy sets are ``(ids, memberships)``
  pairs; a query runs on the whole graph or on its SEPPR subgraph (Alg. 2), with the symbolic,
  the neural or a custom :class:`~kgrag.methods.ultrag.executor.QueryExecutor`;
* :class:`StoreGraphExecutor` -- leaves are entity names, fuzzy sets ``{name: membership}``;
  the symbolic executor runs each projection as one ``one_hop`` call inside the store
  (:class:`SymbolicStoreExecutor`), the neural one runs UltraQuery on the SEPPR subgraph fetched
  from the store around the query's anchors (:class:`NeuralStoreExecutor`);
* :class:`HybridGraphExecutor` -- the default on either kind: the symbolic executor first,
  the neural one only where the graph has no answer, proved answers ranked above every neural
  guess (:func:`exact_first`; see :mod:`kgrag.methods.ultrag.hybrid`).

Each one resolves leaves and seed entities, builds the leaves' fuzzy sets (one-hot for named
entities, Eq. 2 for linked mentions), executes a query and ranks the result, so the pipeline's
``run`` / ``leaf_sets`` / ``retrieve`` never ask which kind of graph they are on. The fuzzy
logic itself is written once, in :class:`~kgrag.methods.ultrag.executor.FuzzyQueryExecutor`,
over the set algebra each kind provides.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from kgrag.context.types import ScoredEntity
from kgrag.graph.base import GraphStore, IdIndexedGraph
from kgrag.graph.memory import normalize_name
from kgrag.linking.relation_names import RelationTextIndex
from kgrag.methods.ultrag.config import UltRAGConfig
from kgrag.methods.ultrag.executor import (
    FUZZY_DTYPE,
    FuzzyQueryExecutor,
    QueryExecutor,
    SymbolicFuzzyExecutor,
    top_k,
)
from kgrag.methods.ultrag.neural import NeuralFuzzyExecutor, store_subgraph
from kgrag.methods.ultrag.query import (
    Entity,
    Query,
    QueryResolutionError,
    leaves,
    quote,
    to_dsl,
)
from kgrag.methods.ultrag.seppr import PAPER_TOP_K, induced_subgraph, seppr_nodes
from kgrag.methods.ultrag.store_executor import StoreQueryExecutor
from kgrag.methods.ultrag.vocabulary import GraphVocabulary

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.methods.ultrag.linking import SoftmaxLeafLinker

EXECUTORS = ("hybrid", "neural", "symbolic")

_ENTITY_ID = re.compile(r"^Q\d+$")

#: a leaf's fuzzy set on an in-memory graph: sorted-or-not node ids and their memberships
ArrayLeaf = tuple[np.ndarray, np.ndarray]
#: a leaf's fuzzy set on a GraphStore: entity name -> membership
NameLeaf = dict[str, float]
#: builds the executor of one (sub)graph
ExecutorFactory = Callable[[IdIndexedGraph], QueryExecutor]

LeafT = TypeVar("LeafT")
NodeT = TypeVar("NodeT")


@dataclass
class Execution:
    """The outcome of running one query: scores over every node plus how the leaves were bound."""

    query: Query
    scores: np.ndarray
    leaf_entities: list[list[ScoredEntity]] = field(default_factory=list)
    subgraph_nodes: int | None = None
    #: names of the scored entities when ``scores`` is not indexed by the graph's node ids
    #: (a GraphStore execution); ``None`` = ``scores[i]`` belongs to node id ``i``
    names: list[str] | None = None
    truncated: bool = False
    #: the query's projections (DSL) whose exact result was empty; ``None``: not traced (the
    #: neural executor, SEPPR subgraphs, custom executors)
    gaps: list[str] | None = None
    #: hybrid executions only (:mod:`~kgrag.methods.ultrag.hybrid`): the exact memberships and
    #: the neural ones (``None`` when the neural executor was not needed), aligned with
    #: ``scores``; ``scores`` itself is the exact-first combination
    exact_scores: np.ndarray | None = None
    neural_scores: np.ndarray | None = None
    #: hybrid executions: why the neural executor ran (``None``: it was not needed)
    neural_reason: str | None = None

    @property
    def query_text(self) -> str:
        return to_dsl(self.query)


def ranked_by_name(scores: np.ndarray, names: Sequence[str], k: int) -> list[ScoredEntity]:
    """The top ``k`` non-zero ``scores``, labelled by ``names``: score descending, ties by name;
    the entity id is the name."""
    order = sorted(range(len(names)), key=lambda i: (-float(scores[i]), names[i]))
    return [ScoredEntity(names[i], float(scores[i]), "ultrag", metadata={"entity_id": names[i]})
            for i in order[:k] if scores[i] > 0]


class GraphExecutor(ABC, Generic[LeafT, NodeT]):
    """UltRAG's execution on one kind of graph (see the module docstring).

    ``LeafT`` is how a leaf's fuzzy set is held, ``NodeT`` how a resolved entity is named (a
    node id in memory, a name on a store). Attributes: ``graph``, ``vocabulary`` (relation
    binding, and entity ids in memory), ``subgraph_k`` (the SEPPR subgraph size, ``None``:
    the whole graph), ``kind`` (``"neural"``, ``"symbolic"`` or ``"custom"``).
    """

    kind: str

    def __init__(self, graph: GraphStore, vocabulary: GraphVocabulary, cfg: UltRAGConfig,
                 subgraph_k: int | None) -> None:
        self.graph = graph
        self.vocabulary = vocabulary
        self.config = cfg
        self.subgraph_k = subgraph_k
        self._store_executor: StoreQueryExecutor | None = None

    # ---------------------------------------------------------------- entities and leaves
    @abstractmethod
    def resolve_leaf(self, leaf: Entity, required: bool) -> NodeT | None:
        """The entity a leaf names; ``None`` (or :class:`QueryResolutionError` when
        ``required``) when it names none."""

    @abstractmethod
    def seed_entry(self, seed: str) -> tuple[str, str]:
        """``(id as the LLM should write it, name)`` of a seed entity of the question."""

    @abstractmethod
    def one_hot(self, node: NodeT) -> tuple[LeafT, str]:
        """The crisp fuzzy set of one resolved entity, and its name."""

    @abstractmethod
    def linked(self, linker: SoftmaxLeafLinker, mentions: Sequence[str]
               ) -> list[tuple[LeafT, list[ScoredEntity]]]:
        """Per mention, its Eq. 2 fuzzy set and the scored entities it was linked to."""

    def leaf_sets(self, query: Query, linking: str, linker: Callable[[], SoftmaxLeafLinker]
                  ) -> tuple[list[LeafT], list[list[ScoredEntity]]]:
        """One fuzzy set per leaf, in :func:`leaves` order: named entities one-hot, quoted
        mentions (``linking="dense"``) and unknown unquoted names by Eq. 2 linking.

        An unquoted leaf that is neither an id nor a name is linked in ``"dense"`` mode and
        raises :class:`QueryResolutionError` in ``"exact"`` mode. ``linker`` is called only
        when a leaf needs linking (it may load an embedding model).
        """
        sets: list[LeafT | None] = []
        entities: list[list[ScoredEntity] | None] = []
        to_link: list[tuple[int, str]] = []
        for i, leaf in enumerate(leaves(query)):
            node = None
            if not (leaf.quoted and linking == "dense"):
                node = self.resolve_leaf(leaf, required=linking == "exact")
            if node is None:
                to_link.append((i, leaf.text))
                sets.append(None)
                entities.append(None)
                continue
            one, name = self.one_hot(node)
            sets.append(one)
            entities.append([ScoredEntity(name, 1.0, "id", metadata={"mention": leaf.text})])
        if to_link:
            found = self.linked(linker(), [text for _, text in to_link])
            for (i, _), (linked_set, scored) in zip(to_link, found):
                sets[i] = linked_set
                entities[i] = scored
        return ([s for s in sets if s is not None],
                [e for e in entities if e is not None])

    # ---------------------------------------------------------------- execution
    @abstractmethod
    def execute(self, query: Query, sets: Sequence[LeafT],
                entities: list[list[ScoredEntity]]) -> Execution:
        """Run a validated query on its leaves' fuzzy sets."""

    def ranked(self, scores: np.ndarray, k: int, names: Sequence[str] | None = None
               ) -> list[ScoredEntity]:
        """The top ``k`` entities of an execution's ``scores`` (``names``: its labels when the
        scores are not indexed by node id), score descending."""
        if names is None:
            raise TypeError("on a GraphStore, rank an execution's scores with its names")
        return ranked_by_name(scores, names, k)

    # ---------------------------------------------------------------- older accessors
    @property
    def executor(self) -> QueryExecutor:
        """The whole-graph executor (in-memory graphs only)."""
        raise TypeError("the array executor needs an in-memory KnowledgeGraph")

    @property
    def store_executor(self) -> StoreQueryExecutor:
        """The symbolic executor through the graph's name-level ``one_hop`` (any graph)."""
        if self._store_executor is None:
            self._store_executor = StoreQueryExecutor(
                self.graph, self.vocabulary, max_frontier=self.config.max_frontier,
                **self.config.executor_options())
        return self._store_executor


class MemoryGraphExecutor(GraphExecutor[ArrayLeaf, int]):
    """UltRAG on an in-memory graph: node ids, whole-graph or SEPPR-subgraph execution.

    ``factory`` builds the executor of a (sub)graph; ``executor``, when given, is the
    whole-graph executor itself (a custom :class:`QueryExecutor` instance).
    """

    def __init__(self, kg: IdIndexedGraph, cfg: UltRAGConfig, kind: str,
                 factory: ExecutorFactory | None, subgraph_k: int | None,
                 executor: QueryExecutor | None = None,
                 vocabulary: GraphVocabulary | None = None) -> None:
        super().__init__(kg, vocabulary or GraphVocabulary.from_graph(
            kg, relation_backoff=cfg.relation_backoff), cfg, subgraph_k)
        self.kg = kg
        self.kind = kind
        self.factory = factory
        self._executor = executor

    @property
    def executor(self) -> QueryExecutor:
        """The whole-graph executor (built on first use)."""
        if self._executor is None:
            assert self.factory is not None  # one of the two is always given
            self._executor = self.factory(self.kg)
        return self._executor

    def resolve_leaf(self, leaf: Entity, required: bool) -> int | None:
        return self.vocabulary.resolve_entity(leaf, required=required)

    def seed_entry(self, seed: str) -> tuple[str, str]:
        name = normalize_name(seed)
        node = self.kg.node_index.get(name)
        if node is None:
            raise QueryResolutionError(f"seed entity {seed!r} is not in the graph")
        return self.vocabulary.entity_id(node), name

    def one_hot(self, node: int) -> tuple[ArrayLeaf, str]:
        return (np.array([node], np.int64), np.ones(1, FUZZY_DTYPE)), self.kg.node_names[node]

    def linked(self, linker: SoftmaxLeafLinker, mentions: Sequence[str]
               ) -> list[tuple[ArrayLeaf, list[ScoredEntity]]]:
        out = []
        for x, scored in linker.fuzzy_sets(mentions):
            ids = np.array([self.kg.node_index[e.name] for e in scored], np.int64)
            out.append(((ids, x[ids]), scored))
        return out

    def execute(self, query: Query, sets: Sequence[ArrayLeaf],
                entities: list[list[ScoredEntity]]) -> Execution:
        if self.subgraph_k is None:
            executor = self.executor
            if isinstance(executor, FuzzyQueryExecutor):
                scores, empty = executor.execute_traced(query, sets)
                return Execution(query, scores, entities, gaps=[to_dsl(p) for p in empty])
            return Execution(query, executor.execute(query, sets), entities)
        num_nodes = self.kg.num_nodes
        dense = [np.zeros(num_nodes, np.float64) for _ in sets]
        for x, (ids, values) in zip(dense, sets):
            x[ids] = values
        seeds = np.sum(dense, axis=0) if dense else np.zeros(num_nodes)
        if not np.any(seeds):
            return Execution(query, np.zeros(num_nodes, FUZZY_DTYPE), entities, 0)
        nodes = seppr_nodes(self.kg, seeds, k=self.subgraph_k, alpha=self.config.seppr_alpha,
                            steps=self.config.seppr_steps)
        assert self.factory is not None  # checked when set up: subgraph_k needs a factory
        local_scores = self.factory(induced_subgraph(self.kg, nodes)).execute(
            query, [x[nodes].astype(FUZZY_DTYPE) for x in dense])
        scores = np.zeros(num_nodes, dtype=FUZZY_DTYPE)
        scores[nodes] = local_scores
        return Execution(query, scores, entities, len(nodes))

    def ranked(self, scores: np.ndarray, k: int, names: Sequence[str] | None = None
               ) -> list[ScoredEntity]:
        """Ties by node id; the entity id is the vocabulary's (``Q<i>`` or the name)."""
        if names is not None:
            return ranked_by_name(scores, names, k)
        ids, values = top_k(scores, k)
        return [ScoredEntity(self.kg.node_names[i], float(s), "ultrag",
                             metadata={"entity_id": self.vocabulary.entity_id(i)})
                for i, s in zip(ids.tolist(), values.tolist())]


class StoreGraphExecutor(GraphExecutor[NameLeaf, str]):
    """UltRAG on a GraphStore: entities by name (``Q`` ids need the in-memory graph)."""

    def __init__(self, store: GraphStore, cfg: UltRAGConfig, subgraph_k: int | None) -> None:
        vocabulary = GraphVocabulary(store.list_relations(), [],
                                     relation_backoff=cfg.relation_backoff,
                                     relation_texts=RelationTextIndex.from_graph(store))
        super().__init__(store, vocabulary, cfg, subgraph_k)

    def resolve_leaf(self, leaf: Entity, required: bool) -> str | None:
        name = normalize_name(leaf.text)
        if name and self.graph.has_node(name):
            return name
        if required:
            hint = (" (Q ids need the in-memory KnowledgeGraph; name entities on a store)"
                    if _ENTITY_ID.match(leaf.text) and not leaf.quoted else "")
            raise QueryResolutionError(f"unknown entity {leaf.text!r}{hint}")
        return None

    def seed_entry(self, seed: str) -> tuple[str, str]:
        name = normalize_name(seed)
        if not self.graph.has_node(name):
            raise QueryResolutionError(f"seed entity {seed!r} is not in the graph")
        return quote(name), name

    def one_hot(self, node: str) -> tuple[NameLeaf, str]:
        return {node: 1.0}, node

    def linked(self, linker: SoftmaxLeafLinker, mentions: Sequence[str]
               ) -> list[tuple[NameLeaf, list[ScoredEntity]]]:
        return linker.fuzzy_dicts(mentions)


class SymbolicStoreExecutor(StoreGraphExecutor):
    """The symbolic executor inside the store: one ``one_hop`` read per projection
    (:mod:`kgrag.methods.ultrag.store_executor`; no ``NOT``, frontiers cut at
    ``max_frontier``)."""

    kind = "symbolic"

    def execute(self, query: Query, sets: Sequence[NameLeaf],
                entities: list[list[ScoredEntity]]) -> Execution:
        executor = self.store_executor
        executor.sets.truncated = False
        found, empty = executor.execute_traced(query, sets)
        scores = np.fromiter(found.values(), dtype=FUZZY_DTYPE, count=len(found))
        return Execution(query, scores, entities, names=list(found),
                         truncated=executor.truncated, gaps=[to_dsl(p) for p in empty])


class NeuralStoreExecutor(StoreGraphExecutor):
    """UltraQuery on the SEPPR subgraph fetched from the store around the leaves' entities
    (Alg. 2); entities outside it score 0 (are not listed)."""

    kind = "neural"

    def __init__(self, store: GraphStore, cfg: UltRAGConfig, subgraph_k: int,
                 factory: ExecutorFactory) -> None:
        super().__init__(store, cfg, subgraph_k)
        self.factory = factory

    def execute(self, query: Query, sets: Sequence[NameLeaf],
                entities: list[list[ScoredEntity]]) -> Execution:
        seeds: dict[str, float] = {}
        for leaf in sets:
            for name, p in leaf.items():
                seeds[name] = seeds.get(name, 0.0) + p
        if not seeds:
            return Execution(query, np.zeros(0, FUZZY_DTYPE), entities, 0, names=[])
        cfg = self.config
        sub, _ = store_subgraph(self.graph, self.vocabulary.relation_names, seeds,
                                hops=cfg.store_hops, max_edges=cfg.store_max_edges,
                                k=self.subgraph_k or PAPER_TOP_K, alpha=cfg.seppr_alpha,
                                steps=cfg.seppr_steps)
        local_sets = []
        for leaf in sets:
            ids = [sub.node_index[n] for n in leaf if n in sub.node_index]
            local_sets.append((np.asarray(ids, np.int64),
                               np.asarray([leaf[sub.node_names[i]] for i in ids], FUZZY_DTYPE)))
        scores = np.asarray(self.factory(sub).execute(query, local_sets), FUZZY_DTYPE)
        return Execution(query, scores, entities, sub.num_nodes, names=list(sub.node_names))


# ------------------------------------------------------------ exact first (the default)
#: proved answers score above this, neural guesses at or below it
EXACT_TIER = 0.5


def exact_first(exact: np.ndarray, neural: np.ndarray | None) -> np.ndarray:
    """The hybrid score: ``0.5 + 0.5 * exact`` where the graph proves an answer, else
    ``0.5 * neural`` (0 without a neural run). Monotone in each executor's own order."""
    proved = np.flatnonzero(exact)
    if neural is None:
        combined = np.zeros(len(exact), FUZZY_DTYPE)
    else:
        combined = (EXACT_TIER * np.asarray(neural, np.float64)).astype(FUZZY_DTYPE)
    combined[proved] = EXACT_TIER + (1 - EXACT_TIER) * np.asarray(exact, np.float64)[proved]
    return combined


class HybridGraphExecutor(GraphExecutor[Any, Any]):
    """Exact first, neural where the graph does not know (see the module docstring).

    ``exact`` and ``neural`` are the symbolic and neural executors of the same graph (same leaf
    representation); leaves, seeds and ranking are the exact one's.
    """

    kind = "hybrid"

    def __init__(self, exact: GraphExecutor[Any, Any], neural: GraphExecutor[Any, Any],
                 min_exact_answers: int = 1) -> None:
        super().__init__(exact.graph, exact.vocabulary, exact.config, neural.subgraph_k)
        if min_exact_answers < 1:
            raise ValueError("min_exact_answers must be >= 1")
        self.exact = exact
        self.neural = neural
        self.min_exact_answers = min_exact_answers

    # the exact executor's leaves, seeds and ranking (both sides share them)
    def resolve_leaf(self, leaf: Entity, required: bool) -> Any:
        return self.exact.resolve_leaf(leaf, required)

    def seed_entry(self, seed: str) -> tuple[str, str]:
        return self.exact.seed_entry(seed)

    def one_hot(self, node: Any) -> tuple[Any, str]:
        return self.exact.one_hot(node)

    def linked(self, linker: SoftmaxLeafLinker, mentions: Sequence[str]
               ) -> list[tuple[Any, list[ScoredEntity]]]:
        return self.exact.linked(linker, mentions)

    def ranked(self, scores: np.ndarray, k: int, names: Sequence[str] | None = None
               ) -> list[ScoredEntity]:
        return self.exact.ranked(scores, k, names)

    @property
    def executor(self) -> QueryExecutor:
        """The exact whole-graph executor (in-memory graphs)."""
        return self.exact.executor

    @property
    def store_executor(self) -> StoreQueryExecutor:
        return self.exact.store_executor

    def neural_reason(self, exact: Execution, sets: Sequence[Any] = ()) -> str | None:
        """Why the neural executor must run after ``exact``, or ``None`` (the graph knows).

        The entities of the leaves (``sets``) do not count as answers: a chain that only leads
        back to the question's own entity (``Q -> directed_by -> directed_by_inv``: the film
        itself) has proved nothing the question asks for.
        """
        if exact.gaps:
            return f"no exact answer for {exact.gaps[0]}"
        if exact.gaps is None:
            return "the exact execution was not traced"
        found = int(np.count_nonzero(exact.scores)) - self._leaf_answers(exact, sets)
        if found < self.min_exact_answers:
            return (f"{found} exact answer{'s' * (found != 1)} besides the query's own "
                    f"entities, fewer than min_exact_answers={self.min_exact_answers}")
        return None

    @staticmethod
    def _leaf_answers(exact: Execution, sets: Sequence[Any]) -> int:
        """How many of the leaves' entities are among the exact answers."""
        if exact.names is None:  # node ids: leaf sets are (ids, memberships)
            ids = {int(i) for leaf_ids, _ in sets for i in np.asarray(leaf_ids)}
            return sum(1 for i in ids if exact.scores[i] != 0)
        names = {name for leaf in sets for name in leaf}
        return sum(1 for name, score in zip(exact.names, exact.scores)
                   if score != 0 and name in names)

    def execute(self, query: Query, sets: Sequence[Any],
                entities: list[list[ScoredEntity]]) -> Execution:
        exact = self.exact.execute(query, sets, entities)
        reason = self.neural_reason(exact, sets)
        if reason is None:
            return Execution(query, exact_first(exact.scores, None), entities,
                             names=exact.names, truncated=exact.truncated, gaps=[],
                             exact_scores=exact.scores)
        neural = self.neural.execute(query, sets, entities)
        if exact.names is None and neural.names is None:
            exact_scores, neural_scores, names = exact.scores, neural.scores, None
        else:
            exact_scores, neural_scores, names = _by_name(exact, neural)
        return Execution(query, exact_first(exact_scores, neural_scores), entities,
                         subgraph_nodes=neural.subgraph_nodes, names=names,
                         truncated=exact.truncated, gaps=exact.gaps,
                         exact_scores=exact_scores, neural_scores=neural_scores,
                         neural_reason=reason)


def _by_name(exact: Execution, neural: Execution
             ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Both executions' scores over the union of the entities they name (GraphStores)."""
    names = list(dict.fromkeys([*(exact.names or []), *(neural.names or [])]))
    where = {name: i for i, name in enumerate(names)}
    out = []
    for execution in (exact, neural):
        scores = np.zeros(len(names), FUZZY_DTYPE)
        if execution.names is not None:
            scores[[where[n] for n in execution.names]] = execution.scores
        out.append(scores)
    return out[0], out[1], names


# ------------------------------------------------------------------------------ set-up
def executor_factory(executor: str, cfg: UltRAGConfig, weights: Any) -> ExecutorFactory:
    """The executor of one (sub)graph for ``"symbolic"`` / ``"neural"``, with ``cfg``'s options."""
    def vocabulary(kg: IdIndexedGraph) -> GraphVocabulary:
        return GraphVocabulary.from_graph(kg, relation_backoff=cfg.relation_backoff)

    if executor == "symbolic":
        return lambda kg: SymbolicFuzzyExecutor(kg, vocabulary=vocabulary(kg),
                                                **cfg.executor_options())
    return lambda kg: NeuralFuzzyExecutor(
        kg, weights=weights, threads=cfg.threads, logic=cfg.logic, threshold=cfg.threshold,
        soft_and=cfg.soft_and, vocabulary=vocabulary(kg))


def graph_executor(graph: GraphStore, executor: str | QueryExecutor | ExecutorFactory,
                   cfg: UltRAGConfig, weights: Any = None) -> GraphExecutor[Any, Any]:
    """The :class:`GraphExecutor` for ``graph`` and the executor choice, checked against the
    graph kind: ``"hybrid"`` / ``"neural"`` / ``"symbolic"`` anywhere; on an in-memory graph
    also a :class:`QueryExecutor` for the whole graph or a factory ``kg -> executor``.

    ``"hybrid"`` (:mod:`~kgrag.methods.ultrag.hybrid`) is the exact executor on the whole
    graph (never a SEPPR subgraph: proved answers are not dropped) plus the neural one under
    the size rule, run only where the exact one has no answer.

    The neural size rule: a GraphStore, or an in-memory graph with more than
    ``cfg.full_graph_max_nodes`` nodes, runs UltraQuery on the SEPPR subgraph of
    ``cfg.subgraph_k`` (default: the paper's 30,000) nodes around the query's anchors.
    """
    if not isinstance(graph, GraphStore):
        raise TypeError("graph must be a KnowledgeGraph or a GraphStore (e.g. "
                        f"Neo4jGraphStore), not {type(graph).__name__}")
    if isinstance(executor, str) and executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, an executor or a factory, "
                         f"got {executor!r}")
    if executor == "hybrid":
        return _hybrid(graph, cfg, weights)
    subgraph_k = cfg.subgraph_k
    if isinstance(graph, IdIndexedGraph):
        if executor == "neural" and graph.num_nodes > cfg.full_graph_max_nodes:
            subgraph_k = PAPER_TOP_K if subgraph_k is None else subgraph_k
        if isinstance(executor, str):
            return MemoryGraphExecutor(graph, cfg, executor,
                                       executor_factory(executor, cfg, weights), subgraph_k)
        if isinstance(executor, QueryExecutor):
            if subgraph_k is not None:
                raise ValueError("with subgraph_k, pass executor as a factory kg -> executor")
            return MemoryGraphExecutor(graph, cfg, "custom", None, None, executor=executor)
        if not callable(executor):
            raise TypeError(f"executor must be one of {EXECUTORS}, a QueryExecutor or a "
                            f"factory kg -> executor, not {type(executor).__name__}")
        return MemoryGraphExecutor(graph, cfg, "custom", executor, subgraph_k)
    if not isinstance(executor, str):
        raise ValueError("a custom executor needs an in-memory KnowledgeGraph; on a "
                         "GraphStore use executor='neural' or 'symbolic'")
    if executor == "symbolic":
        if subgraph_k is not None:
            raise ValueError("SEPPR subgraphs on a GraphStore need executor='neural'; the "
                             "symbolic executor runs each projection as a one_hop query")
        return SymbolicStoreExecutor(graph, cfg, None)
    # the size rule: the neural executor always runs on a subgraph fetched from a store
    return NeuralStoreExecutor(graph, cfg, PAPER_TOP_K if subgraph_k is None else subgraph_k,
                               executor_factory(executor, cfg, weights))


def _hybrid(graph: GraphStore, cfg: UltRAGConfig, weights: Any) -> GraphExecutor[Any, Any]:
    """The exact-first executor: symbolic on the whole graph, neural where it has no answer."""
    neural = graph_executor(graph, "neural", cfg, weights)
    if isinstance(graph, IdIndexedGraph):
        exact: GraphExecutor[Any, Any] = MemoryGraphExecutor(
            graph, cfg, "symbolic", executor_factory("symbolic", cfg, weights), None,
            vocabulary=neural.vocabulary)
    else:
        exact = SymbolicStoreExecutor(graph, cfg, None)
    return HybridGraphExecutor(exact, neural, cfg.min_exact_answers)
