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

The executor is, by default, **exact first** (``executor="hybrid"``: the symbolic traversal,
and the paper's neural UltraQuery only where the graph has no answer;
:mod:`kgrag.methods.ultrag.hybrid`), or either alone: the **neural** UltraQuery (packaged
checkpoint, :mod:`kgrag.methods.ultrag.neural`) or the **symbolic** fuzzy traversal (the paper's
ablation), all behind one fuzzy-query evaluator. The graph is an in-memory
:class:`~kgrag.KnowledgeGraph` or any GraphStore such as a Neo4j database (symbolic: each
projection runs in the store, :mod:`kgrag.methods.ultrag.store_executor`; neural: on the SEPPR
subgraph fetched around the query's anchors).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from kgrag.context.types import Answer, RetrievalResult, ScoredEntity, Usage
from kgrag.errors import LLMNotConfiguredError, LLMOutputError
from kgrag.graph.base import GraphStore, IdIndexedGraph
from kgrag.graph.memory import KnowledgeGraph  # noqa: F401 (the doctests use it)
from kgrag.llm import extract_tag, optional_llm
from kgrag.llm.base import no_llm_message
from kgrag.llm.prompts import PromptSet
from kgrag.llm.steps import Offload, Steps, ask_and_parse, run_async, run_sync
from kgrag.methods.base import KGMethod, Run
from kgrag.methods.ultrag.arbitrator import Arbitrator, LLMArbitrator, MarginArbitrator
from kgrag.methods.ultrag.config import LINKING_MODES as LINKING_MODES
from kgrag.methods.ultrag.config import (
    PAPER_ARBITRATION_TOP_K,
    UltRAGConfig,
    check_min_membership,
)
from kgrag.methods.ultrag.executor import QueryExecutor
from kgrag.methods.ultrag.graph_executors import EXECUTORS as EXECUTORS
from kgrag.methods.ultrag.graph_executors import (
    Execution,
    ExecutorFactory,
    GraphExecutor,
    executor_factory,
    graph_executor,
)
from kgrag.methods.ultrag.hybrid import FrequencyPrior, annotate, last_projections
from kgrag.methods.ultrag.linking import SoftmaxLeafLinker
from kgrag.methods.ultrag.prior_check import RelationCheck, check_relations
from kgrag.methods.ultrag.prompts import PROMPTS, query_prompt
from kgrag.methods.ultrag.query import (
    Entity,
    Query,
    QueryError,
    leaves,
    parse_query,
    relations,
    to_dsl,
)

#: the default executor: exact where the graph knows, the paper's UltraQuery where it does not
#: (:mod:`kgrag.methods.ultrag.hybrid`); "neural" is the paper's method, "symbolic" its ablation
DEFAULT_EXECUTOR = "hybrid"

_FENCE = re.compile(r"```[a-zA-Z]*\n?|```")
_ENTITY_ID = re.compile(r"^Q\d+$")


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


class UltRAG(KGMethod):
    """UltRAG over an in-memory :class:`~kgrag.KnowledgeGraph`.

    Parameters (paper defaults in brackets)
    ---------------------------------------
    Every knob below that is not a component (``llm``, ``embedder``, ``linker``, ``executor``,
    ``arbitrator``, ``weights``, ``prompts``) is a field of
    :class:`~kgrag.methods.ultrag.config.UltRAGConfig`, read as ``method.config.<knob>``.

    graph: the knowledge graph.
    llm: any LangChain chat model / LlamaIndex LLM / callable; needed for :meth:`retrieve` and
        :meth:`answer`, not for :meth:`execute`.
    embedder, linker: for Eq. 2 linking of quoted mentions (``None`` = packaged MiniLM, loaded
        on first use). ``linking="exact"`` resolves mentions by name/alias only (no model).
    sigma [0.1], link_top_k [unstated; 10]: Eq. 2 temperature and candidates per mention.
    executor ["hybrid"; paper: UltraQuery alone]: ``"hybrid"`` (exact traversal, UltraQuery
        only where a projection has no exact answer; proved answers above every neural guess:
        :mod:`kgrag.methods.ultrag.hybrid`), ``"neural"`` (the paper's UltraQuery, packaged
        checkpoint), ``"symbolic"`` (exact fuzzy traversal; the paper's ablation), a
        :class:`QueryExecutor` for the whole graph, or a factory ``kg -> executor`` (for SEPPR
        subgraphs).
    min_exact_answers [ours; 1]: the hybrid executor also runs UltraQuery when the graph proves
        fewer answers than this (the query's own entities not counted).
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
        the neural executor before SEPPR (smallest nodes first within the edge budget; hubs
        beyond the first level stay unexpanded: :func:`~.neural.budgeted_neighbourhood`).
    top_k [50]: entities returned by :meth:`retrieve` and shown to the arbitrator.
    min_membership [ours; 0.001]: entities scoring below it are left out of the returned items
        (``retrieve``, ``execute``, ``ranked``; ``metadata["below_min_membership"]`` counts
        them); ``run().scores`` are never cut. ``0`` lists every non-zero score.
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
    config_class = UltRAGConfig
    #: retrieval needs the LLM; the answer step does not (the margin arbitrator)
    llm_needed = {"retrieve": ("UltRAG query generation", "UltRAG has no LLM-free retrieval: "
                               "without an LLM, run a logical query you write with execute().")}

    def __init__(
        self,
        graph: GraphStore,
        *,
        llm: Any = None,
        embedder: Any = None,
        linker: Any = None,
        executor: str | QueryExecutor | ExecutorFactory | None = None,
        arbitrator: str | Arbitrator | None = None,
        prompts: Any = None,
        weights: Any = None,
        config: UltRAGConfig | None = None,
        **params: Any,
    ) -> None:
        #: the tuning knobs (:class:`~kgrag.methods.ultrag.config.UltRAGConfig`); ``params``
        #: (``top_k=20``, ``linking="exact"`` ...) override fields of ``config``
        cfg = self.configure(config, params)
        #: where and how queries run: one :class:`GraphExecutor` for this graph's kind (in
        #: memory or a GraphStore) and executor choice; it resolves leaves and seeds, builds
        #: the leaves' fuzzy sets, executes and ranks
        self.graph_executor: GraphExecutor[Any, Any] = graph_executor(
            graph, DEFAULT_EXECUTOR if executor is None else executor, cfg, weights)
        #: the in-memory graph (``None`` on a GraphStore) and the store every method talks to
        self.kg: IdIndexedGraph | None = graph if isinstance(graph, IdIndexedGraph) else None
        self.store = graph
        self.llm = optional_llm(llm)
        self.prompts = PromptSet(PROMPTS, prompts, method="UltRAG")
        self.vocabulary = self.graph_executor.vocabulary
        self._embedder = embedder
        self._linker_arg = linker
        self._leaf_linker: SoftmaxLeafLinker | None = None
        #: "neural", "symbolic", "hybrid" or "custom"
        self.executor_kind = self.graph_executor.kind
        self.weights = weights
        self.arbitrator: Arbitrator = self._make_arbitrator(arbitrator, cfg)
        self._prior: FrequencyPrior | None = None
        #: per ``(relation name, inverse)``: the last :meth:`check_relations` result
        self.relation_checks: dict[tuple[str, bool], RelationCheck] = {}

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
    def leaf_linker(self) -> SoftmaxLeafLinker:
        if self._leaf_linker is None:
            self._leaf_linker = SoftmaxLeafLinker(self.store, linker=self._linker_arg,
                                                  embedder=self._embedder,
                                                  k=self.config.link_top_k,
                                                  sigma=self.config.sigma)
        return self._leaf_linker

    # ------------------------------------------------------------------ query generation
    def query_prompt(self, question: str, seeds: Sequence[str] = ()) -> str:
        return query_prompt(question, self.vocabulary, seeds=self._seed_entries(seeds),
                            descriptions=self.store.relation_descriptions,
                            labels=self.store.relation_labels,
                            template=self.prompts.template("query"))

    def _seed_entries(self, seeds: Sequence[str]) -> list[tuple[str, str]]:
        """``(id as the LLM should write it, name)`` per seed: ``Q<i>``, or the quoted name."""
        return [self.graph_executor.seed_entry(seed) for seed in seeds]

    def relation_substitutions(self, query: Query) -> dict[str, str]:
        """``{token: relation name}`` for relation tokens resolved only by back-off."""
        out = {}
        for rel in relations(query):
            if not self.vocabulary.is_exact(rel):
                rel_id, _ = self.vocabulary.resolve_relation(rel)
                out[rel.name] = self.vocabulary.relation_names[rel_id]
        return out

    def _resolve_leaf(self, leaf: Entity, required: bool) -> Any:
        """Node id (in-memory graph) or name (GraphStore) of a leaf; ``None`` when unknown."""
        return self.graph_executor.resolve_leaf(leaf, required)

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
            self._resolve_leaf(leaf, required=self.config.linking == "exact" or looks_like_id)
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
        return self._llm_for("retrieve")

    def _query_steps(self, question: str, seeds: Sequence[str] = (), feedback: str = ""
                     ) -> Steps[tuple[Query, str]]:
        """One query-generation request plus at most ``max_reasks`` re-asks, as steps."""
        return ask_and_parse(self.query_prompt(question, seeds) + feedback, self.parse_reply,
                             retries=self.config.max_reasks,
                             system=self.prompts.template("query_system"), step="query")

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
    def leaf_sets(self, query: Query) -> tuple[list[Any], list[list[ScoredEntity]]]:
        """One fuzzy set per leaf: ``(node ids, memberships)`` on an in-memory graph,
        ``{name: membership}`` on a GraphStore. Ids/names are one-hot; quoted mentions are
        linked by Eq. 2 (``"dense"``).

        An unquoted leaf that is neither an id nor a name falls back to linking in
        ``"dense"`` mode and raises :class:`QueryResolutionError` in ``"exact"`` mode.
        """
        return self.graph_executor.leaf_sets(query, self.config.linking, lambda: self.leaf_linker)

    def run(self, query: Query | str) -> Execution:
        """Bind the leaves and execute ``query``; scores cover every node of the graph (on a
        GraphStore: every entity with a non-zero score, named by ``Execution.names``)."""
        query = self.validate(parse_query(query))
        sets, entities = self.leaf_sets(query)
        return self.graph_executor.execute(query, sets, entities)

    def ranked(self, scores: np.ndarray, k: int | None = None,
               names: Sequence[str] | None = None, *,
               min_membership: float | None = None) -> list[ScoredEntity]:
        """The top ``k`` entities (default ``top_k``), score descending, ties by node id,
        without those below ``min_membership`` (default: the config's, 0.001).

        ``names`` labels the positions of ``scores`` when they are not node ids (GraphStore
        executions); the tie order is then by name, and the entity id is the name.
        """
        return self._ranked(scores, k, names, min_membership)[0]

    def _ranked(self, scores: np.ndarray, k: int | None, names: Sequence[str] | None,
                min_membership: float | None = None) -> tuple[list[ScoredEntity], int]:
        """:meth:`ranked` and how many of the top ``k`` the membership floor removed."""
        floor = (self.config.min_membership if min_membership is None
                 else check_min_membership(min_membership))
        items = self.graph_executor.ranked(scores, k or self.config.top_k, names)
        kept = [e for e in items if e.score >= floor]
        return kept, len(items) - len(kept)

    def execute(self, query: Query | str, *, top_k: int | None = None) -> list[ScoredEntity]:
        """Run a DSL / tuple query written by code (no LLM) and return the top entities.

        >>> kg = KnowledgeGraph.from_triples([("Tokyo Godfathers", "directed_by", "Satoshi Kon")])
        >>> UltRAG(kg, linking="exact").execute("Q1 -> directed_by_inv")[0].name
        'Tokyo Godfathers'
        """
        execution = self.run(query)
        items = self._annotated(self.ranked(execution.scores, top_k, execution.names),
                                execution)
        text = execution.query_text
        return [ScoredEntity(e.name, e.score, e.source, metadata={**e.metadata, "query": text})
                for e in items]

    def _annotated(self, items: list[ScoredEntity], execution: Execution
                   ) -> list[ScoredEntity]:
        """``items`` with ``source``, ``confidence`` and (in-memory graphs) ``prior`` in their
        metadata (:func:`kgrag.methods.ultrag.hybrid.annotate`)."""
        if execution.names is not None:
            where = {name: i for i, name in enumerate(execution.names)}
            positions = [where[e.name] for e in items]
            prior = None
        else:
            assert self.kg is not None  # scores by node id come from an in-memory graph
            positions = [self.kg.node_index[e.name] for e in items]
            prior = self.frequency_prior.of_query(execution.query) if items else None
        return annotate(items, execution, self.executor_kind, positions, prior)

    @property
    def frequency_prior(self) -> FrequencyPrior:
        """The relations' most-frequent-tail prior (in-memory graphs; built on first use)."""
        if self._prior is None:
            if self.kg is None:
                raise TypeError("the frequency prior needs an in-memory KnowledgeGraph")
            self._prior = FrequencyPrior(self.kg, self.vocabulary)
        return self._prior

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
            ranked, cut = self._ranked(execution.scores, None, execution.names)
            items = [ScoredEntity(e.name, e.score, e.source,
                                  metadata={**e.metadata, "query": text})
                     for e in self._annotated(ranked, execution)]
            metadata["executor"] = self._executor_summary(execution)
            # the membership floor: how many of the top_k it left out (scores stay unchanged)
            metadata["min_membership"] = self.config.min_membership
            metadata["below_min_membership"] = cut
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

    def _executor_summary(self, execution: Execution) -> dict[str, Any]:
        """Which executor answered: ``kind``; for the hybrid one also ``exact_answers`` (how many
        the graph proves), ``neural`` (whether the neural executor ran), ``reason`` (why) and
        ``guessing`` (every returned entity is a neural guess: nothing proved)."""
        summary: dict[str, Any] = {"kind": self.executor_kind}
        if execution.exact_scores is not None:
            proved = int(np.count_nonzero(execution.exact_scores))
            summary.update(exact_answers=proved,
                           neural=execution.neural_scores is not None,
                           reason=execution.neural_reason,
                           guessing=proved == 0 and execution.neural_scores is not None)
        neural_ran = (self.executor_kind == "neural"
                      or execution.neural_scores is not None)
        if neural_ran and self.relation_checks:
            flagged = []
            for projection in last_projections(execution.query):
                rel, inverse = self.vocabulary.resolve_relation(projection.relation)
                check = self.relation_checks.get((self.vocabulary.relation_names[rel], inverse))
                if check is not None and check.flagged:
                    flagged.append(check.token)
            # the neural guesses follow a relation on which it does not beat the prior
            summary["prior_beats_neural"] = flagged
        return summary

    def check_relations(self, *, relations: Sequence[str] | None = None,
                        per_relation: int = 20, seed: int = 0) -> list[RelationCheck]:
        """Hold out up to ``per_relation`` edges of each relation and compare the neural
        executor with the relation's frequency prior (:mod:`kgrag.methods.ultrag.prior_check`;
        one neural run per relation). The result is kept: afterwards, a result whose neural
        guesses follow a flagged relation lists it in
        ``metadata["executor"]["prior_beats_neural"]``. In-memory graphs only."""
        if self.kg is None:
            raise TypeError("check_relations needs an in-memory KnowledgeGraph")
        checks = check_relations(self.kg, executor_factory("neural", self.config, self.weights),
                                 relations=relations, per_relation=per_relation, seed=seed)
        self.relation_checks = {(c.relation, c.inverse): c for c in checks}
        return checks

    # ------------------------------------------------------------------ the lifecycle
    def retrieval_steps(self, question: str, *,  # type: ignore[override]
                        seeds: Sequence[str] = ()) -> Steps[RetrievalResult]:
        """Algorithm 1's rounds: generate a query (1 LLM call, + re-asks), run it, accept or
        ask again; the top entities as items. ``seeds``: entities the prompt lists by id.

        The decider accepts a non-empty result (UltRAG-OTS, ``max_rounds=1``: any result);
        with ``max_rounds > 1`` an empty result triggers a new query (the prompt then lists
        the queries that failed). A query that fails when run is an unusable reply too.
        """
        tried: list[str] = []
        try:
            for _ in range(self.config.max_rounds):
                feedback = self._empty_feedback(tried) if tried else ""
                query, reply = yield from self._query_steps(question, seeds, feedback)
                execution = self.run(query)
                tried.append(to_dsl(query))
                if np.any(execution.scores != 0):
                    break
        except QueryError as exc:
            raise LLMOutputError(f"the generated query failed: {exc}") from exc
        result = self._result(question, query, reply, execution, Usage())
        result.metadata["rounds"] = len(tried)
        return result

    def unusable_metadata(self, run: Run) -> dict[str, Any]:
        return {"llm_reply": None}

    def answering_steps(self, question: str, result: RetrievalResult) -> Steps[Answer]:
        """Arbitration over the retrieved entities (the LLM arbitrator's call, re-asked once
        when blank; the margin arbitrator's rule without one)."""
        answers: list[str] = []
        if "error" not in result.metadata:
            query, candidates = result.metadata.get("query", ""), self.candidates(result)
            arbitrator = self.arbitrator
            aarbitrate = getattr(arbitrator, "aarbitrate", None)
            answers = yield Offload(
                lambda: arbitrator.arbitrate(question, query, candidates),
                None if aarbitrate is None else lambda: aarbitrate(question, query, candidates))
        return self._answer(question, answers, result)

    def candidates(self, retrieval: RetrievalResult) -> list[tuple[str, str, float]]:
        """``(entity id, name, score)`` of the retrieved entities (UltRAG retrieves only
        entities), what the arbitrator chooses from."""
        return [(str(e.metadata.get("entity_id", e.name)), e.name, e.score)
                for e in retrieval.items if isinstance(e, ScoredEntity)]

    @staticmethod
    def _answer(question: str, answers: list[str], retrieval: RetrievalResult) -> Answer:
        if answers:
            text = ", ".join(answers)
        elif "error" in retrieval.metadata:
            text = f"No answer: the query could not be built ({retrieval.metadata['error']})."
        else:
            text = "No answer found in the knowledge graph."
        return Answer(question, answers, text, retrieval)


def execute(graph: IdIndexedGraph, query: Query | str, *, top_k: int = PAPER_ARBITRATION_TOP_K,
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
