"""One question through one method: build the method for a mode, run it, report an :class:`Outcome`.

A *question runner* is built once per (method, dataset, mode) by :func:`build_question_runner`
and called per question. Modes:

* ``oracle`` -- the method's LLM-free entry point fed the artifact a perfect LLM would write
  (:mod:`kgrag.eval.oracles`); KG datasets only (needs gold relation paths).
* ``llm-free`` -- the method's own LLM-free retrieval from the question text (ByoKG-RAG's
  LLM-free mode, GraphRAFT without an LLM, KET-RAG's keyword-only index). SimGRAG and UltRAG
  have none: their first step is an LLM writing a pattern / query.
* ``llm`` -- ``method.answer(question)`` with the given LLM (any LangChain / LlamaIndex model or
  callable), scored on the answers and on the retrieval behind them.

Methods run at their defaults; ``params`` overrides constructor arguments.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgrag.context.types import Answer, RetrievalResult, Usage
from kgrag.eval.datasets import QAExample
from kgrag.eval.oracles import (
    ByoKGOracleLLM,
    GraphRAFTOracleSelector,
    require_gold_path,
    simgrag_pattern,
    ultrag_branches_query,
)
from kgrag.llm.grounding import item_names

MODES = ("oracle", "llm-free", "llm")


@dataclass
class Outcome:
    """What one question produced, before scoring."""

    #: answer candidates, best first (``None`` when the method does not rank answers)
    ranked: list[str] | None = None
    #: ranking metrics computed by the runner itself (e.g. tie-aware ones over a score vector)
    rank_metrics: dict[str, float] | None = None
    #: entity names in the retrieved context, or the context as text
    context_names: set[str] | None = None
    context_text: str | None = None
    #: the final answer text (``llm`` mode)
    answer_text: str | None = None
    usage: Usage = field(default_factory=Usage)
    items: int = 0
    context_chars: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def context_names(items: Iterable[Any]) -> set[str]:
    """Entity names in retrieved items (:func:`kgrag.llm.grounding.item_names`: triples,
    paths, subgraphs, scored entities, KET-RAG entity lines), as a set."""
    return set(item_names(items))


def outcome_from_retrieval(result: RetrievalResult, seconds: float, *,
                           ranked: list[str] | None = None, as_text: bool = False) -> Outcome:
    """An :class:`Outcome` whose context is ``result``: names for graph items, text for chunks.

    ``as_text`` scores the rendered context text even when it holds graph items (KET-RAG's
    context mixes entities and text chunks; its coverage is about the text).
    """
    text = result.metadata.get("context")
    if not isinstance(text, str):
        text = result.context
    names = set() if as_text else context_names(result.items)
    return Outcome(ranked=ranked, context_names=names if names else None,
                   context_text=None if names else text, usage=result.usage,
                   items=len(result.items), context_chars=len(text), seconds=seconds)


def outcome_from_answer(answer: Answer, seconds: float, *, as_text: bool = False) -> Outcome:
    out = outcome_from_retrieval(answer.retrieval, seconds, ranked=list(answer.answers),
                                 as_text=as_text)
    out.answer_text = answer.text
    out.usage = answer.usage
    meta = answer.retrieval.metadata
    for key in ("unusable_reply", "fallback", "answer_fallback"):  # the policy's marks
        if meta.get(key):
            out.extra[key] = meta[key]
    return out


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


QuestionRunner = Callable[[QAExample, str], Outcome]


# ---------------------------------------------------------------------- per method
def generic_runner(resource: Any, mode: str, llm: Any, embedder: Any, params: dict, *,
                   k: int = 10, spec: Any = None) -> QuestionRunner:
    """Any registered method without a runner of its own: ``llm-free`` scores ``retrieve`` of
    the method built without an LLM (ranked by its result's ``answer_candidates`` metadata
    when it has them), ``llm`` scores ``answer``. There is no generic ``oracle``: what a
    perfect LLM would write is method-specific."""
    if mode == "oracle":
        raise ValueError(f"{spec.name} has no oracle mode (register an eval_runner for it)")
    method = spec.build(resource, llm=llm if mode == "llm" else None, embedder=embedder,
                        **params)
    as_text = spec.builds_from == "documents"
    if mode == "llm":
        return lambda ex, q: outcome_from_answer(*_timed(lambda: method.answer(q)),
                                                 as_text=as_text)

    def run(ex: QAExample, question: str) -> Outcome:
        result, s = _timed(lambda: method.retrieve(question))
        ranked = result.metadata.get("answer_candidates")
        return outcome_from_retrieval(result, s, as_text=as_text,
                                      ranked=list(ranked) if ranked is not None else None)
    return run


def byokg_runner(kg: Any, mode: str, llm: Any, embedder: Any, params: dict, *, k: int = 10
                 ) -> QuestionRunner:
    from kgrag.methods.byokg import ByoKGRAG

    base = ByoKGRAG(kg, embedder=embedder, **params)
    shared = {"linker": base.linker, "scorer": base.scorer}
    if mode == "oracle":
        oracle = ByoKGOracleLLM()
        method = ByoKGRAG(kg, llm=oracle, embedder=embedder, **shared, **params)

        def run(ex: QAExample, question: str) -> Outcome:
            require_gold_path(ex)
            oracle.example = ex
            result, s = _timed(lambda: method.retrieve(question))
            return outcome_from_retrieval(result, s)
        return run
    if mode == "llm-free":
        method = ByoKGRAG(kg, llm=None, embedder=embedder, **shared, **params)

        def run(ex: QAExample, question: str) -> Outcome:
            result, s = _timed(lambda: method.retrieve(question))
            outcome = outcome_from_retrieval(
                result, s, ranked=list(result.metadata.get("answer_candidates", [])))
            return _with_scored_triplets(outcome, result)
        return run
    method = ByoKGRAG(kg, llm=llm, embedder=embedder, **shared, **params)

    def answer(ex: QAExample, question: str) -> Outcome:
        reply, s = _timed(lambda: method.answer(question))
        return _with_scored_triplets(outcome_from_answer(reply, s), reply.retrieval)
    return answer


def _with_scored_triplets(outcome: Outcome, result: Any) -> Outcome:
    """ByoKG-RAG's text-scored triplets are a list of their own (``metadata["triples"]``),
    also in the context: their names count for the context's recall -- in LLM-free and LLM
    mode alike, so a question that falls back scores what the LLM-free run scores."""
    outcome.context_names = ((outcome.context_names or set())
                             | context_names(result.metadata.get("triples", ())))
    return outcome


def simgrag_runner(kg: Any, mode: str, llm: Any, embedder: Any, params: dict, *, k: int = 10
                   ) -> QuestionRunner:
    from kgrag.methods.simgrag import SimGRAG

    if mode == "llm-free":
        raise ValueError("SimGRAG has no LLM-free mode (an LLM writes the query pattern); "
                         "use --mode oracle or --mode llm")
    from kgrag.embed.graph_vectors import graph_name_vectors

    params = {"node_vectors": graph_name_vectors(kg, embedder, "nodes"), **params}
    method = SimGRAG(kg, llm=llm if mode == "llm" else None, embedder=embedder, **params)
    if mode == "llm":
        return lambda ex, q: outcome_from_answer(*_timed(lambda: method.answer(q)))

    def run(ex: QAExample, question: str) -> Outcome:
        triples, answer_node = simgrag_pattern(ex, kg.relation_labels)
        result, s = _timed(lambda: method.retrieve_pattern(triples, question))
        out = outcome_from_retrieval(result, s, ranked=subgraph_answers(result.items, answer_node))
        out.extra = {"pattern": [list(t) for t in triples],
                     "complete": bool(result.metadata.get("complete", True))}
        return out
    return run


def subgraph_answers(subgraphs: Iterable[Any], answer_node: str) -> list[str]:
    """The graph nodes SimGRAG's subgraphs map ``answer_node`` (a pattern node) to, best
    subgraph first, each once."""
    mapped = (sub.metadata["mapping"].get(answer_node, "") for sub in subgraphs)
    return [name for name in dict.fromkeys(mapped) if name]


def ultrag_runner(kg: Any, mode: str, llm: Any, embedder: Any, params: dict, *, k: int = 10
                  ) -> QuestionRunner:
    from kgrag.eval.ranking import tie_aware_metrics
    from kgrag.graph.memory import normalize_name
    from kgrag.methods.ultrag import UltRAG

    if mode == "llm-free":
        raise ValueError("UltRAG has no LLM-free mode (an LLM writes the logical query); "
                         "use --mode oracle or --mode llm")
    method = UltRAG(kg, llm=llm if mode == "llm" else None, embedder=embedder, **params)
    if mode == "llm":
        return lambda ex, q: outcome_from_answer(*_timed(lambda: method.answer(q)))

    def run(ex: QAExample, question: str) -> Outcome:
        require_gold_path(ex)
        topics = [kg.node_index.get(normalize_name(e)) for e, _ in ex.gold_branches]
        if any(t is None for t in topics):
            return Outcome(ranked=[], context_names=set(), extra={"error": "topic not in graph"})
        query = ultrag_branches_query(kg.relation_index, kg.node_index, ex)
        start = time.perf_counter()
        execution = method.run(query)
        items = method.ranked(execution.scores)
        seconds = time.perf_counter() - start
        gold = [kg.node_index[a] for a in map(normalize_name, ex.answers) if a in kg.node_index]
        # the filtered setting of the paper's tables: the topic is not an answer unless gold
        metrics = tie_aware_metrics(execution.scores, gold, ks=(1, k),
                                    exclude=[t for t in topics if t not in gold])
        names = [e.name for e in items]
        return Outcome(ranked=names, rank_metrics=metrics, context_names=set(names),
                       items=len(items), context_chars=sum(len(n) + 1 for n in names),
                       seconds=seconds, extra={"query": query})
    return run


def graphraft_runner(kg: Any, mode: str, llm: Any, embedder: Any, params: dict, *, k: int = 10
                     ) -> QuestionRunner:
    from kgrag.methods.graphraft.pipeline import GraphRAFT

    if mode == "llm":
        method = GraphRAFT(kg, llm=llm, embedder=embedder, **params)
        return lambda ex, q: outcome_from_answer(*_timed(lambda: method.answer(q)))
    if mode == "llm-free":
        method = GraphRAFT(kg, embedder=embedder, **params)

        def run_free(ex: QAExample, question: str) -> Outcome:
            result, s = _timed(lambda: method.retrieve(question))
            return outcome_from_retrieval(result, s, ranked=[i.name for i in result.items])
        return run_free
    selector = GraphRAFTOracleSelector()
    method = GraphRAFT(kg, embedder=embedder, selector=selector, **params)

    def run(ex: QAExample, question: str) -> Outcome:
        # the steps of GraphRAFT.retrieve, with the gold topic entity in place of L0's reply
        require_gold_path(ex)
        selector.example = ex
        start = time.perf_counter()
        entities = method.link(list(ex.entities))
        cands = method.candidates(entities)
        picked = selector.select(question, cands, method.config.beam_width) if cands else []
        nodes = method.assemble_context(question, [cands[i] for i in picked])
        seconds = time.perf_counter() - start
        names = [n.name for n in nodes]
        return Outcome(ranked=names, context_names=set(names), items=len(nodes),
                       context_chars=sum(len(n) + 1 for n in names), seconds=seconds,
                       extra={"candidates": len(cands), "gold_query_enumerated": bool(picked)})
    return run


def ketrag_runner(passages: list[str], mode: str, llm: Any, embedder: Any, params: dict, *,
                  k: int = 10) -> QuestionRunner:
    from kgrag.methods.ketrag import KETRAG, build_index

    if mode == "oracle":
        raise ValueError("KET-RAG has no oracle mode (text datasets carry no gold relation path); "
                         "use --mode llm-free or --mode llm")
    index_params = {"budget": 0.0, **{k: v for k, v in params.items()
                                      if k not in _ketrag_retrieval_params()}}
    retrieval = {k: v for k, v in params.items() if k in _ketrag_retrieval_params()}
    # one document, passages one per line: how the KET-RAG reference code reads a corpus file
    # (1,200-token chunks then span passage boundaries)
    index = build_index(["\n".join(passages)], embedder=embedder, progress=True, **index_params)
    method = KETRAG(index, llm=llm if mode == "llm" else None, embedder=embedder,
                    on_unusable_reply=params.get("on_unusable_reply", "raise"), **retrieval)
    if mode == "llm":
        return lambda ex, q: outcome_from_answer(*_timed(lambda: method.answer(q)), as_text=True)
    return lambda ex, q: outcome_from_retrieval(*_timed(lambda: method.retrieve(q)), as_text=True)


def _ketrag_retrieval_params() -> tuple[str, ...]:
    from kgrag.methods.ketrag import KETRAGConfig

    return tuple(KETRAGConfig.RETRIEVAL_PARAMS)


def build_question_runner(method: str, mode: str, resource: Any, *, llm: Any = None,
                          embedder: Any = None, params: dict | None = None,
                          k: int = 10) -> QuestionRunner:
    """The per-question function for ``method`` in ``mode`` over ``resource``.

    ``resource`` is the :class:`~kgrag.KnowledgeGraph` for KG methods and the passage list for
    KET-RAG. ``llm`` is needed (only) for ``mode="llm"``.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "llm" and llm is None:
        from kgrag.errors import LLMNotConfiguredError

        raise LLMNotConfiguredError("--mode llm needs an LLM: pass llm= (any LangChain chat "
                                    "model, LlamaIndex LLM or callable prompt -> text)")
    from kgrag.methods.registry import _resolve, get_method

    spec = get_method(method)
    params = dict(params or {})
    if spec.eval_runner is None:
        return generic_runner(resource, mode, llm, embedder, params, k=k, spec=spec)
    return _resolve(spec.eval_runner)(resource, mode, llm, embedder, params, k=k)


def as_float_dict(metrics: dict[str, Any]) -> dict[str, float]:
    return {k: float(np.round(v, 6)) for k, v in metrics.items()}
