"""The UltRAG pipeline (the paper's Algorithm 1, as instantiated by UltRAG-OTS).

One question costs exactly two LLM calls when the first query parses:

1. **query generation** -- the LLM writes a DSL query from the question, the relation list and
   any seed entities (re-asked at most ``max_reasks`` times when the reply does not parse or
   names an unknown relation);
2. leaves become fuzzy sets (seed ids one-hot; quoted mentions by the Eq. 2 softmax linker),
   the executor scores every entity (optionally on a SEPPR subgraph), the decider accepts
   (UltRAG-OTS: always) and :meth:`UltRAG.retrieve` returns the top entities;
3. **arbitration** (:meth:`UltRAG.answer`) -- the LLM picks the answers among the top 50.

:meth:`UltRAG.execute` runs a query written by code, with no LLM at all::

    UltRAG(kg, linking="exact").execute('"Tokyo Godfathers" -> directed_by')

The executor is the paper's **neural** UltraQuery (default; packaged checkpoint, see
:mod:`kgrag.methods.ultrag.neural`) or the **symbolic** fuzzy traversal (``executor="symbolic"``,
the paper's ablation), both behind one fuzzy-query evaluator. The graph is an in-memory
:class:`~kgrag.KnowledgeGraph` or any GraphStore such as a Neo4j database (symbolic: each
projection runs in the store, :mod:`kgrag.methods.ultrag.store_executor`; neural: on the SEPPR
subgraph fetched around the query's anchors).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgrag.context.types import Answer, RetrievalResult, ScoredEntity, Usage
from kgrag.errors import LLMNotConfiguredError, LLMOutputError
from kgrag.graph.base import GraphStore
from kgrag.graph.memory import KnowledgeGraph, normalize_name
from kgrag.linking.relation_names import RelationTextIndex
from kgrag.llm import extract_tag, optional_llm
from kgrag.llm.base import no_llm_message, track_usage
from kgrag.llm.prompts import PromptSet
from kgrag.llm.steps import Steps, ask_and_parse, run_async, run_sync
from kgrag.methods.base import KGMethod, keyword_only_llm
from kgrag.methods.ultrag.arbitrator import Arbitrator, LLMArbitrator, MarginArbitrator
from kgrag.methods.ultrag.config import LINKING_MODES as LINKING_MODES
from kgrag.methods.ultrag.config import PAPER_ARBITRATION_TOP_K, UltRAGConfig
from kgrag.methods.ultrag.executor import (
    FUZZY_DTYPE,
    QueryExecutor,
    SymbolicFuzzyExecutor,
    top_k,
)
from kgrag.methods.ultrag.linking import SoftmaxLeafLinker
from kgrag.methods.ultrag.neural import (
    NeuralFuzzyExecutor,
    store_subgraph,
)
from kgrag.methods.ultrag.prompts import PROMPTS, query_prompt
from kgrag.methods.ultrag.query import (
    Query,
    QueryError,
    QueryResolutionError,
    leaves,
    parse_query,
    quote,
    relations,
    to_dsl,
)
from kgrag.methods.ultrag.seppr import (
    PAPER_TOP_K,
    induced_subgraph,
    seppr_nodes,
)
from kgrag.methods.ultrag.store_executor import StoreQueryExecutor
from kgrag.methods.ultrag.vocabulary import GraphVocabulary

EXECUTORS = ("neural", "symbolic")
#: the default executor: the paper's method (UltraQuery); "symbolic" is its ablation
DEFAULT_EXECUTOR = "neural"

_FENCE = re.compile(r"```[a-zA-Z]*\n?|```")
_ENTITY_ID = re.compile(r"^Q\d+$")


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

    @property
    def query_text(self) -> str:
        return to_dsl(self.query)


@dataclass
class Rounds:
    """How Algorithm 1's rounds ended: the last query and its execution, or the failure."""

    query: Query | None = None
    reply: str | None = None
    execution: Execution | None = None
    count: int = 0
    failure: LLMOutputError | QueryError | None = None


def extract_query_text(reply: str) -> str:
    """The query in an LLM reply: the ``<query>`` tag, else the first line that looks like one."""
    body = extract_tag(reply or "", "query")
    if body is None:
        lines = [ln.strip() for ln in _FENCE.sub("\n", reply or "").splitlines() if ln.strip()]
        candidates = [ln for ln in lines if "->" in ln or "→" in ln]
        body = candidates[0] if candidates else (lines[0] if lines else "")
    body = _FENCE.sub("", body).strip().strip("`").strip()
    if body.lower().startswith("query:"):
        body = body[6:].strip()
    return body


def _check_graph_and_executor(graph: Any, in_memory: bool, executor: Any,
                              cfg: UltRAGConfig) -> Any:
    """The executor choice (``None`` = the default) checked against the graph kind."""
    if not in_memory and not (hasattr(graph, "one_hop") and hasattr(graph, "list_relations")):
        raise TypeError("graph must be a KnowledgeGraph or a GraphStore (e.g. "
                        f"Neo4jGraphStore), not {type(graph).__name__}")
    if executor is None:
        executor = DEFAULT_EXECUTOR
    if isinstance(executor, str) and executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, an executor or a factory, "
                         f"got {executor!r}")
    if not in_memory and not isinstance(executor, str):
        raise ValueError("a custom executor needs an in-memory KnowledgeGraph; on a "
                         "GraphStore use executor='neural' or 'symbolic'")
    if not in_memory and executor == "symbolic" and cfg.subgraph_k is not None:
        raise ValueError("SEPPR subgraphs on a GraphStore need executor='neural'; the "
                         "symbolic executor runs each projection as a one_hop query")
    return executor


class UltRAG(KGMethod):
    """UltRAG over an in-memory :class:`~kgrag.KnowledgeGraph`.

    Parameters (paper defaults in brackets)
    ---------------------------------------
    graph: the knowledge graph.
    llm: any LangChain chat model / LlamaIndex LLM / callable; needed for :meth:`retrieve` and
        :meth:`answer`, not for :meth:`execute`.
    embedder, linker: for Eq. 2 linking of quoted mentions (``None`` = packaged MiniLM, loaded
        on first use). ``linking="exact"`` resolves mentions by name/alias only (no model).
    sigma [0.1], link_k [unstated; 10]: Eq. 2 temperature and candidates per mention.
    executor ["neural"]: ``"neural"`` (the paper's UltraQuery, packaged checkpoint),
        ``"symbolic"`` (exact fuzzy traversal; the paper's ablation), a :class:`QueryExecutor`
        for the whole graph, or a factory ``kg -> executor`` (for SEPPR subgraphs).
    projection ["max"]: the symbolic projection (``"max"``, ``"noisy_or"``, ``"sum"``).
    logic ["product"], soft_and [off]: fuzzy AND / OR of either executor.
    threshold [0]: symbolic: memberships below it are cut after each projection; neural:
        UltraQuery's intermediate threshold (inputs at or below it are zeroed; 0.0 for the
        packaged checkpoint).
    weights [packaged]: another UltraQuery checkpoint (``.npz``, same keys) for ``"neural"``.
    threads [torch's setting]: torch threads of the neural forward pass.
    full_graph_max_nodes [50,000]: the neural size rule -- larger graphs (and every GraphStore)
        run UltraQuery on the SEPPR subgraph of ``subgraph_k`` nodes (default 30,000, the
        paper's) around the query's anchors.
    store_hops [2], store_max_edges [200,000]: the neighbourhood fetched from a GraphStore for
        the neural executor before SEPPR.
    top_k [50]: entities returned by :meth:`retrieve` and shown to the arbitrator.
    arbitrator: ``"llm"`` (paper), ``"margin"`` (LLM-free) or an :class:`Arbitrator`; default
        ``"llm"`` when an LLM is given, else ``"margin"``.
    margin [ours; 0.05]: the margin arbitrator's tolerance below the top score.
    max_reasks [unstated; 1]: extra query-generation calls when a reply does not parse.
    max_rounds [UltRAG-OTS: 1]: Algorithm 1's loop; with more than one round, an empty
        answer set makes the LLM write a new query (decider = "non-empty"), at most this often.
    subgraph_k [off; paper 30,000 on Wikidata-scale graphs]: run on the SEPPR top-k subgraph
        (with ``"neural"``, also used -- default 30,000 -- beyond ``full_graph_max_nodes``).
    seppr_alpha [0.85], seppr_steps [5].
    on_unusable_reply ["raise"]: a query reply that still does not parse (or whose query
        fails) after the re-asks, or a blank arbitration reply, raises
        :class:`~kgrag.errors.LLMOutputError`; ``"empty"`` returns an empty result whose
        ``metadata["error"]`` holds the reason (docs/examples.md, "Unusable LLM replies").
        ``on_invalid_query`` is its deprecated old name.
    max_frontier [ours; 10,000]: on a GraphStore, the most entities one projection expands
        (see :mod:`kgrag.methods.ultrag.store_executor`).
    relation_backoff [ours; off]: a rapidfuzz score (0-100, e.g. 85); an unknown relation label
        then resolves to the closest relation name instead of failing (recorded in
        ``metadata["relation_backoff"]``). ``P`` ids out of range still fail.
    prompts: replace the ``query``, ``query_system``, ``arbitration`` or ``arbitration_system``
        templates by name (:data:`kgrag.methods.ultrag.prompts.PROMPTS`; see
        :mod:`kgrag.llm.prompts`).

    ``graph`` may also be any :class:`~kgrag.graph.base.GraphStore` (Neo4j, FalkorDB): leaves
    are given by name (``Q`` ids need the in-memory graph); the symbolic executor runs one
    ``one_hop`` call per projection inside the database (no ``NOT``), the neural one runs on
    the SEPPR subgraph fetched around the leaves; custom executors are not available.
    """

    name = "ultrag"

    @keyword_only_llm("llm")
    def __init__(
        self,
        graph: GraphStore,
        *,
        llm: Any = None,
        embedder: Any = None,
        linker: Any = None,
        executor: str | QueryExecutor | Callable[[KnowledgeGraph], QueryExecutor] | None = None,
        arbitrator: str | Arbitrator | None = None,
        prompts: Any = None,
        weights: Any = None,
        config: UltRAGConfig | None = None,
        **params: Any,
    ) -> None:
        #: the tuning knobs (:class:`~kgrag.methods.ultrag.config.UltRAGConfig`); ``params``
        #: (``top_k=20``, ``linking="exact"`` ...) override fields of ``config``
        self.config = cfg = (config or UltRAGConfig()).replace(**params)
        in_memory = isinstance(graph, KnowledgeGraph)
        executor = _check_graph_and_executor(graph, in_memory, executor, cfg)
        #: the in-memory graph (``None`` on a GraphStore) and the store every method talks to
        self.kg: KnowledgeGraph | None = graph if in_memory else None
        self.store = graph
        self.llm = optional_llm(llm)
        self.prompts = PromptSet(PROMPTS, prompts, method="UltRAG")
        self.vocabulary = (
            GraphVocabulary.from_graph(graph, relation_backoff=cfg.relation_backoff) if in_memory
            else GraphVocabulary(graph.list_relations(), [],
                                 relation_backoff=cfg.relation_backoff,
                                 relation_texts=RelationTextIndex.from_graph(graph)))
        self._embedder = embedder
        self._linker_arg = linker
        self._leaf_linker: SoftmaxLeafLinker | None = None
        self._store_executor: StoreQueryExecutor | None = None
        # every knob is also an attribute, as before the config existed
        self.linking, self.sigma, self.link_k = cfg.linking, cfg.sigma, cfg.link_k
        self.executor_options = cfg.executor_options()
        self.max_frontier = cfg.max_frontier
        #: "neural", "symbolic" or "custom"
        self.executor_kind = executor if isinstance(executor, str) else "custom"
        self.weights = weights
        self.threads = cfg.threads
        self.full_graph_max_nodes = cfg.full_graph_max_nodes
        self.store_hops, self.store_max_edges = cfg.store_hops, cfg.store_max_edges
        self.top_k = cfg.top_k
        self.max_reasks, self.max_rounds = cfg.max_reasks, cfg.max_rounds
        self.seppr_alpha, self.seppr_steps = cfg.seppr_alpha, cfg.seppr_steps
        self.on_unusable_reply = cfg.on_unusable_reply
        self.subgraph_k = self._set_up_executor(executor, cfg, weights)
        self.arbitrator: Arbitrator = self._make_arbitrator(arbitrator, cfg)

    def _set_up_executor(self, executor: Any, cfg: UltRAGConfig, weights: Any) -> int | None:
        """The whole-graph executor (or its factory ``kg -> executor``, built on first use);
        returns the SEPPR subgraph size to use (``None``: the whole graph)."""
        subgraph_k = cfg.subgraph_k
        self._executor: QueryExecutor | None = None
        vocabulary = lambda kg: GraphVocabulary.from_graph(  # noqa: E731
            kg, relation_backoff=cfg.relation_backoff)
        if executor == "symbolic":
            self._executor_factory: Callable[[KnowledgeGraph], QueryExecutor] = (
                lambda kg: SymbolicFuzzyExecutor(kg, vocabulary=vocabulary(kg),
                                                 **self.executor_options))
        elif executor == "neural":
            self._executor_factory = (
                lambda kg: NeuralFuzzyExecutor(
                    kg, weights=weights, threads=cfg.threads, logic=cfg.logic,
                    threshold=cfg.threshold, soft_and=cfg.soft_and,
                    vocabulary=vocabulary(kg)))
            if self.kg is None or self.kg.num_nodes > cfg.full_graph_max_nodes:
                # the size rule: a GraphStore, or a graph too large for one pass
                subgraph_k = PAPER_TOP_K if subgraph_k is None else subgraph_k
        elif callable(executor) and not hasattr(executor, "execute"):
            self._executor_factory = executor
        else:
            if subgraph_k is not None:
                raise ValueError("with subgraph_k, pass executor as a factory kg -> executor")
            self._executor_factory = None  # type: ignore[assignment]
            self._executor = executor
        return subgraph_k

    def _make_arbitrator(self, arbitrator: str | Arbitrator | None,
                         cfg: UltRAGConfig) -> Arbitrator:
        """``"llm"`` (default with an LLM), ``"margin"`` (default without) or a given one."""
        if arbitrator is None:
            arbitrator = "llm" if self.llm is not None else "margin"
        if arbitrator == "llm":
            if self.llm is None:
                raise LLMNotConfiguredError(no_llm_message(
                    "The LLM arbitrator", "Without an LLM, use arbitrator='margin'."))
            return LLMArbitrator(self.llm, self.prompts)
        if arbitrator == "margin":
            return MarginArbitrator(margin=cfg.margin, max_answers=cfg.top_k)
        if isinstance(arbitrator, str):
            raise ValueError("arbitrator must be 'llm', 'margin' or an Arbitrator")
        return arbitrator

    # ------------------------------------------------------------------ components
    @property
    def executor(self) -> QueryExecutor:
        """The whole-graph executor (built on first use; in-memory graphs only)."""
        if self.kg is None:
            raise TypeError("the array executor needs an in-memory KnowledgeGraph")
        if self._executor is None:
            self._executor = self._executor_factory(self.kg)
        return self._executor

    @property
    def store_executor(self) -> StoreQueryExecutor:
        if self._store_executor is None:
            self._store_executor = StoreQueryExecutor(self.store, self.vocabulary,
                                                      max_frontier=self.max_frontier,
                                                      **self.executor_options)
        return self._store_executor

    @property
    def leaf_linker(self) -> SoftmaxLeafLinker:
        if self._leaf_linker is None:
            self._leaf_linker = SoftmaxLeafLinker(self.store, linker=self._linker_arg,
                                                  embedder=self._embedder, k=self.link_k,
                                                  sigma=self.sigma)
        return self._leaf_linker

    # ------------------------------------------------------------------ query generation
    def query_prompt(self, question: str, seeds: Sequence[str] = ()) -> str:
        descriptions = getattr(self.store, "relation_descriptions", None) or {}
        return query_prompt(question, self.vocabulary, seeds=self._seed_entries(seeds),
                            descriptions=descriptions,
                            labels=getattr(self.store, "relation_labels", None),
                            template=self.prompts.template("query"))

    def _seed_entries(self, seeds: Sequence[str]) -> list[tuple[str, str]]:
        """``(id as the LLM should write it, name)`` per seed: ``Q<i>``, or the quoted name."""
        entries = []
        for seed in seeds:
            name = normalize_name(seed)
            if self.kg is not None:
                node = self.kg.node_index.get(name)
                if node is None:
                    raise QueryResolutionError(f"seed entity {seed!r} is not in the graph")
                entries.append((self.vocabulary.entity_id(node), name))
            else:
                if not self.store.has_node(name):
                    raise QueryResolutionError(f"seed entity {seed!r} is not in the graph")
                entries.append((quote(name), name))
        return entries

    def relation_substitutions(self, query: Query) -> dict[str, str]:
        """``{token: relation name}`` for relation tokens resolved only by back-off."""
        out = {}
        for rel in relations(query):
            if not self.vocabulary.is_exact(rel):
                rel_id, _ = self.vocabulary.resolve_relation(rel)
                out[rel.name] = self.vocabulary.relation_names[rel_id]
        return out

    def _resolve_leaf(self, leaf: Any, required: bool) -> Any:
        """Node id (in-memory graph) or name (GraphStore) of a leaf; ``None`` when unknown."""
        if self.kg is not None:
            return self.vocabulary.resolve_entity(leaf, required=required)
        name = normalize_name(leaf.text)
        if name and self.store.has_node(name):
            return name
        if required:
            hint = (" (Q ids need the in-memory KnowledgeGraph; name entities on a store)"
                    if _ENTITY_ID.match(leaf.text) and not leaf.quoted else "")
            raise QueryResolutionError(f"unknown entity {leaf.text!r}{hint}")
        return None

    def validate(self, query: Query) -> Query:
        """Bind relations written in words (labels, last segments of path-like ids; see
        :meth:`GraphVocabulary.expand_written_relations`), then check every relation and every
        unquoted id leaf against the graph. Returns the bound query."""
        query = self.vocabulary.expand_written_relations(query)
        for rel in relations(query):
            self.vocabulary.resolve_relation(rel)
        for leaf in leaves(query):
            if leaf.quoted:
                continue
            looks_like_id = bool(_ENTITY_ID.match(leaf.text))
            self._resolve_leaf(leaf, required=self.linking == "exact" or looks_like_id)
        return query

    def parse_reply(self, reply: str) -> Query:
        """Parse and validate an LLM reply; any problem is an ``LLMOutputError`` (re-asked)."""
        text = extract_query_text(reply)
        try:
            return self.validate(parse_query(text))
        except QueryError as exc:
            raise LLMOutputError(f"invalid query {text[:200]!r}: {exc}") from exc

    def _query_llm(self) -> Any:
        """The LLM for query generation; a clear error when there is none."""
        if self.llm is None:
            raise LLMNotConfiguredError(no_llm_message(
                "UltRAG query generation", "UltRAG has no LLM-free retrieval: without an LLM, "
                "run a logical query you write with execute()."))
        return self.llm

    def _query_steps(self, question: str, seeds: Sequence[str] = (), feedback: str = ""
                     ) -> Steps[tuple[Query, str]]:
        """One query-generation request plus at most ``max_reasks`` re-asks, as steps."""
        return ask_and_parse(self.query_prompt(question, seeds) + feedback, self.parse_reply,
                             retries=self.max_reasks,
                             system=self.prompts.template("query_system"))

    def generate_query(self, question: str, seeds: Sequence[str] = (), feedback: str = ""
                       ) -> tuple[Query, str]:
        """One query-generation call (plus at most ``max_reasks`` re-asks)."""
        llm = self._query_llm()
        return run_sync(self._query_steps(question, seeds, feedback), llm)

    async def agenerate_query(self, question: str, seeds: Sequence[str] = (), feedback: str = ""
                              ) -> tuple[Query, str]:
        """:meth:`generate_query` with ``await llm.acomplete``."""
        llm = self._query_llm()
        return await run_async(self._query_steps(question, seeds, feedback), llm)

    @staticmethod
    def _empty_feedback(tried: list[str]) -> str:
        listed = "\n".join(f"- {q}" for q in tried)
        return (f"\n\nThese queries returned no entities at all:\n{listed}\nWrite a different "
                "query (other relations, directions or leaves).")

    # ------------------------------------------------------------------ execution
    def leaf_sets(self, query: Query) -> tuple[list[tuple[np.ndarray, np.ndarray]],
                                               list[list[ScoredEntity]]]:
        """One sparse fuzzy set ``(ids, memberships)`` per leaf: ids/names one-hot; quoted
        mentions by Eq. 2 (``"dense"``).

        An unquoted leaf that is neither an id nor a name falls back to linking in
        ``"dense"`` mode and raises :class:`QueryResolutionError` in ``"exact"`` mode.
        """
        sets: list[Any] = []
        entities: list[list[ScoredEntity] | None] = []
        to_link: list[tuple[int, str]] = []
        for i, leaf in enumerate(leaves(query)):
            node = None
            if not (leaf.quoted and self.linking == "dense"):
                node = self._resolve_leaf(leaf, required=self.linking == "exact")
            if node is None:
                to_link.append((i, leaf.text))
                sets.append(None)
                entities.append(None)
                continue
            if self.kg is None:  # GraphStore: fuzzy sets are {name: membership}
                sets.append({node: 1.0})
                name = node
            else:
                sets.append((np.array([node], np.int64), np.ones(1, FUZZY_DTYPE)))
                name = self.kg.node_names[node]
            entities.append([ScoredEntity(name, 1.0, "id", metadata={"mention": leaf.text})])
        if to_link:
            mentions = [text for _, text in to_link]
            if self.kg is None:
                for (i, _), (memberships, scored) in zip(
                        to_link, self.leaf_linker.fuzzy_dicts(mentions)):
                    sets[i] = memberships
                    entities[i] = scored
            else:
                for (i, _), (x, scored) in zip(to_link, self.leaf_linker.fuzzy_sets(mentions)):
                    ids = np.array([self.kg.node_index[e.name] for e in scored], np.int64)
                    sets[i] = (ids, x[ids])
                    entities[i] = scored
        return sets, entities  # type: ignore[return-value]

    def run(self, query: Query | str) -> Execution:
        """Bind the leaves and execute ``query``; scores cover every node of the graph."""
        query = self.validate(parse_query(query))
        sets, entities = self.leaf_sets(query)
        if self.kg is None and self.executor_kind == "neural":
            return self._run_store_subgraph(query, sets, entities)
        if self.kg is None:
            found = self.store_executor.execute_names(query, sets)
            names = list(found)
            scores = np.fromiter(found.values(), dtype=FUZZY_DTYPE, count=len(found))
            return Execution(query, scores, entities, names=names,
                             truncated=self.store_executor.truncated)
        if self.subgraph_k is None:
            scores = self.executor.execute(query, sets)
            return Execution(query, scores, entities)
        dense = [np.zeros(self.kg.num_nodes, np.float64) for _ in sets]
        for x, (ids, values) in zip(dense, sets):
            x[ids] = values
        seeds = np.sum(dense, axis=0) if dense else np.zeros(self.kg.num_nodes)
        if not np.any(seeds):
            return Execution(query, np.zeros(self.kg.num_nodes, FUZZY_DTYPE), entities, 0)
        nodes = seppr_nodes(self.kg, seeds, k=self.subgraph_k, alpha=self.seppr_alpha,
                            steps=self.seppr_steps)
        sub = induced_subgraph(self.kg, nodes)
        local_scores = self._executor_factory(sub).execute(
            query, [x[nodes].astype(FUZZY_DTYPE) for x in dense])
        scores = np.zeros(self.kg.num_nodes, dtype=FUZZY_DTYPE)
        scores[nodes] = local_scores
        return Execution(query, scores, entities, len(nodes))

    def _run_store_subgraph(self, query: Query, sets: list[dict[str, float]],
                            entities: list[list[ScoredEntity]]) -> Execution:
        """The neural executor on a GraphStore: UltraQuery on the SEPPR subgraph fetched around
        the leaves' entities (Alg. 2); entities outside it score 0 (are not listed)."""
        seeds: dict[str, float] = {}
        for leaf in sets:
            for name, p in leaf.items():
                seeds[name] = seeds.get(name, 0.0) + p
        if not seeds:
            return Execution(query, np.zeros(0, FUZZY_DTYPE), entities, 0, names=[])
        sub, _ = store_subgraph(self.store, self.vocabulary.relation_names, seeds,
                                hops=self.store_hops, max_edges=self.store_max_edges,
                                k=self.subgraph_k or PAPER_TOP_K, alpha=self.seppr_alpha,
                                steps=self.seppr_steps)
        local_sets = []
        for leaf in sets:
            ids = [sub.node_index[n] for n in leaf if n in sub.node_index]
            local_sets.append((np.asarray(ids, np.int64),
                               np.asarray([leaf[sub.node_names[i]] for i in ids], FUZZY_DTYPE)))
        scores = np.asarray(self._executor_factory(sub).execute(query, local_sets), FUZZY_DTYPE)
        return Execution(query, scores, entities, sub.num_nodes, names=list(sub.node_names))

    def ranked(self, scores: np.ndarray, k: int | None = None,
               names: Sequence[str] | None = None) -> list[ScoredEntity]:
        """The top ``k`` entities (default ``top_k``), score descending, ties by node id.

        ``names`` labels the positions of ``scores`` when they are not node ids (GraphStore
        executions); the tie order is then by name, and the entity id is the name.
        """
        if names is not None:
            order = sorted(range(len(names)), key=lambda i: (-float(scores[i]), names[i]))
            return [ScoredEntity(names[i], float(scores[i]), "ultrag",
                                 metadata={"entity_id": names[i]})
                    for i in order[: k or self.top_k] if scores[i] > 0]
        assert self.kg is not None
        ids, values = top_k(scores, k or self.top_k)
        return [ScoredEntity(self.kg.node_names[i], float(s), "ultrag",
                             metadata={"entity_id": self.vocabulary.entity_id(i)})
                for i, s in zip(ids.tolist(), values.tolist())]

    def execute(self, query: Query | str, *, top_k: int | None = None) -> list[ScoredEntity]:
        """Run a DSL / tuple query written by code (no LLM) and return the top entities.

        >>> kg = KnowledgeGraph.from_triples([("Tokyo Godfathers", "directed_by", "Satoshi Kon")])
        >>> UltRAG(kg, linking="exact").execute("Q1 -> directed_by_inv")[0].name
        'Tokyo Godfathers'
        """
        execution = self.run(query)
        items = self.ranked(execution.scores, top_k, execution.names)
        text = execution.query_text
        return [ScoredEntity(e.name, e.score, e.source, metadata={**e.metadata, "query": text})
                for e in items]

    def retrieve_query(self, query: Query | str, question: str = "") -> RetrievalResult:
        """:meth:`execute` as a :class:`RetrievalResult` (no LLM; for the framework adapters)."""
        execution = self.run(query)
        return self._result(question or to_dsl(execution.query), execution.query, None,
                            execution, Usage())

    # ------------------------------------------------------------------ KGMethod
    def _result(self, question: str, query: Query | None, reply: str | None,
                execution: Execution | None, usage: Usage, error: str | None = None
                ) -> RetrievalResult:
        metadata: dict[str, Any] = {"llm_reply": reply}
        items: list[ScoredEntity] = []
        if query is not None:
            metadata["query"] = to_dsl(query)
        if execution is not None:
            text = execution.query_text
            items = [ScoredEntity(e.name, e.score, e.source,
                                  metadata={**e.metadata, "query": text})
                     for e in self.ranked(execution.scores, names=execution.names)]
            metadata["leaves"] = [[(e.name, round(e.score, 6)) for e in group]
                                  for group in execution.leaf_entities]
            metadata["support_size"] = int(np.count_nonzero(execution.scores != 0))
            if execution.subgraph_nodes is not None:
                metadata["subgraph_nodes"] = execution.subgraph_nodes
            if execution.truncated:
                metadata["truncated"] = True
            swaps = self.relation_substitutions(execution.query)
            if swaps:
                metadata["relation_backoff"] = swaps
        if error is not None:
            metadata["error"] = error
        return RetrievalResult(question, list(items), self.name, usage, metadata)

    @property
    def on_invalid_query(self) -> str:
        """Deprecated: :attr:`on_unusable_reply`."""
        warnings.warn("UltRAG.on_invalid_query is deprecated: use on_unusable_reply",
                      DeprecationWarning, stacklevel=2)
        return self.on_unusable_reply

    def _failed(self, question: str, exc: Exception, usage: Usage) -> RetrievalResult:
        """``on_unusable_reply`` for a query that did not parse after the re-asks, or whose
        execution failed (a :class:`QueryError`, wrapped as the LLM's unusable output)."""
        error = exc if isinstance(exc, LLMOutputError) else LLMOutputError(
            f"the generated query failed: {exc}")
        if error is not exc:
            error.__cause__ = exc
        return self.unusable_reply(question, error, usage, llm_reply=None)

    def _retrieval_steps(self, question: str, seeds: Sequence[str]) -> Steps[Rounds]:
        """Algorithm 1's rounds as steps: generate a query, run it, accept or ask again.

        The decider accepts a non-empty result (UltRAG-OTS, ``max_rounds=1``: any result).
        An invalid query (after the re-asks) or a failed execution ends the rounds with
        ``failure`` set; the caller turns it into an empty result or raises it.
        """
        tried: list[str] = []
        try:
            for _ in range(self.max_rounds):
                feedback = self._empty_feedback(tried) if tried else ""
                query, reply = yield from self._query_steps(question, seeds, feedback)
                execution = self.run(query)
                tried.append(to_dsl(query))
                if np.any(execution.scores != 0):
                    break
        except (LLMOutputError, QueryError) as exc:
            return Rounds(failure=exc)
        return Rounds(query, reply, execution, len(tried))

    def _rounds_result(self, question: str, rounds: Rounds, usage: Usage) -> RetrievalResult:
        if rounds.failure is not None:
            return self._failed(question, rounds.failure, usage)
        result = self._result(question, rounds.query, rounds.reply, rounds.execution, usage)
        result.metadata["rounds"] = rounds.count
        return result

    def retrieve(self, question: str, *, seeds: Sequence[str] = ()) -> RetrievalResult:
        """Query generation (1 LLM call, + re-asks) and execution; top entities as items.

        With ``max_rounds > 1`` the decider of Algorithm 1 is "the answer set is non-empty":
        an empty result triggers a new query (the prompt then lists the queries that failed).
        """
        with track_usage(self.llm) as usage:
            rounds = run_sync(self._retrieval_steps(question, seeds), self._query_llm())
        return self._rounds_result(question, rounds, usage)

    async def aretrieve(self, question: str, *, seeds: Sequence[str] = ()) -> RetrievalResult:
        """:meth:`retrieve` with ``await llm.acomplete``: the same steps, another driver."""
        with track_usage(self.llm) as usage:
            rounds = await run_async(self._retrieval_steps(question, seeds), self._query_llm())
        return self._rounds_result(question, rounds, usage)

    def candidates(self, retrieval: RetrievalResult) -> list[tuple[str, str, float]]:
        return [(e.metadata.get("entity_id", e.name), e.name, e.score)  # type: ignore[union-attr]
                for e in retrieval.items]

    def answer(self, question: str, *, seeds: Sequence[str] = ()) -> Answer:
        """Retrieve, then arbitrate over the top candidates (2 LLM calls with the LLM arbitrator)."""
        return self.answer_from(question, self.retrieve(question, seeds=seeds))

    async def aanswer(self, question: str, *, seeds: Sequence[str] = ()) -> Answer:
        return await self.aanswer_from(question, await self.aretrieve(question, seeds=seeds))

    def answer_from(self, question: str, result: RetrievalResult) -> Answer:
        """Arbitrate over a retrieval already made (its items are the candidates); a blank
        arbitration reply (after one re-ask) goes to ``on_unusable_reply``."""
        if self.was_unusable(result):
            return self.unusable_answer(question, result)
        try:
            with track_usage(self.llm) as spent:
                answers = [] if "error" in result.metadata else self.arbitrator.arbitrate(
                    question, result.metadata.get("query", ""), self.candidates(result))
        except LLMOutputError as exc:
            return self.unusable_answer(question, result, exc, spent)
        return self._answer(question, answers, result, Usage().add(result.usage).add(spent))

    async def aanswer_from(self, question: str, result: RetrievalResult) -> Answer:
        if self.was_unusable(result):
            return self.unusable_answer(question, result)
        try:
            with track_usage(self.llm) as spent:
                if "error" in result.metadata:
                    answers: list[str] = []
                elif hasattr(self.arbitrator, "aarbitrate"):
                    answers = await self.arbitrator.aarbitrate(  # type: ignore[attr-defined]
                        question, result.metadata.get("query", ""), self.candidates(result))
                else:
                    answers = self.arbitrator.arbitrate(
                        question, result.metadata.get("query", ""), self.candidates(result))
        except LLMOutputError as exc:
            return self.unusable_answer(question, result, exc, spent)
        return self._answer(question, answers, result, Usage().add(result.usage).add(spent))

    @staticmethod
    def _answer(question: str, answers: list[str], retrieval: RetrievalResult,
                usage: Usage) -> Answer:
        if answers:
            text = ", ".join(answers)
        elif "error" in retrieval.metadata:
            text = f"No answer: the query could not be built ({retrieval.metadata['error']})."
        else:
            text = "No answer found in the knowledge graph."
        return Answer(question, answers, text, retrieval, usage)


def execute(graph: KnowledgeGraph, query: Query | str, *, top_k: int = PAPER_ARBITRATION_TOP_K,
            **options: Any) -> list[ScoredEntity]:
    """Run a query on ``graph`` without an LLM (leaves by id or name; quoted mentions exact).

    >>> kg = KnowledgeGraph.from_triples([("Tokyo Godfathers", "directed_by", "Satoshi Kon")])
    >>> [e.name for e in execute(kg, '"Satoshi Kon" -> directed_by_inv', executor="symbolic")]
    ['Tokyo Godfathers']
    >>> execute(kg, '"Satoshi Kon" -> directed_by_inv')[0].name   # UltraQuery scores every entity
    'Tokyo Godfathers'
    """
    options.setdefault("linking", "exact")
    return UltRAG(graph, **options).execute(query, top_k=top_k)
