"""GraphRAFT end to end: entities -> linked nodes -> candidate queries -> selection -> context ->
answer.

Paper: Clemedtson & Shi, "GraphRAFT" (arXiv 2504.05478). What the pipeline does per question:

1. **L0 entities.** With an LLM, a few-shot prompt returns entity strings separated by ``|``;
   without one, question n-grams that match node names (:func:`kgrag.linking.extract_mentions`).
2. **Linking.** Exact (case/Unicode-normalised) name match first; otherwise the top-1 dense match
   (paper Eq. 1 and the reference code's ``LIMIT 1``).
3. **Candidates.** Every non-empty 1hop / 2hop / 2path template instance around the linked nodes
   (:mod:`~kgrag.methods.graphraft.enumeration`).
4. **Selection** of ``beam_width`` (m = 5) candidates that is always a subset of the candidates:
   constrained decoding over a token scorer, a validated numbered-list choice by a chat LLM, or
   (LLM-free) embedding similarity (:mod:`~kgrag.methods.graphraft.selection`).
5. **Context.** Selected queries run in rank order; each query's nodes are sorted by cosine
   similarity of their names to the question; nodes are de-duplicated (a node keeps every pattern
   that returned it); the context stops at ``top_k`` = 20 nodes and is topped up by a global vector
   search over node names (pattern ``"No pattern"``), as in the reference implementation.
6. **L2 answer.** The question plus one ``pattern:/name:`` block per node (Fig. 4); the reply's
   ``|``-separated names that match retrieved nodes come first, then the remaining retrieved
   nodes in retrieval order (how the reference code forms a ranked list). Names the model invents
   that match no retrieved node are dropped and listed in ``metadata["unsupported_answers"]``.

Runs on the in-memory :class:`~kgrag.graph.memory.KnowledgeGraph` (numpy) or inside a Cypher
database store (Neo4j, FalkorDB): candidates are then enumerated by the paper's aggregating
template queries and executed as parameterised Cypher (:mod:`~kgrag.methods.graphraft.backend`),
with identical results. Differences from the paper:
no node labels in patterns when the graph has none; L1/L2 fine-tuning is offline (see
:mod:`~kgrag.methods.graphraft.training` for the data export).
"""

from __future__ import annotations

import copy
import functools
import logging
import math
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, cast

import numpy as np

from kgrag.context.types import Answer, RetrievalResult, RetrievedItem, ScoredEntity, Usage
from kgrag.errors import LLMOutputError, QueryBudgetError, QueryTimeoutError
from kgrag.graph.base import GraphStore, IdIndexedGraph
from kgrag.llm.base import optional_llm
from kgrag.llm.parsing import mentioned_in, split_items
from kgrag.llm.prompts import PromptSet
from kgrag.llm.steps import Offload, Steps, answer_steps, ask_and_parse, in_thread, run_sync
from kgrag.methods.base import NOTHING_LINKED, KGMethod, explain_empty
from kgrag.methods.graphraft.backend import GraphRAFTBackend, as_backend
from kgrag.methods.graphraft.config import GraphRAFTConfig
from kgrag.methods.graphraft.decoding import TokenScorer
from kgrag.methods.graphraft.enumeration import Candidate
from kgrag.methods.graphraft.prompts import (
    DEFAULT_ENTITY_EXAMPLES,
    PROMPTS,
    answer_prompt,
    entity_prompt,
)
from kgrag.methods.graphraft.selection import (
    ChatChoiceSelector,
    ConstrainedDecodingSelector,
    EmbeddingSelector,
    QuerySelector,
)

log = logging.getLogger(__name__)

NO_PATTERN = "No pattern"
#: Node-name vectors a GraphRAFT instance remembers for context ordering (~0.3 GB at 384-d).
NAME_VECTOR_CACHE = 200_000


#: The typed form of an L0 reply line, ``Label:value`` (paper App. A.1, STaRK-mag): one word,
#: a colon, and no space on either side -- so names such as "Mission: Impossible" stay whole.
_TYPED_ITEM = re.compile(r"^[A-Za-z][A-Za-z_]{0,39}:(?=\S)")


def parse_entities(reply: str, max_items: int = 20) -> list[str]:
    """Entity strings from an L0 (or L2) reply: a leading ``A:`` stripped, split on ``|`` and
    newlines, a ``Label:`` prefix of the typed form removed."""
    text = (reply or "").strip()
    if text[:2].upper() == "A:":
        text = text[2:]
    items: list[str] = []
    for line in text.replace("|", "\n").splitlines():
        line = _TYPED_ITEM.sub("", line.strip(), count=1)
        items.extend(split_items(line))
    return list(dict.fromkeys(items))[:max_items]


def parse_entity_reply(reply: str, question: str | None = None) -> list[str]:
    """:func:`parse_entities` of an L0 reply that must name at least one entity (GraphRAFT
    enumerates queries around them); an empty list is an :class:`LLMOutputError` (re-asked).

    With ``question``, only entities the question mentions are kept
    (:func:`~kgrag.llm.parsing.mentioned_in`): L0 extracts the entities *of the question*
    (the paper's step 1), so a name the question does not contain is the model's guess, not an
    extraction -- and a reply of such guesses is unusable like an empty one."""
    entities = parse_entities(reply)
    if question is not None and entities:
        entities = mentioned_in(question, entities)
        if not entities:
            raise LLMOutputError(f"no entity of the question in the reply {(reply or '')[:120]!r}")
    if not entities:
        raise LLMOutputError(f"no entity in the reply {(reply or '')[:120]!r}; expected entity "
                             "names separated by '|'")
    return entities


@dataclass
class RetrievedNode:
    name: str
    similarity: float
    patterns: list[str] = field(default_factory=list)


def ranked_nodes(nodes: Sequence[RetrievedNode], linked: Sequence[str],
                 describe: Callable[[str], Any]) -> list[RetrievedItem]:
    """The retrieved nodes as items in the method's rank order, scores monotone with it.

    The order is the paper's: the selected queries' nodes (best query first, by similarity
    within a query), then the vector top-up -- except the question's own linked entities, which
    go last: "Which projects use Rust?" is not answered by ``Rust``. Each item's ``score`` is
    its similarity to the question capped by the score of the item above it, so a reranker,
    ``EnsembleRetriever`` or ``SimilarityPostprocessor`` reading scores sees the same ranking
    as the list; the uncapped cosine is ``metadata["similarity"]``. Scores stay out of the
    verbalised text (``show_score=False``)."""
    own = set(linked)
    ordered = [n for n in nodes if n.name not in own] + [n for n in nodes if n.name in own]
    items: list[RetrievedItem] = []
    ceiling = math.inf
    for n in ordered:
        ceiling = min(ceiling, n.similarity)
        items.append(ScoredEntity(
            n.name, ceiling, source="query" if n.patterns != [NO_PATTERN] else "vector",
            metadata={"patterns": list(n.patterns), "description": describe(n.name),
                      "similarity": n.similarity, "linked": n.name in own},
            show_score=False))
    return items


class GraphRAFT(KGMethod):
    """GraphRAFT retrieval and answering over a :class:`KnowledgeGraph` or a Cypher-capable store.

    Parameters: ``graph`` (a :class:`KnowledgeGraph`, a ``Neo4jGraphStore`` /
    ``FalkorDBGraphStore``, or a :mod:`~kgrag.methods.graphraft.backend` backend); ``llm`` (L0
    entity extraction, chat selection when no ``token_scorer``, and L2 answering unless
    ``answer_llm`` is given); ``token_scorer`` (a
    :class:`~kgrag.methods.graphraft.decoding.TokenScorer`, e.g. a fine-tuned L1, for constrained
    decoding); ``selector`` (overrides the choice above); ``embedder`` (node/question similarity and
    the vector fallback; default packaged MiniLM); ``linker`` (an
    :class:`~kgrag.linking.EntityLinker`; built from the graph when omitted); the knobs of
    :class:`~kgrag.methods.graphraft.config.GraphRAFTConfig` as ``config=`` or keywords
    (``families`` to enumerate, ``beam_width`` m = 5, ``top_k`` = 20 context nodes; read as
    ``method.config.<knob>``); ``entity_examples`` (few-shot pairs for L0, replace them per graph);
    ``prompts`` replaces any of :data:`~kgrag.methods.graphraft.prompts.PROMPTS` by name
    (``entity``, ``select``, ``answer`` and their ``*_system`` messages; see
    :mod:`kgrag.llm.prompts`); ``on_unusable_reply`` (``"raise"``): an L0 reply naming no entity, a
    selection naming no listed candidate, or a blank answer, still so after one re-ask, raises
    :class:`~kgrag.errors.LLMOutputError`; ``"empty"`` returns an empty result instead
    (docs/examples.md, "Unusable LLM replies"). There is no silent fallback: an L0 reply with no
    entity no longer turns into a vector-search-only context. ``"fallback"`` (for weak models)
    runs the LLM-free mode when a reply stays unusable or leads to no node, selects queries with
    the LLM-free :class:`EmbeddingSelector` instead of the chat choice (a list of numbers, which
    nothing can check: SmolLM2-135M copied the prompt's example "3, 1", so the queries that ran
    followed the candidates' listing order -- the same replies gave 84.2 and then 68.5 MetaQA
    1-hop answer recall over two versions' listings, and letting them only order the LLM-free
    shortlist still gave 81 against the LLM-free mode's 92 on the first 32 questions, the
    node budget filling up with the model's first picks; docs/results.md), and
    answers with the best-ranked node when the answer names no retrieved node
    (:func:`kgrag.llm.grounding.ground_answer`). """

    name = "graphraft"
    has_llm_free_mode = True
    config_class = GraphRAFTConfig

    def __init__(
        self,
        graph: GraphStore | GraphRAFTBackend,
        *,
        llm: Any = None,
        answer_llm: Any = None,
        token_scorer: TokenScorer | None = None,
        selector: QuerySelector | None = None,
        embedder: Any = None,
        linker: Any = None,
        entity_examples: Sequence[tuple[str, str]] = DEFAULT_ENTITY_EXAMPLES,
        prompts: Any = None,
        config: GraphRAFTConfig | None = None,
        **params: Any,
    ) -> None:
        from kgrag.embed import as_embedder
        from kgrag.linking import EntityLinker

        #: the tuning knobs (:class:`~kgrag.methods.graphraft.config.GraphRAFTConfig`);
        #: ``params`` (``top_k=10``, ``beam_width=3`` ...) override fields of ``config``
        self.configure(config, params)
        self.backend: GraphRAFTBackend = as_backend(graph)
        # the graph object itself: the KnowledgeGraph, or the database store
        self.graph: GraphStore = self.backend.graph
        self.llm = optional_llm(llm)
        self.answer_llm = optional_llm(answer_llm) or self.llm
        self.embedder = as_embedder(embedder)
        self.linker = linker or EntityLinker.from_graph(self.graph, embedder=self.embedder,
                                                        mode="dense")
        self._name_vectors: dict[str, np.ndarray] = {}  # database stores only
        self._name_lock = threading.Lock()
        self.entity_examples = tuple(entity_examples)
        self.prompts = PromptSet(PROMPTS, prompts, method="GraphRAFT")
        if selector is not None:
            self.selector: QuerySelector = selector
        elif token_scorer is not None:
            self.selector = ConstrainedDecodingSelector(token_scorer)
        elif self.llm is not None:
            self.selector = ChatChoiceSelector(self.llm, prompts=self.prompts)
        else:
            self.selector = EmbeddingSelector(self.embedder, self.graph)

    # ---------------------------------------------------------------- steps
    def extract_entities(self, question: str) -> list[str]:
        """L0: entity strings (LLM; re-asked once when the reply names none, then
        :class:`LLMOutputError`) or matched question n-grams (LLM-free)."""
        if self.llm is None:
            from kgrag.linking import extract_mentions

            return [m.name for m in extract_mentions(question, self.linker)]
        return run_sync(self._entity_steps(question), self.llm)[0]

    def _entity_steps(self, question: str) -> Steps[tuple[list[str], str]]:
        return ask_and_parse(self._entity_prompt(question),
                             functools.partial(parse_entity_reply, question=question), retries=1,
                             system=self.prompts.template("entity_system"), step="entities")

    def link(self, mentions: Sequence[str]) -> list[str]:
        """Exact normalised name match first, else the top-1 dense match, per mention.

        A dense match stands for every node with its normalised name, as an exact match does
        (ours; the paper links to "the" node): MetaQA has both ``Stanley Kramer`` and ``stanley
        kramer``, and the mention "The films directed by Stanley Kramer." linked to one of them
        only, where the question's own n-gram "stanley kramer" links both -- the answer's other
        language hung off the second node (a SmolLM2 run lost it)."""
        per_mention = {m: self.linker.exact(m) for m in dict.fromkeys(mentions)}
        unmatched = [m for m, hits in per_mention.items() if not hits]
        if unmatched:  # one batched embedding call for every mention without an exact match
            for m, hits in zip(unmatched, self.linker.dense_many(unmatched, top_m=1)):
                found = {hit.name for hit in hits}
                per_mention[m] = list(hits) + [
                    link for hit in hits for link in self.linker.exact(hit.name)
                    if link.source == "exact" and link.name not in found]
        linked: list[str] = []
        for hits in per_mention.values():
            for link in hits:
                if link.name not in linked:
                    linked.append(link.name)
        return linked

    def candidates(self, entities: Sequence[str]) -> list[Candidate]:
        return self.backend.enumerate(entities, self.config.families)

    def _similarities(self, question_vec: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """Cosine of each name to the question.

        The paper sorts a query's nodes inside the database by stored node embeddings. On an
        in-memory graph those are the graph's shared node-name vectors
        (:func:`kgrag.embed.graph_vectors.graph_name_vectors`: computed once, read from the
        on-disk cache, mapped read-only), so a question embeds no names at all. On a database
        store a name is embedded the first time it is returned and remembered in a memo of at
        most ``NAME_VECTOR_CACHE`` names (emptied when full), shared by concurrent questions
        under a lock.
        """
        if not names:
            return np.empty(0, np.float32)
        if isinstance(self.graph, IdIndexedGraph):
            index = self.graph.node_index
            ids = [index.get(n) for n in names]
            if None not in ids:
                from kgrag.embed.graph_vectors import graph_name_vectors

                vectors = graph_name_vectors(self.graph, self.embedder, "nodes")
                return np.asarray(vectors[np.asarray(ids, np.int64)], np.float32) @ question_vec
        with self._name_lock:
            missing = [n for n in dict.fromkeys(names) if n not in self._name_vectors]
        if missing:
            vectors = self._name_rows(missing)
        with self._name_lock:
            if missing:
                if len(self._name_vectors) + len(missing) > NAME_VECTOR_CACHE:
                    self._name_vectors.clear()
                self._name_vectors.update(zip(missing, vectors))
            # a concurrent question may have emptied the memo in between: embed what is gone
            found = [self._name_vectors.get(n) for n in names]
        lost = [n for n, r in zip(names, found) if r is None]
        again = dict(zip(lost, self._name_rows(lost))) if lost else {}
        rows = [again[n] if r is None else r for n, r in zip(names, found)]
        return np.stack(rows) @ question_vec

    def _name_rows(self, names: Sequence[str]) -> np.ndarray:
        """Vectors of ``names`` (a database store): the stored ones when ``kgrag index-db`` wrote
        them with this embedder's model (fetched by name, batched; a name without one, e.g. a
        node added since, is embedded), else embedded here, with a one-time warning."""
        from kgrag.graph.cypher.vectors import fetch_node_vectors, stored_vectors_for

        stored = stored_vectors_for(self.graph, self.embedder, "GraphRAFT",
                                    "every node a query returns is embedded in the client "
                                    "(one embedding call per new name; a memo keeps "
                                    f"{NAME_VECTOR_CACHE} names)")
        found = fetch_node_vectors(self.graph, names, stored.info.property) if stored else {}
        rest = [n for n in names if n not in found]
        if rest:
            found.update(zip(rest, np.asarray(self.embedder.embed_documents(rest), np.float32)))
        return np.stack([found[n] for n in names]).astype(np.float32)

    def execute_selected(self, selected: Sequence[Candidate]
                         ) -> tuple[list[tuple[Candidate, list[str]]], list[Candidate]]:
        """``([(candidate, result names)], [candidates over budget])``.

        A query that runs out of time on a database store (:class:`QueryTimeoutError`) or is
        refused by the budgets (:class:`QueryBudgetError`) is a budget breach: it is set aside
        instead of failing the question.
        """
        done: list[tuple[Candidate, list[str]]] = []
        breached: list[Candidate] = []
        for cand in selected:
            try:
                done.append((cand, self.backend.execute(cand.pattern)))
            except (QueryTimeoutError, QueryBudgetError) as exc:
                log.warning("GraphRAFT query %s over budget: %s", cand.pattern.text(), exc)
                breached.append(cand)
        return done, breached

    def _after_breaches(self, cands: Sequence[Candidate], selected: Sequence[Candidate],
                        breached: Sequence[Candidate]) -> list[Candidate]:
        """Candidates the selector may choose from once more: neither chosen nor over budget."""
        taken = {id(c) for c in selected} | {id(c) for c in breached}
        return [c for c in cands if id(c) not in taken]

    def assemble_context(self, question: str, selected: Sequence[Candidate],
                         executed: Sequence[tuple[Candidate, list[str]]] | None = None
                         ) -> list[RetrievedNode]:
        """Nodes of the selected queries in rank order (similarity within a query), then top-up.

        ``executed`` holds the selected queries' results when they already ran."""
        q = np.asarray(self.embedder.embed_query(question))
        nodes: dict[str, RetrievedNode] = {}
        if executed is None:
            executed = [(cand, self.backend.execute(cand.pattern)) for cand in selected]
        for cand, names in executed:
            sims = self._similarities(q, names)
            pattern_text = cand.pattern.text()
            for i in np.argsort(-sims, kind="stable").tolist():
                name = names[i]
                if name in nodes:
                    nodes[name].patterns.append(pattern_text)
                elif len(nodes) < self.config.top_k:
                    nodes[name] = RetrievedNode(name, float(sims[i]), [pattern_text])
        missing = self.config.top_k - len(nodes)
        if missing > 0:
            extra = self.linker.dense(question,
                                      top_m=min(len(self.linker), self.config.top_k + len(nodes)))
            for link in extra:
                if link.name not in nodes and missing > 0:
                    nodes[link.name] = RetrievedNode(link.name, float(link.score), [NO_PATTERN])
                    missing -= 1
        return list(nodes.values())

    # ---------------------------------------------------------------- the lifecycle
    def retrieval_steps(self, question: str, **options: Any) -> Steps[RetrievalResult]:
        """L0 entities (LLM, or question n-grams without one), linking, candidates, selection
        (the selector's own LLM call, awaited under the async driver), execution, context."""
        if self.llm is None:
            mentions = self.extract_entities(question)
        else:
            mentions, _ = yield from self._entity_steps(question)
        entities = self.link(mentions)
        if self.llm is not None and self.on_unusable_reply == "fallback":
            entities = self._widened(question, self._named_by_question(question, entities))
        cands = self.candidates(entities)
        picked = (yield self._select(question, cands, self.config.beam_width)) if cands else []
        selected = [cands[i] for i in picked]
        executed, breached = self.execute_selected(selected)
        rest = self._after_breaches(cands, selected, breached) if breached else []
        if rest:  # one more choice, among the queries neither chosen nor breached
            again = yield self._select(question, rest, len(breached))
            more, over = self.execute_selected([rest[i] for i in again])
            executed, breached = executed + more, breached + over
        nodes = self.assemble_context(question, [c for c, _ in executed], executed)
        self._check_grounded(nodes)
        return self._result(question, mentions, entities, cands, [c for c, _ in executed], nodes,
                            Usage(), breached)

    def _select(self, question: str, cands: Sequence[Candidate], m: int) -> Offload:
        """The selector's choice of ``m`` among ``cands``: ``select`` (sync); ``aselect`` when it
        has one, else ``select`` in a worker thread (token scoring, embeddings) under async."""
        # a chat choice is a list of numbers: any of them is "valid", none can be checked
        # against the graph, so the weak-model policy uses the LLM-free selector
        selector = (self._llm_free_selector() if self.on_unusable_reply == "fallback"
                    else self.selector)
        aselect = getattr(selector, "aselect", None)
        if aselect is not None:
            return Offload(lambda: selector.select(question, cands, m),
                           lambda: aselect(question, cands, m))
        return in_thread(lambda: selector.select(question, cands, m))

    def stage_llm(self, stage: str) -> Any:
        """L0 (and the chat selection) use ``llm``; L2 uses ``answer_llm``."""
        return self.answer_llm if stage == "answer" else self.llm

    def answering_steps(self, question: str, result: RetrievalResult) -> Steps[Answer]:
        """L2: one answer call over the retrieved nodes' blocks (re-asked once if blank)."""
        reply = yield from answer_steps(self._answer_prompt(question, result),
                                        system=self.prompts.template("answer_system"))
        result.metadata["answer_reply"] = reply
        return self._answer(question, result, reply)

    def fallback_candidates(self, result: RetrievalResult) -> list[str]:
        """The nodes the best selected query returned, in rank order: what the LLM-free mode
        answers with first, and under ``on_unusable_reply="fallback"`` the only names a
        grounded answer may be -- so a node another query or the vector top-up brought ("The
        Tripper" for "who acted in Trippin'?") cannot become the answer. Every retrieved node
        when no query ran."""
        nodes = [item for item in result.items if isinstance(item, ScoredEntity)]
        selected = result.metadata.get("selected_queries") or []
        if selected:
            best = [item.name for item in nodes if selected[0] in item.metadata.get("patterns", ())]
            if best:
                return best
        return [item.name for item in nodes]

    @staticmethod
    def _named_by_question(question: str, entities: Sequence[str]) -> list[str]:
        """Under ``on_unusable_reply="fallback"``: the linked nodes the question itself names
        (:func:`~kgrag.llm.parsing.mentioned_in`); none is an :class:`LLMOutputError`, so the
        LLM-free mode runs. The model's mention can pass L0's check and still link elsewhere:
        SmolLM2's "film Bad Boys" for "what was the genre of the film [Bad Boys]" is not an
        exact name, and its nearest name by embedding is another node."""
        kept = mentioned_in(question, entities)
        if not kept:
            raise LLMOutputError("the LLM's entities link to no node the question names: "
                                 f"{', '.join(entities[:5]) or '(none)'}")
        return kept

    def _widened(self, question: str, entities: Sequence[str]) -> list[str]:
        """Under ``on_unusable_reply="fallback"``: a linked name that is part of a longer name
        the question itself mentions is replaced by that longer name's nodes (the question's
        own n-gram mentions, as the LLM-free mode finds them). SmolLM2 answers "Paris" for
        "which films have the same director of [Paris, France]"; the node "Paris" exists too,
        and retrieval around it lost every answer the LLM-free row found."""
        from kgrag.linking import extract_mentions
        from kgrag.llm.parsing import content_words

        longer = [(set(content_words(m.name)), m.name)
                  for m in extract_mentions(question, self.linker)]
        out: list[str] = []
        for entity in entities:
            words = set(content_words(entity))
            wider = [name for mention_words, name in longer if words < mention_words]
            for name in (self.link(wider) if wider else [entity]):
                if name not in out:
                    out.append(name)
        return out

    def _check_grounded(self, nodes: Sequence[RetrievedNode]) -> None:
        """Under ``on_unusable_reply="fallback"``, replies that led to no node at all are as
        unusable as unreadable ones: :class:`LLMOutputError`, so the LLM-free mode runs."""
        if self.llm is not None and self.on_unusable_reply == "fallback" and not nodes:
            raise LLMOutputError("the LLM's replies led to no node of the graph")

    def retrieve_llm_free(self, question: str) -> RetrievalResult:
        """The LLM-free mode (question n-grams as mentions, the embedding selector): this
        method's configuration without its LLM (``on_unusable_reply="fallback"``)."""
        free = copy.copy(self)
        free.llm = None
        free.selector = self._llm_free_selector()
        free._config = self.config.replace(on_unusable_reply="raise")
        return free.retrieve(question)

    def _llm_free_selector(self) -> QuerySelector:
        """The selector without the chat model: the configured one unless it is the chat
        choice, which the :class:`EmbeddingSelector` replaces (a token scorer is no chat)."""
        if isinstance(self.selector, ChatChoiceSelector):
            return EmbeddingSelector(self.embedder, self.graph)
        return self.selector

    def _result(self, question: str, mentions: list[str], entities: list[str],
                cands: Sequence[Candidate], selected: Sequence[Candidate],
                nodes: Sequence[RetrievedNode], usage: Usage,
                breached: Sequence[Candidate] = ()) -> RetrievalResult:
        reason = None
        if not entities:  # nothing of the question is in the graph: no unrelated top-up nodes
            nodes, reason = [], NOTHING_LINKED
        items = ranked_nodes(nodes, entities, self.backend.description)
        result = explain_empty(RetrievalResult(
            question, items, method=self.name, usage=usage,
            metadata={
                "mentions": mentions,
                "entities": entities,
                "num_candidates": len(cands),
                "selected_queries": [c.pattern.text() for c in selected],
                "selected_cypher": [self.backend.cypher(c.pattern) for c in selected],
                "over_budget_queries": [c.pattern.text() for c in breached],
            },
        ), self.graph)
        if reason and "empty_reason" not in result.metadata:
            result.metadata["empty_reason"] = reason
        return result

    @staticmethod
    def answer_blocks(result: RetrievalResult) -> list[str]:
        """One ``pattern: / name: / details:`` block per retrieved node (paper Fig. 4)."""
        blocks = []
        for item in _entities(result):
            patterns = item.metadata.get("patterns", [])
            block = f"pattern: {' ; '.join(patterns)}\nname: {item.name}"
            if item.metadata.get("description"):
                block += f"\ndetails: {item.metadata['description']}"
            blocks.append(block)
        return blocks

    def _entity_prompt(self, question: str) -> str:
        return entity_prompt(question, self.entity_examples,
                             template=self.prompts.template("entity"))

    def _answer_prompt(self, question: str, result: RetrievalResult) -> str:
        return answer_prompt(question, self.answer_blocks(result),
                             template=self.prompts.template("answer"))

    @staticmethod
    def _answer(question: str, result: RetrievalResult, reply: str) -> Answer:
        """L2's names that match retrieved nodes first, then the rest in retrieval order."""
        retrieved = {item.name.casefold(): item.name for item in _entities(result)}
        chosen, unsupported = [], []
        for name in parse_entities(reply, max_items=100):
            canonical = retrieved.get(name.casefold())
            if canonical is None:
                unsupported.append(name)
            elif canonical not in chosen:
                chosen.append(canonical)
        ranked = chosen + [i.name for i in _entities(result) if i.name not in chosen]
        result.metadata["unsupported_answers"] = unsupported
        result.metadata["ranked_answers"] = ranked
        return Answer(question, chosen, " | ".join(chosen), result)


def _entities(result: RetrievalResult) -> list[ScoredEntity]:
    """GraphRAFT's retrieved items: the scored entity nodes it returns (typed for readers)."""
    return cast("list[ScoredEntity]", result.items)
