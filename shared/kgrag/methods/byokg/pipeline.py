"""ByoKG-RAG (Mavromatis et al., 2025): the iterative multi-strategy retriever (Algorithm 2).

Per iteration ``t = 1..T_R`` (default ``T_R = 2``):

1. **KG-Linker** -- one LLM call returns question entities, relation paths, an openCypher query
   (only when the store runs Cypher) and draft answers (:mod:`.prompts`, :mod:`.parsing`).
2. **Entity linking** of entities and draft answers: top-``m`` (3) per mention, fuzzy ∪ dense
   (:class:`kgrag.linking.EntityLinker`, hybrid mode).
3. **Self-termination** (checked here, before retrieval, as in Algorithm 2): stop when the
   linker says FINISH, or when the call brings nothing new to ground -- no new linked entity or
   answer, no new path, no new query. (The paper stops on an empty entity list; we still run a
   query or ground draft answers when those are new, so entity-free aggregation questions keep
   their Cypher.)
4. **Path retrieval** -- Follow-Paths of every generated metapath from all entities linked so
   far (cumulative, as the reference code), Shortest-Paths from them to the linked draft answers
   (:mod:`.paths`, both edge directions).
5. **Graph-query retrieval** -- read-only Cypher with errors fed back (:mod:`.query`).
6. **Triplet retrieval** -- agentic traversal (Algorithm 1) from linked entities ∪ answers, united
   with the text-based top-10 over the whole graph (computed once, in the first iteration: it
   depends only on the question); or ``triplet_retrieval="scoring"`` (graph reranker when a
   cross-encoder is given, else text-based top-k), or ``"none"``.
7. ``C <- T ∪ P ∪ Q ∪ C`` (:class:`.context.GraphContext`, de-duplicated).

``answer()`` adds the final call ``A = LLM(q, C)``. Cost per question: ``T_R`` linker calls (or
fewer on early stop) + 2 calls per agentic hop (≤ ``T_A = 3`` hops per iteration) + 1 answer call.
Every run reports its LLM calls and tokens in ``usage`` and per step in
``metadata["llm_calls_by_step"]``.

Without an LLM, ``retrieve`` runs the LLM-free mode (:mod:`.llm_free`).
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Iterable, Sequence

from kgrag.context.types import (
    Answer,
    Path,
    RetrievalResult,
    RetrievedItem,
    ScoredEntity,
    Triple,
    Usage,
)
from kgrag.errors import LLMOutputError
from kgrag.graph.base import GraphStore, is_cypher_store, runs_cypher
from kgrag.graph.memory import normalize_name
from kgrag.llm import optional_llm
from kgrag.llm.prompts import PromptSet
from kgrag.llm.steps import Steps, answer_steps, ask_and_parse, in_thread
from kgrag.methods.base import NOTHING_LINKED, KGMethod, Run, explain_empty
from kgrag.methods.byokg.config import TRIPLET_MODES as TRIPLET_MODES
from kgrag.methods.byokg.config import ByoKGConfig
from kgrag.methods.byokg.context import GraphContext
from kgrag.methods.byokg.llm_free import llm_free_retrieve
from kgrag.methods.byokg.parsing import parse_answers, parse_linker_reply
from kgrag.methods.byokg.paths import RelationResolver, follow_metapath, shortest_paths
from kgrag.methods.byokg.prompts import (
    PROMPTS,
    answer_prompt,
    linker_instructions,
    linker_prompt,
)
from kgrag.methods.byokg.query import execute_query
from kgrag.methods.byokg.triplets import GraphReranker, TripletScorer, agentic_traversal

#: Mentions linked per KG-Linker call at most (a runaway reply must not link hundreds).
MAX_MENTIONS = 30
#: what ByoKG-RAG does without an LLM (the end of its LLMNotConfiguredError message)
_WITHOUT_LLM = "Without an LLM, retrieve() runs ByoKG-RAG's LLM-free mode (no answer step)."


class ByoKGRAG(KGMethod):
    """ByoKG-RAG over any GraphStore (fast paths on :class:`~kgrag.graph.memory.KnowledgeGraph`).

    Components are constructor arguments; every tuning knob is a field of
    :class:`~kgrag.methods.byokg.config.ByoKGConfig`, passed as ``config=`` or as keywords
    (``ByoKGRAG(kg, link_top_k=5)``), read as ``method.config.<knob>``. Paper defaults in
    brackets:

    - ``graph``: a KnowledgeGraph or any GraphStore; ``llm``: LangChain / LlamaIndex model or
      callable (``None`` = LLM-free retrieval); ``embedder``: for dense linking and text scoring
      (``None`` = packaged MiniLM; the paper used bge-m3); ``cache_dir``: keep name embeddings on
      disk.
    - ``linker``: a ready :class:`kgrag.linking.EntityLinker` (else built from the graph with
      ``linking_mode`` [hybrid = fuzzy ∪ dense] and ``link_top_k`` [the paper's top-m = 3]).
    - ``iterations`` [T_R = 2], ``triplet_retrieval`` [agentic], ``agentic_hops`` [T_A = 3],
      ``text_top_k`` [10; 0 disables the text-based union], ``scoring_top_k`` [10, the paper's
      non-Freebase k], ``reranker`` / ``final_reranker``: cross-encoders for the graph reranker
      (App. A.2; ``relation_top_k`` [20], ``triplet_top_k`` [100], ``reranker_hops`` [2]).
    - ``direction`` ["both"; "out" = reference code], ``max_paths`` per metapath,
      ``shortest_path_hops``, ``use_cypher`` (``None`` = when the store supports it).
    - Agentic caps (not in the paper): ``max_entities_per_hop``, ``max_triplets_per_hop``.
    - LLM-free: ``llm_free_hops`` [2], ``llm_free_max_paths``, ``llm_free_candidates``.
    - ``prompts``: replace any of :data:`~kgrag.methods.byokg.prompts.PROMPTS` by name
      (``linker``, ``linker_system``, ``relation_selection``, ``entity_selection``, ``answer``,
      ``answer_system``), e.g. ``prompts={"answer": "Q: {question}\n{graph_context}\nA:"}``;
      see :mod:`kgrag.llm.prompts`.
    - ``on_unusable_reply`` ["raise"]: a KG-Linker reply with none of its tags, or a blank
      answer, still so after one re-ask, raises :class:`~kgrag.errors.LLMOutputError`;
      ``"empty"`` returns an empty result instead (docs/examples.md, "Unusable LLM replies");
      ``"fallback"`` returns the LLM-free retrieval (and answers from it), also when the
      replies parse but link no entity of the graph.
      The agentic steps' replies keep their documented stop ("no relation selected").
    """

    name = "byokg"
    has_llm_free_mode = True
    config_class = ByoKGConfig
    llm_needed = {"answer": ("ByoKG-RAG answer generation", _WITHOUT_LLM)}
    #: an answer's retrieval counts the whole question: its calls and tokens include the answer
    answer_counts_in_retrieval = True

    def __init__(
        self,
        graph: GraphStore,
        *,
        llm: Any = None,
        embedder: Any = None,
        linker: Any = None,
        scorer: TripletScorer | None = None,
        reranker: Any = None,
        final_reranker: Any = None,
        cache_dir: Any = None,
        prompts: Any = None,
        config: ByoKGConfig | None = None,
        **params: Any,
    ) -> None:
        #: the tuning knobs (:class:`~kgrag.methods.byokg.config.ByoKGConfig`); ``params``
        #: (``link_top_k=5``, ``iterations=3`` ...) override fields of ``config``
        cfg = self.configure(config, params)
        self.graph = graph
        self.llm = optional_llm(llm)
        self._embedder_arg = embedder
        self._embedder: Any = None
        self._linker = linker
        self._scorer = scorer
        self.reranker = reranker
        self.final_reranker = final_reranker
        self._use_cypher = runs_cypher(graph) and (cfg.use_cypher is None or bool(cfg.use_cypher))
        self._schema = cfg.schema
        self.cache_dir = cache_dir
        self.prompts = PromptSet(PROMPTS, prompts, method="ByoKG-RAG")
        self.resolver = RelationResolver.from_graph(graph)
        self._lock = threading.Lock()

    @property
    def uses_cypher(self) -> bool:
        """Whether the KG-Linker writes openCypher: ``config.use_cypher`` (``None`` = when the
        store runs Cypher) and the store runs it."""
        return self._use_cypher

    # ------------------------------------------------------------------ lazy components
    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from kgrag.embed import CachedEmbedder, as_embedder

            emb = as_embedder(self._embedder_arg)
            self._embedder = CachedEmbedder(emb, self.cache_dir) if self.cache_dir else emb
        return self._embedder

    @property
    def scorer(self) -> TripletScorer:
        """The text-based triplet scorer (embeds every node and relation name on first use)."""
        with self._lock:
            if self._scorer is None:
                self._scorer = TripletScorer.from_graph(self.graph, self.embedder)
        return self._scorer

    @property
    def linker(self) -> Any:
        """The entity linker (built on first use; shares the scorer's node vectors if it can)."""
        if self._linker is None:
            from kgrag.linking import EntityLinker

            kwargs: dict[str, Any] = {"mode": self.config.linking_mode,
                                      "top_m": self.config.link_top_k}
            if self.config.linking_mode != "fuzzy":
                # the linker's dense index is the graph's shared one (same vectors as the scorer)
                kwargs["embedder"] = self.embedder
            linker = EntityLinker.from_graph(self.graph, **kwargs)
            with self._lock:
                if self._linker is None:
                    self._linker = linker
        return self._linker

    @property
    def linker_schema(self) -> str:
        """The schema S shown to the KG-Linker: ``config.schema`` when given, else the store's
        relations with counts and examples, plus -- when Cypher is used -- how the store models
        nodes and relations (else no valid query can be written)."""
        if self._schema is None:
            schema = self.graph.schema_summary(self.config.max_schema_relations)
            if self.uses_cypher:
                schema += "\n" + cypher_data_model(self.graph)
            self._schema = schema
        return self._schema

    # ------------------------------------------------------------------ linking helpers
    def link(self, mentions: Sequence[str]) -> list[Any]:
        """Top-m links of every mention (fuzzy ∪ dense by default), de-duplicated, in order."""
        mentions = [m for m in dict.fromkeys(str(m).strip() for m in mentions) if m][:MAX_MENTIONS]
        if not mentions:
            return []
        out: dict[str, Any] = {}
        for links in self.linker.link_many(mentions, self.config.link_top_k):
            for link in links:
                out.setdefault(link.name, link)
        return list(out.values())

    def _resolve_picked(self, picked: list[str], triples: list[Triple]) -> list[str]:
        """Map entity names chosen by the agent to graph nodes (exact, case-folded, else linked)."""
        in_context: dict[str, str] = {}
        for t in triples:
            for name in (t.head, t.tail):
                in_context.setdefault(name.casefold(), name)
        out: list[str] = []
        for name in picked:
            name = normalize_name(name)
            node = name if self.graph.has_node(name) else in_context.get(name.casefold())
            if node is None:
                links = self.linker.link(name, 1)
                node = links[0].name if links else None
            if node is not None and node not in out:
                out.append(node)
        return out

    # ------------------------------------------------------------------ Algorithm 2
    def _retrieval_steps(self, question: str) -> Steps[tuple[GraphContext, dict[str, Any]]]:
        context = GraphContext()
        explored: dict[str, None] = {}
        grounded_answers: set[str] = set()
        seen_paths: set[str] = set()
        seen_queries: set[str] = set()
        meta: dict[str, Any] = {"iterations": [],
                                "stop_reason": f"reached {self.config.iterations} iterations"}
        qvec: list[Any] = []  # the question's embedding, computed at most once per run

        def question_vector() -> Any:
            if not qvec:
                qvec.append(self.scorer.query_vector(question))
            return qvec[0]

        for t in range(1, self.config.iterations + 1):
            # a reply with none of the linker's tags is re-asked once, then LLMOutputError
            graph_context, template = context.verbalize(), self.prompts.template("linker")
            # a reply that copies the prompt's own text (not its inputs) is an echo, unusable
            instructions = linker_instructions(has_context=bool(graph_context.strip()),
                                               with_query=self.uses_cypher, template=template)
            out, _ = yield from ask_and_parse(
                linker_prompt(question, self.linker_schema, graph_context,
                              with_query=self.uses_cypher, template=template),
                functools.partial(parse_linker_reply, instructions=instructions),
                retries=1, system=self.prompts.template("linker_system"), step="kg_linker")
            if not self.uses_cypher:
                out.query = ""
            entities = self.link(out.entities)
            answers = self.link(out.answers)
            log: dict[str, Any] = {
                "iteration": t, "entities": out.entities, "paths": out.paths, "query": out.query,
                "draft_answers": out.answers, "finish": out.finish,
                "linked_entities": [e.name for e in entities],
                "linked_answers": [a.name for a in answers],
            }
            meta["iterations"].append(log)
            new_entities = [e.name for e in entities if e.name not in explored]
            new_answers = [a.name for a in answers if a.name not in grounded_answers]
            new_paths = [p for p in out.paths if p not in seen_paths]
            new_query = bool(out.query) and out.query not in seen_queries
            if out.finish:
                meta["stop_reason"] = "FINISH"
                break
            if not (new_entities or new_answers or new_paths or new_query):
                meta["stop_reason"] = "nothing new to link" if t > 1 else "no entities"
                break
            explored.update(dict.fromkeys(e.name for e in entities))
            grounded_answers.update(a.name for a in answers)
            seen_paths.update(out.paths)
            self._retrieve_paths(out.paths, list(explored), [a.name for a in answers], context, log)
            if new_query:
                seen_queries.add(out.query)
                self._retrieve_query(out.query, context, log)
            # triplets
            seeds = list(dict.fromkeys([e.name for e in entities] + [a.name for a in answers]))
            triples = yield from self._triplet_steps(question, seeds, context, first=(t == 1),
                                                     log=log, question_vector=question_vector)
            context.add_triples(triples)
            log["context_size"] = len(context)
        if self.on_unusable_reply == "fallback" and not (explored or grounded_answers):
            # replies that parse but name nothing the graph holds: as unusable as no reply
            raise LLMOutputError("the KG-Linker's replies name no entity of the graph")
        return context, meta

    def _retrieve_paths(self, metapaths: list[str], sources: list[str], answers: list[str],
                        context: GraphContext, log: dict[str, Any]) -> None:
        """Path retrieval (§3.3): Follow-Paths of every metapath, Shortest-Paths to the answers."""
        followed = []
        for metapath in metapaths:
            found = follow_metapath(self.graph, sources, metapath, resolver=self.resolver,
                                    direction=self.config.direction,
                                    max_paths=self.config.max_paths)
            context.add_paths(found.paths)
            followed.append({"metapath": metapath, "executed": found.executed,
                             "partial": found.partial, "walks": len(found.paths)})
        log["followed_paths"] = followed
        short = shortest_paths(self.graph, sources, answers,
                               max_hops=self.config.shortest_path_hops,
                               direction=self.config.direction)
        context.add_paths(short)
        log["shortest_paths"] = len(short)

    def _retrieve_query(self, query: str, context: GraphContext, log: dict[str, Any]) -> None:
        """Graph-query retrieval (§3.4): read-only execution; an error becomes context."""
        result = execute_query(self.graph, query)
        context.add_query(result)
        log["query_error"] = result.error

    def _triplet_steps(self, question: str, seeds: list[str], context: GraphContext, *,
                       first: bool, log: dict[str, Any],
                       question_vector: Any) -> Steps[list[Triple]]:
        if self.config.triplet_retrieval == "none":
            return []
        if self.config.triplet_retrieval == "scoring":
            if self.reranker is not None:
                reranker = GraphReranker(self.graph, self.reranker, self.final_reranker,
                                         hops=self.config.reranker_hops,
                                         relation_top_k=self.config.relation_top_k,
                                         triplet_top_k=self.config.triplet_top_k)
                found = reranker.retrieve(question, seeds, self.config.scoring_top_k)
            else:
                found = self.scorer.top_k(question_vector(), self.config.scoring_top_k, seeds=seeds)
            log["scored_triples"] = len(found)
            return found
        found = []
        if first and self.config.text_top_k > 0:
            found = self.scorer.top_k(question_vector(), self.config.text_top_k, seeds=seeds)
            log["text_triples"] = len(found)
        if seeds:
            rank = None
            if self._scorer is not None:
                scorer = self._scorer
                rank = lambda ts: scorer.score_triples(question_vector(), ts)  # noqa: E731
            trace = yield from agentic_traversal(
                question, seeds, self.graph, hops=self.config.agentic_hops,
                resolve_entities=self._resolve_picked, initial=list(context.triples.values()),
                max_triplets_per_hop=self.config.max_triplets_per_hop,
                max_entities_per_hop=self.config.max_entities_per_hop, rank=rank,
                prompts=self.prompts)
            log["agentic"] = {"hops": trace.hops, "stop_reason": trace.stop_reason}
            found = found + trace.triples
        return found

    # ------------------------------------------------------------------ the lifecycle
    def retrieval_steps(self, question: str, **options: Any) -> Steps[RetrievalResult]:
        """Algorithm 2's retrieval (no final answer); the LLM-free mode when there is no LLM
        (in a worker thread under the async driver)."""
        if self.llm is None:
            return (yield in_thread(lambda: self.retrieve_without_llm(question)))
        context, meta = yield from self._retrieval_steps(question)
        # the run's call counts are set when it ends (finish_retrieval), here only placed
        meta.update(context=context.verbalize(), llm_calls_by_step={}, mode="llm")
        return explain_empty(RetrievalResult(question, context.items(), self.name, Usage(), meta),
                             self.graph)

    def finish_retrieval(self, result: RetrievalResult, run: Run) -> RetrievalResult:
        """The run's usage and its LLM calls per step (``metadata["llm_calls_by_step"]``)."""
        result.metadata["llm_calls_by_step"] = run.log.by_step()
        return super().finish_retrieval(result, run)

    def unusable_metadata(self, run: Run) -> dict[str, Any]:
        return {"mode": "llm", "context": "", "llm_calls_by_step": run.log.by_step()}

    def answering_steps(self, question: str, result: RetrievalResult) -> Steps[Answer]:
        """The final answer call ``A = LLM(q, C)`` over the retrieval's context."""
        context = result.metadata.get("context") or result.context
        reply = yield from answer_steps(
            answer_prompt(question, context, template=self.prompts.template("answer")),
            system=self.prompts.template("answer_system"))
        answers = parse_answers(reply)
        result.metadata["answer_reply"] = reply
        return Answer(question, answers, ", ".join(answers) if answers else reply.strip(),
                      result)

    def fallback_candidates(self, result: RetrievalResult) -> list[str]:
        """The LLM-free ranking's best-scored answer candidates (every walk end tied with the
        top walk score: for "what does X act in", the films of X's best relation path), what a
        grounded answer may name under ``on_unusable_reply="fallback"``; the first is what the
        LLM-free mode answers. A walk end reached by a weaker path ("a new thriller film" for
        a film question) is not an answer the model can promote. Every candidate when the
        retrieval ranks none with scores (the LLM's own retrieval)."""
        scored = [item for item in result.items if isinstance(item, ScoredEntity)]
        if scored and result.metadata.get("answer_candidates"):
            top = max(item.score for item in scored)
            return [item.name for item in scored if item.score >= top - 1e-9]
        return super().fallback_candidates(result)

    def retrieve_llm_free(self, question: str) -> RetrievalResult:
        """:meth:`retrieve_without_llm` (what ``on_unusable_reply="fallback"`` returns)."""
        return self.retrieve_without_llm(question)

    def retrieve_without_llm(self, question: str) -> RetrievalResult:
        """The LLM-free mode: linked n-gram entities, scored triplets, 2-hop paths, candidates.

        One score scale per list: ``items`` are the answer candidates and the walks that
        reach them, all scored by the walk score in [0, 1] and in rank order (each candidate
        just before its best walk); the text-scored triplets, on their own scale
        (``cos(q,h) + cos(q,r) + cos(q,t)``), are a separate list, ``metadata["triples"]``.
        ``metadata["context"]`` (what an answer prompt reads) holds triplets and walks.
        """
        found = llm_free_retrieve(
            question, self.graph, linker=self.linker, scorer=self.scorer, top_m=1,
            text_top_k=self.config.text_top_k or self.config.scoring_top_k,
            hops=self.config.llm_free_hops,
            max_paths=self.config.llm_free_max_paths,
            max_candidates=self.config.llm_free_candidates)
        context = GraphContext()
        context.add_triples(found.triples)
        context.add_paths(found.paths)
        meta = {"mode": "llm_free", "entities": [e.name for e in found.entities],
                "answer_candidates": [c.name for c in found.candidates],
                "triples": list(found.triples),
                "context": context.verbalize(), "llm_calls_by_step": {}}
        result = explain_empty(RetrievalResult(question, walk_ranked(found.candidates,
                                                                     found.paths),
                                               self.name, Usage(), meta), self.graph)
        if not found.entities and "empty_reason" not in meta:
            meta["empty_reason"] = NOTHING_LINKED
        return result


def walk_ranked(candidates: Sequence[ScoredEntity], paths: Sequence[Path]
                ) -> list[RetrievedItem]:
    """Answer candidates and walks on their one scale (the walk score), best first.

    Both lists come ranked from the same walks (``candidates[i]`` is the end of ``paths[i]``,
    with the same score), so each candidate is followed by the walk that reached it; the sort
    only keeps that order honest if the lists ever disagree.
    """
    keyed: list[tuple[float, int, int, RetrievedItem]] = [
        (-c.score, i, 0, c) for i, c in enumerate(candidates)]
    keyed += [(-(p.score or 0.0), i, 1, p) for i, p in enumerate(paths)]
    keyed.sort(key=lambda k: k[:3])
    return [k[3] for k in keyed]


def cypher_data_model(store: GraphStore) -> str:
    """One paragraph telling the LLM how the store's Cypher graph is laid out.

    Read from a :class:`~kgrag.graph.base.CypherStore`'s mapping (``node_label``,
    ``name_property``, ``relation_property``, ``relationship_type``); any other store that runs
    Cypher gets the default layout (nodes by ``name``, relations as relationship types).
    """
    label, name, rel_prop, rel_type = None, "name", None, "RELATED"
    if is_cypher_store(store):
        label, name = store.node_label, store.name_property or "name"
        rel_prop, rel_type = store.relation_property, store.relationship_type
    node = f"(n:{label} {{{name}: '...'}})" if label else f"(n {{{name}: '...'}})"
    if rel_prop:
        rels = (f"every edge is a relationship of type {rel_type} whose property `{rel_prop}` "
                f"holds the relation name, e.g. -[r:{rel_type} {{{rel_prop}: 'relation'}}]->")
    else:
        rels = ("each relation above is a relationship type (quote names with dots or spaces "
                "in backticks, e.g. -[:`a.b`]->)")
    return (f"openCypher data model: entities are nodes {node} identified by the `{name}` "
            f"property; {rels}; edges point from head to tail as listed above.")


def retrieved_entities(items: Iterable[Any]) -> set[str]:
    """Node names in retrieved items (triples, paths, scored entities)."""
    names: set[str] = set()
    for item in items:
        if isinstance(item, Triple):
            names.update((item.head, item.tail))
        elif isinstance(getattr(item, "nodes", None), tuple):
            names.update(item.nodes)
        elif isinstance(getattr(item, "name", None), str):
            names.add(item.name)
    return names
