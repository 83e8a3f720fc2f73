"""The SimGRAG pipeline: question -> pattern (LLM) -> candidates -> top-k subgraphs -> answer (LLM).

>>> from kgrag import KnowledgeGraph
>>> from kgrag.embed import LookupEmbedder
>>> kg = KnowledgeGraph.from_triples([("Paprika", "directed_by", "Satoshi Kon")])
>>> emb = LookupEmbedder({"Paprika": [1, 0, 0], "Satoshi Kon": [0, 1, 0], "directed by": [0, 0, 1]})
>>> method = SimGRAG(kg, embedder=emb, top_k=1)
>>> result = method.retrieve_pattern([("Paprika", "directed by", "UNKNOWN person 1")])
>>> result.items[0].triples[0].tail, result.items[0].metadata["gsd"]
('Satoshi Kon', 0.0)

Cost: 2 LLM calls per answered question (pattern, answer), 1 per retrieval, 0 with
:meth:`SimGRAG.retrieve_pattern`; one more per bounded re-ask of an unparsable pattern.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kgrag.context.types import Answer, RetrievalResult, Subgraph, Usage
from kgrag.graph.base import GraphStore, IdIndexedGraph
from kgrag.graph.memory import KnowledgeGraph
from kgrag.llm import optional_llm
from kgrag.llm.prompts import PromptSet
from kgrag.llm.steps import Steps, answer_steps, ask_and_parse, run_sync
from kgrag.methods.base import EMPTY_GRAPH_REASON, KGMethod
from kgrag.methods.simgrag.candidates import CandidateGenerator
from kgrag.methods.simgrag.config import SimGRAGConfig
from kgrag.methods.simgrag.examples import example_pack
from kgrag.methods.simgrag.pattern import Pattern, PatternError, parse_pattern_reply
from kgrag.methods.simgrag.prompts import (
    DEFAULT_PATTERN_EXAMPLES,
    PROMPTS,
    answer_prompt,
    parse_answers,
    pattern_prompt,
    verbalize_graphs,
)
from kgrag.methods.simgrag.search import CandidateSet, Match, SearchResult
from kgrag.methods.simgrag.topk import top_k_subgraphs
from kgrag.text.relations import all_relation_texts

#: what SimGRAG can do without an LLM (the end of its LLMNotConfiguredError message)
_WITHOUT_LLM = ("Without an LLM, retrieve_pattern([(head, relation, tail), ...]) retrieves for "
                "a pattern you write.")


class SimGRAG(KGMethod):
    """SimGRAG over a :class:`~kgrag.KnowledgeGraph` (fast path) or any name-level GraphStore.

    Parameters (paper defaults for MetaQA; FactKG/DBpedia used node_top_k=16384,
    relation_top_k=512). Every knob is a field of
    :class:`~kgrag.methods.simgrag.config.SimGRAGConfig`, passed as ``config=`` or as keywords
    (which override ``config``'s fields) and read as ``method.config.<knob>``; the components
    (``llm``, ``embedder``), ``node_types``, the examples, ``prompts`` and ``node_vectors`` are
    not.

    * ``top_k`` (3) -- subgraphs returned; ``node_top_k`` (16, the paper's k(n)) /
      ``relation_top_k`` (``"auto"``, k(r)) -- nearest graph nodes / relations per known pattern
      item; ``"auto"`` takes every relation up to 512 (the paper's DBpedia k(r)), so a relation a
      pattern names is never missed on a schema of a few hundred relations
      (:func:`~.candidates.auto_k_relations`); ``type_top_k`` (16, k(t)) with ``node_types`` (type
      name -> entity names; default: the node types a LangChain / LlamaIndex graph source kept,
      ``kg.annotations``) -- type candidates for unknown nodes of entity-free pattern components.
    * ``injective`` (``"prefer"``) -- ``True``: a graph node matches at most one pattern node
      (Definition 1); ``False`` allows reuse; ``"prefer"`` (the default since it was measured
      on every dataset: never lower, PQ-3H Hits@3 63 -> 99.7, MetaQA-3hop 98 -> 100, two to
      four times the matching time on small graphs, still milliseconds) ranks the best injective
      match first, then the best reusing one (found by searching quotient patterns,
      :mod:`~kgrag.methods.simgrag.topk`), then the rest (the reference code's ranking; needed
      for walk-back questions such as PathQuestion's "X's parent's child's parent");
      ``distinct_subgraphs`` (False) -- keep one mapping per distinct edge set (the paper counts
      mappings, so a role-swapped copy of a subgraph is a separate result).
    * ``task`` -- ``"qa"`` or ``"fact"`` (fact verification answer prompt); ``pattern_examples``,
      ``answer_examples`` -- few-shot examples written for your graph (defaults are generic);
      ``examples`` -- a per-dataset pack instead (``"generic"``, ``"metaqa"``,
      ``"pathquestion"``, ``"factkg"`` or an :class:`~kgrag.methods.simgrag.examples.ExamplePack`,
      see :mod:`kgrag.methods.simgrag.examples`; ``"factkg"`` also sets ``task="fact"``).
    * ``prompts`` -- replace the ``pattern``, ``answer`` (qa) or ``verify`` (fact) templates by
      name (:data:`kgrag.methods.simgrag.prompts.PROMPTS`; :mod:`kgrag.llm.prompts`).
    * ``index`` / ``hnsw_threshold`` / ``hnsw_m`` / ``ef_construction`` / ``ef_search_factor`` --
      the node vector index (exact flat below the threshold, HNSW above; efSearch = factor ×
      node_top_k).
    * ``max_partials`` / ``time_limit`` -- work bounds of one search (the result then says
      ``complete=False``); ``lookahead`` (True) -- tighten Eq. 11's bound with each mapped
      node's cheapest next step (same results, less work; ``False`` is the paper's bound);
      ``max_local_edges`` -- edge cap when a database store's neighbourhood is materialised
      for matching.
    * ``node_vectors`` -- precomputed node-name embeddings (rows in node-id order), e.g. cached.
    * ``on_unusable_reply`` (``"raise"``) -- a pattern (or blank answer) reply still unusable
      after the re-asks raises :class:`~kgrag.errors.LLMOutputError`; ``"empty"`` returns an
      empty result instead (docs/examples.md, "Unusable LLM replies").

    Disconnected patterns are searched per connected component (``top_k`` each); their subgraphs are
    merged by GSD and carry the component index in metadata.
    """

    name = "simgrag"
    config_class = SimGRAGConfig
    llm_needed = {"retrieve": ("SimGRAG's query-to-pattern step", _WITHOUT_LLM),
                  "answer": ("SimGRAG's answer step", "")}

    def __init__(self, graph: GraphStore, *, llm: Any = None, embedder: Any = None,
                 node_types: Mapping[str, Iterable[str]] | None = None,
                 pattern_examples: Sequence[tuple[str, str]] | None = None,
                 answer_examples: Sequence[tuple[str, str, str]] | None = None,
                 node_vectors: np.ndarray | None = None, examples: Any = None,
                 prompts: Mapping[str, Any] | None = None,
                 config: SimGRAGConfig | None = None, **params: Any) -> None:
        from kgrag.embed import as_embedder

        #: the tuning knobs (:class:`~kgrag.methods.simgrag.config.SimGRAGConfig`); ``params``
        #: (``top_k=5``, ``node_top_k=16384`` ...) override fields of ``config``
        cfg = self.configure(config, params)
        pack = example_pack(examples) if examples is not None else None
        if pack is not None and cfg.task == "qa" and pack.task != "qa":
            # an example pack's task unless one was asked for ("qa" is the default)
            cfg = self.configure(cfg, {"task": pack.task})
        self.graph = graph
        self.kg: IdIndexedGraph | None = graph if isinstance(graph, IdIndexedGraph) else None
        self.llm = optional_llm(llm)
        self.embedder = as_embedder(embedder)
        self._set_examples(pack, pattern_examples, answer_examples)
        self.prompts = PromptSet(PROMPTS, prompts, method="SimGRAG")
        self._set_up_candidates(graph, cfg, node_types, node_vectors)

    def _set_examples(self, pack: Any, pattern_examples: Sequence[tuple[str, str]] | None,
                      answer_examples: Sequence[tuple[str, str, str]] | None) -> None:
        """Few-shot examples: the given ones, else the pack's (answer examples only when the
        pack's task is this method's), else the generic pattern examples."""
        if pattern_examples is None:
            pattern_examples = pack.pattern_examples if pack else DEFAULT_PATTERN_EXAMPLES
        if answer_examples is None and pack is not None and pack.task == self.config.task:
            answer_examples = pack.answer_examples
        self.pattern_examples = list(pattern_examples)
        self.answer_examples = None if answer_examples is None else list(answer_examples)

    def _set_up_candidates(self, graph: GraphStore, cfg: SimGRAGConfig,
                           node_types: Mapping[str, Iterable[str]] | None,
                           node_vectors: np.ndarray | None) -> None:
        """The graph's names and the candidate generator over their vectors (node vectors
        shared with every other method over this graph and embedder unless given)."""
        node_search = None
        if self.kg is None and node_vectors is None:
            node_search = self._database_node_search(graph)
        if self.kg is not None:
            node_names: Sequence[str] = self.kg.node_names
            relation_names: Sequence[str] = self.kg.relation_names
            in_heads = getattr(self.kg, "in_edge_heads", None)
            if in_heads is not None:
                in_heads()  # the table the matching reads domains with, made now, not in a query
        elif node_search is not None:
            node_names = node_search.names
            relation_names = list(graph.list_relations())
        else:
            node_names = list(graph.iter_node_names())
            relation_names = list(graph.list_relations())
        self.node_names = node_names
        self.relation_names = list(relation_names)
        if node_vectors is None and node_search is None:
            from kgrag.embed.graph_vectors import graph_name_vectors

            node_vectors = graph_name_vectors(self.kg if self.kg is not None else graph,
                                              self.embedder, "nodes")
        self.candidates = CandidateGenerator(
            node_names, relation_names, self.embedder, k_nodes=cfg.node_top_k,
            k_relations=cfg.relation_top_k, k_types=cfg.type_top_k,
            node_types=node_types if node_types is not None else _graph_node_types(graph),
            humanize_relations=cfg.humanize_relations, node_vectors=node_vectors,
            relation_texts=all_relation_texts(graph, self.relation_names), index=cfg.index,
            hnsw_threshold=cfg.hnsw_threshold, hnsw_m=cfg.hnsw_m,
            ef_construction=cfg.ef_construction, ef_search_factor=cfg.ef_search_factor,
            node_search=node_search)

    def _database_node_search(self, graph: GraphStore) -> Any:
        """The database's vector index as the node candidate search (:mod:`.db_candidates`),
        or ``None`` (with a one-time warning on a database store) when it has none for this
        embedder."""
        from kgrag.graph.base import is_cypher_store
        from kgrag.graph.cypher.vectors import DEFAULT_PROPERTY, node_vector_index, warn_no_vectors

        if not is_cypher_store(graph):
            return None
        stored = node_vector_index(graph, self.embedder)
        if stored is None:
            warn_no_vectors(graph, "SimGRAG", "every node name is streamed to the client and "
                            "embedded there before the first question (client memory and "
                            "start-up grow with the graph: 4 bytes x dimension per node)")
            return None
        from kgrag.methods.simgrag.db_candidates import (
            BREADTH,
            DatabaseNodeSearch,
            GrowingNameTable,
            auto_breadth,
        )

        breadth = self.config.database_search_breadth
        if breadth is None:  # grows with the index (the database counts its nodes)
            count = getattr(graph, "stored_node_count", None)
            breadth = auto_breadth(count()) if count is not None else BREADTH
        return DatabaseNodeSearch(graph, stored.index, GrowingNameTable(), DEFAULT_PROPERTY,
                                  breadth=breadth)

    # ------------------------------------------------------------------ query -> pattern
    def pattern_prompt(self, question: str) -> str:
        return pattern_prompt(question, self.pattern_examples,
                              template=self.prompts.template("pattern"))

    # The two LLM steps, each written once as a generator of requests (kgrag.llm.steps) and
    # driven by run_sync or run_async.
    def _pattern_steps(self, question: str) -> Steps[tuple[Pattern, str]]:
        """Ask for the pattern: one call, plus up to ``retries`` re-asks with the parse error."""
        return ask_and_parse(self.pattern_prompt(question), self._parse_pattern,
                             retries=self.config.retries, step="pattern",
                             system=self.prompts.template("pattern_system") or None)

    def _parse_pattern(self, reply: str) -> Pattern:
        """:func:`parse_pattern_reply` with this method's ``UNKNOWN`` budget."""
        return parse_pattern_reply(reply, max_unknown_nodes=self.config.max_unknown_nodes,
                                   max_unknown_relations=self.config.max_unknown_relations)

    def _answer_steps(self, question: str, result: RetrievalResult) -> Steps[str]:
        """One answer call over the retrieved subgraphs (re-asked once if blank); the reply."""
        return answer_steps(self.answer_prompt(question, result), retries=self.config.retries)

    def question_to_pattern(self, question: str) -> tuple[Pattern, str]:
        """Ask the LLM for the pattern (one call, plus up to ``retries`` re-asks)."""
        return run_sync(self._pattern_steps(question), self._llm_for("retrieve"))

    # ------------------------------------------------------------------ retrieval
    def retrieval_steps(self, question: str, **options: Any) -> Steps[RetrievalResult]:
        """The pattern step (one LLM call, plus re-asks), then the LLM-free search."""
        pattern, reply = yield from self._pattern_steps(question)
        return self._retrieve(pattern, question, Usage(), reply)

    def retrieve_pattern(self, triples: Pattern | Iterable[Sequence[Any]],
                         question: str = "") -> RetrievalResult:
        """Retrieve for a pattern written by code, e.g. ``[("Paprika", "directed by",
        "UNKNOWN person 1")]`` -- no LLM involved. Raises :class:`PatternError` on bad input
        (:class:`~kgrag.methods.simgrag.pattern.PatternBudgetError` over the UNKNOWN budget)."""
        nodes, relations = self.config.max_unknown_nodes, self.config.max_unknown_relations
        if isinstance(triples, Pattern):
            pattern = triples
            pattern.check_budget(nodes, relations)
        else:
            pattern = Pattern.from_triples(triples, max_unknown_nodes=nodes,
                                           max_unknown_relations=relations)
        return self._retrieve(pattern, question or "; ".join(map(str, pattern.triples)),
                              Usage(), None)

    def _retrieve(self, pattern: Pattern, question: str, usage: Usage,
                  reply: str | None) -> RetrievalResult:
        node_c, rel_c, info = self.candidates.candidates(pattern)
        items: list[Subgraph] = []
        complete = True
        started = time.perf_counter()
        partials = 0
        for comp_index, comp in enumerate(pattern.components()):
            sub, result, names = self._search_component(pattern, comp, node_c, rel_c)
            complete &= result.complete
            partials += int(result.stats.get("partials", 0))
            for match in result.matches:
                items.append(self._subgraph(sub, match, names, comp_index))
        items.sort(key=lambda s: s.metadata["gsd"])  # stable: ties keep the search's key order
        metadata = {
            "pattern": [list(t) for t in pattern.triples],
            "complete": complete,
            "vector_search_seconds": info["vector_search_seconds"],
            "matching_seconds": time.perf_counter() - started,
            "partial_matches": partials,
            "candidates": self._candidate_summary(pattern, node_c, rel_c),
        }
        if info["typed_nodes"]:
            metadata["typed_nodes"] = info["typed_nodes"]
        if not items:
            metadata.update(self._why_empty(pattern, node_c, rel_c, complete))
        if reply is not None:
            metadata["pattern_reply"] = reply
        return RetrievalResult(question, list(items), self.name, usage, metadata)

    def _search_component(self, pattern: Pattern, comp: list[int], node_c, rel_c):
        """Search one connected component; returns (sub-pattern, result, graph name tables)."""
        node_ids = sorted({v for j in comp for v in pattern.edges[j]})
        local = {v: i for i, v in enumerate(node_ids)}
        edges = [(local[pattern.edges[j][0]], local[pattern.edges[j][1]]) for j in comp]
        sub_nodes = [node_c[v] for v in node_ids]
        sub_rels = [rel_c[j] for j in comp]
        sub = (tuple(pattern.nodes[v] for v in node_ids), tuple(pattern.triples[j] for j in comp))
        options: dict[str, Any] = dict(
            injective=self.config.injective, distinct_subgraphs=self.config.distinct_subgraphs,
            max_partials=self.config.max_partials, time_limit=self.config.time_limit,
            lookahead=self.config.lookahead)
        if self.kg is not None:
            result = top_k_subgraphs(self.kg, len(node_ids), edges, sub_nodes, sub_rels,
                                     self.config.top_k,
                                     **options)
            return sub, result, self.kg
        kg = self._local_graph(edges, sub_nodes)
        if kg is None:
            return sub, SearchResult([]), None
        sub_nodes = [None if c is None else self._to_local(c, self.node_names, kg.node_index)
                     for c in sub_nodes]
        sub_rels = [None if c is None else self._to_local(c, self.relation_names, kg.relation_index)
                    for c in sub_rels]
        result = top_k_subgraphs(kg, len(node_ids), edges, sub_nodes, sub_rels, self.config.top_k,
                                 **options)
        return sub, result, kg

    # ------------------------------------------------------------------ database stores
    def _local_graph(self, edges: list[tuple[int, int]],
                     node_c: list[CandidateSet | None]) -> IdIndexedGraph | None:
        """The neighbourhood of the root's candidates that holds every match (store path).

        Every pattern node lies within the root's eccentricity ``e`` in the pattern, so every
        match lies within ``e`` hops of a root candidate; an edge joining two pattern nodes at
        depth ``e`` (odd cycles) needs one hop more.
        """
        known = {i: c for i, c in enumerate(node_c) if c is not None}
        if not known:
            raise PatternError("with a database graph store the pattern needs at least one "
                               "known entity (relation-only patterns need the in-memory graph)")
        root = min(known, key=lambda i: (len(known[i]), i))
        seeds = [self.node_names[i] for i in known[root].ids.tolist()]
        if not seeds:
            return None
        depth = {root: 0}
        queue = deque([root])
        adjacency: dict[int, list[int]] = {}
        for u, v in edges:
            adjacency.setdefault(u, []).append(v)
            adjacency.setdefault(v, []).append(u)
        while queue:
            u = queue.popleft()
            for v in adjacency[u]:
                if v not in depth:
                    depth[v] = depth[u] + 1
                    queue.append(v)
        ecc = max(depth.values())
        hops = ecc + (1 if any(depth[u] == depth[v] == ecc for u, v in edges) else 0)
        triples = self.graph.k_hop_subgraph(seeds, hops=hops, direction="both",
                                            max_edges=self.config.max_local_edges)
        if not triples:
            return None
        return KnowledgeGraph.from_triples(t.as_tuple() for t in triples)

    @staticmethod
    def _to_local(cands: CandidateSet, names: Sequence[str],
                  index: Mapping[str, int]) -> CandidateSet:
        pairs = [(index[names[i]], d) for i, d in zip(cands.ids.tolist(), cands.distances.tolist())
                 if names[i] in index]
        return CandidateSet(np.asarray([p[0] for p in pairs], np.int64),
                            np.asarray([p[1] for p in pairs], np.float64))

    # ------------------------------------------------------------------ results
    @staticmethod
    def _subgraph(sub, match: Match, kg: IdIndexedGraph, comp_index: int) -> Subgraph:
        nodes, triples = sub
        # stored direction, in pattern-triple order, each graph edge once (a reusing match may
        # map two pattern triples onto one edge: the mapping shows it, the facts do not repeat)
        found = kg.edge_triples(match.graph_edges())
        return Subgraph(tuple(found), score=1.0 / (1.0 + match.gsd), metadata={
            "gsd": match.gsd,
            "mapping": {p: kg.node_names[i] for p, i in zip(nodes, match.nodes)},
            "pattern": [list(t) for t in triples],
            "component": comp_index,
        })

    def _why_empty(self, pattern: Pattern, node_c, rel_c, complete: bool) -> dict[str, Any]:
        """``empty_reason`` (a sentence) and ``unmatched_edges``: the pattern triples no graph
        edge can match on its own -- no edge with one of the relation's candidates joins the
        candidates of its two ends (in-memory graph; a database store says less)."""
        counts = self.graph.counts()
        if not counts.get("edges", 1):
            return {"empty_reason": EMPTY_GRAPH_REASON}
        if self.kg is None:
            return {"empty_reason": "no subgraph of the candidates' neighbourhood matches the "
                    "pattern (see 'candidates')"}
        kg, unmatched = self.kg, []
        for j, (u, v) in enumerate(pattern.edges):
            cu, cv, cr = node_c[u], node_c[v], rel_c[j]
            rels = None if cr is None else cr.ids
            if rels is not None and len(rels) == 0:
                found = False
            elif cu is not None:
                e = kg.edges_ids(cu.ids, "out", rels)
                found = bool(len(e)) and (cv is None or bool(np.isin(kg.tails[e], cv.ids).any()))
            elif cv is not None:
                found = bool(len(kg.edges_ids(cv.ids, "in", rels)))
            else:
                found = rels is None or bool(np.isin(kg.rels, rels).any())
            if not found:
                unmatched.append(list(pattern.triples[j]))
        if unmatched:
            h, r, t = unmatched[0]
            k_r = self.candidates.k_relations
            reason = (f"no graph edge matches ({h}, {r}, {t}): none of the {k_r} relations "
                      f"nearest to {r!r} joins a candidate of {h!r} to one of {t!r}")
        elif not complete:
            reason = ("the search stopped at its work bound (max_partials / time_limit) before "
                      "finding a match")
        elif self.config.injective is True:
            reason = ("every pattern edge has matching graph edges, but no injective match joins "
                      "them; paths that revisit a node need injective='prefer'")
        else:
            reason = "every pattern edge has matching graph edges, but they do not join up"
        return {"empty_reason": reason, "unmatched_edges": unmatched}

    def _candidate_summary(self, pattern: Pattern, node_c, rel_c, top: int = 3) -> dict[str, Any]:
        def show(cands: CandidateSet | None, names: Sequence[str]) -> Any:
            if cands is None:
                return "*"
            return [[names[i], round(float(d), 4)] for i, d in
                    zip(cands.ids[:top].tolist(), cands.distances[:top].tolist())]

        out = {n: show(c, self.node_names) for n, c in zip(pattern.nodes, node_c)}
        out.update({r: show(c, self.relation_names) for r, c in zip(pattern.relations, rel_c)})
        return out

    # ------------------------------------------------------------------ answering
    def evidence(self, result: RetrievalResult) -> str:
        """The retrieved subgraphs as ``graph [i]: [(h, r, t), ...]`` lines (ascending GSD)."""
        return verbalize_graphs([[t.as_tuple() for t in s.triples] for s in result.items
                                 if isinstance(s, Subgraph)])

    def answer_prompt(self, question: str, result: RetrievalResult) -> str:
        return answer_prompt(question, self.evidence(result), task=self.config.task,
                             examples=self.answer_examples, template=self.prompts.template(
                                 "answer" if self.config.task == "qa" else "verify"))

    def answering_steps(self, question: str, result: RetrievalResult) -> Steps[Answer]:
        """One answer call over the retrieved subgraphs (re-asked once if blank)."""
        reply = yield from self._answer_steps(question, result)
        result.metadata["answer_reply"] = reply
        return Answer(question, parse_answers(reply, task=self.config.task), reply, result)




def gsd_of(subgraph: Subgraph) -> float:
    """The Graph Semantic Distance of a retrieved subgraph (``math.inf`` if it has none)."""
    return float(subgraph.metadata.get("gsd", math.inf))


__all__ = ["SimGRAG", "gsd_of"]


def _graph_node_types(graph: Any) -> dict[str, list[str]] | None:
    """type -> entity names from a graph source's annotations (LangChain node types, LlamaIndex
    entity labels), the default ``node_types``; ``None`` when the graph has none."""
    annotations = graph.annotations
    return (annotations.nodes_by_type() or None) if annotations else None
