"""What every method offers, whatever framework wraps it.

A method is a plain Python object with ``retrieve(question) -> RetrievalResult`` and, when it has
an LLM, ``answer(question) -> Answer``. The adapters in ``langchain_kgrag`` and
``llama_index_kgrag`` only convert these results; they never re-implement retrieval.

One constructor contract for all of them: a method over a graph is built with
``Method.from_graph(graph, *, llm=None, embedder=None, **params)``, a method over text with
``Method.from_documents(docs, *, llm=None, embedder=None, **params)``; ``llm`` and ``embedder`` are
keyword-only everywhere. The registry (:mod:`kgrag.methods.registry`) says which of the two a method
uses. Every tuning knob is a field of the method's config (:attr:`KGMethod.config_class`, a
:class:`~kgrag.methods.config.MethodConfig`), read as ``method.config.<knob>``; keyword knobs given
to a constructor or factory build it.

``from_graph`` takes the graph a user already has: a ``GraphStore``, or a LlamaIndex
property graph, LangChain ``GraphDocument``\\ s or a networkx graph, converted by
:func:`~kgrag.graph.sources.coerce.as_graph_store` (anything else: a ``GraphFormatError``
naming the loaders). A method's constructor (``ByoKGRAG(graph, ...)``) takes a ``GraphStore``
as it is: convert other graphs first, or use ``from_graph``.

One policy for LLM replies a method cannot use (docs/examples.md, "Unusable LLM replies"):
after the step's bounded re-ask, ``on_unusable_reply="raise"`` (the default) raises
:class:`~kgrag.errors.LLMOutputError`; ``"empty"`` returns an empty result instead, logs a
warning and records the reason in ``metadata["error"]``; ``"fallback"`` (methods with an
LLM-free mode: ByoKG-RAG, GraphRAFT, KET-RAG) returns the method's LLM-free retrieval instead,
the reason in ``metadata["fallback"]``, and the answer step (if any) answers from it -- so a weak
model is never worse than no model at the retrieval. The policy is a field of every method's
config (``config.on_unusable_reply``; constructor, ``from_graph`` / ``from_documents``, or the
settable :attr:`KGMethod.on_unusable_reply`) and is applied through
:meth:`KGMethod.unusable_reply` / :meth:`KGMethod.unusable_answer`. A model that fails or runs
out of replies is not an unusable reply: that is :class:`~kgrag.errors.LLMCallError` (or the
provider's own error), whatever the policy.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
from abc import ABC
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, ClassVar, TypeVar

from kgrag.context.types import Answer, RetrievalResult, ScoredEntity, Usage
from kgrag.errors import InvalidQuestionError, LLMNotConfiguredError, LLMOutputError
from kgrag.graph.sources.coerce import as_graph_store
from kgrag.llm.base import no_llm_message
from kgrag.llm.grounding import ground_answer
from kgrag.llm.steps import CallLog, Steps, run_async, run_sync
from kgrag.methods.config import (
    DEFAULT_UNUSABLE_REPLY as DEFAULT_UNUSABLE_REPLY,
)
from kgrag.methods.config import (
    UNUSABLE_REPLY_POLICIES as UNUSABLE_REPLY_POLICIES,
)
from kgrag.methods.config import (
    MethodConfig,
)
from kgrag.methods.config import (
    check_unusable_reply as check_unusable_reply,
)

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

M = TypeVar("M", bound="KGMethod")

#: the entry points that take a question first; every method's own definitions of them check it
QUESTION_ENTRY_POINTS = ("retrieve", "aretrieve", "answer", "aanswer", "answer_from",
                         "aanswer_from")


def check_question(question: Any) -> str:
    """``question`` if it is a string with some non-blank text, else
    :class:`~kgrag.errors.InvalidQuestionError` saying what was passed -- checked at every
    entry point (methods, both adapters' retrievers, query engines and tools), so ``123`` or
    ``["a"]`` fail with a clear message instead of deep inside a method, and ``""`` is an
    error instead of a silent empty result."""
    if not isinstance(question, str):
        raise InvalidQuestionError(f"a question must be a string, got {type(question).__name__}"
                                   f" {_short(question)}")
    if not question.strip():
        raise InvalidQuestionError("the question is empty: ask something in words")
    return question


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _checking_question(func: F) -> F:
    """``func(self, question, ...)`` (sync or async) with ``question`` checked first."""
    if inspect.iscoroutinefunction(func):
        @functools.wraps(func)
        async def acheck(self: Any, question: Any, *args: Any, **kwargs: Any) -> Any:
            return await func(self, check_question(question), *args, **kwargs)
        acheck.__kgrag_checks_question__ = True  # type: ignore[attr-defined]
        return acheck  # type: ignore[return-value]

    @functools.wraps(func)
    def check(self: Any, question: Any, *args: Any, **kwargs: Any) -> Any:
        return func(self, check_question(question), *args, **kwargs)
    check.__kgrag_checks_question__ = True  # type: ignore[attr-defined]
    return check  # type: ignore[return-value]

#: the ``empty_reason`` of a retrieval over a graph without a single triple
EMPTY_GRAPH_REASON = "the graph holds no triples"
#: the ``empty_reason`` of an LLM-free retrieval that found no entity of the question in the
#: graph: an empty result, not the nodes nearest to an unrelated question
NOTHING_LINKED = "no entity of the question was found in the graph (nothing linked)"


def explain_empty(result: RetrievalResult, graph: Any) -> RetrievalResult:
    """``result``, with ``metadata["empty_reason"]`` set to :data:`EMPTY_GRAPH_REASON` when it
    has no items, no reason or error yet, and ``graph`` has no edges -- so an empty graph is
    an empty result that says why, not a silent ``[]``. Counts the graph only for an empty
    result (a database store answers with one query)."""
    if result.items or "empty_reason" in result.metadata or "error" in result.metadata:
        return result
    counts = getattr(graph, "counts", None)
    if callable(counts) and not counts().get("edges", 1):
        result.metadata["empty_reason"] = EMPTY_GRAPH_REASON
    return result


class KGMethod(ABC):
    """Base class of the five methods' core pipelines."""

    #: Short identifier used in metadata, CLI and evaluation ("byokg", "simgrag", ...).
    name: ClassVar[str] = "method"
    #: whether the method has an LLM-free retrieval (:meth:`retrieve_llm_free`), which
    #: ``on_unusable_reply="fallback"`` uses
    has_llm_free_mode: ClassVar[bool] = False
    #: the stages that cannot run without an LLM: ``{"retrieve" | "answer": (what needs it,
    #: what the method does without one)}``, the words of its
    #: :class:`~kgrag.errors.LLMNotConfiguredError` (``("", "")``: "X cannot answer without an
    #: LLM"); a stage not listed runs without one (its LLM-free mode, or an LLM-free answer)
    llm_needed: ClassVar[dict[str, tuple[str, str]]] = {"answer": ("", "")}
    #: whether the retrieval an :meth:`answer` returns counts the whole run, its answer call
    #: included (usage and call counts; ByoKG-RAG's per-question cost); otherwise ``answer`` is
    #: :meth:`answer_from` over :meth:`retrieve`
    answer_counts_in_retrieval: ClassVar[bool] = False
    #: the method's knobs (a frozen dataclass); an instance is :attr:`config`
    config_class: ClassVar[type[MethodConfig]] = MethodConfig

    _config: MethodConfig

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every method checks its question (:func:`check_question`) in the entry points it
        defines (:data:`QUESTION_ENTRY_POINTS`), so no method can forget it."""
        super().__init_subclass__(**kwargs)
        for name in QUESTION_ENTRY_POINTS:
            func = cls.__dict__.get(name)
            if callable(func) and not getattr(func, "__kgrag_checks_question__", False):
                setattr(cls, name, _checking_question(func))

    # ------------------------------------------------------------------ configuration
    @property
    def config(self) -> Any:
        """The method's knobs, an instance of :attr:`config_class` (the one place they live:
        ``method.config.top_k``); its defaults until the constructor calls :meth:`configure`.
        Settable with another instance of the same class."""
        try:
            return self._config
        except AttributeError:  # a constructor that did not call configure()
            self._config = self.config_class()
            return self._config

    @config.setter
    def config(self, value: MethodConfig) -> None:
        if not isinstance(value, self.config_class):
            raise TypeError(f"{type(self).__name__}.config must be a "
                            f"{self.config_class.__name__}, got {type(value).__name__}")
        if value.on_unusable_reply == "fallback" and not self.has_llm_free_mode:
            raise ValueError(f"{type(self).__name__} has no LLM-free mode to fall back to "
                             "(its first step is the LLM's); use 'raise' or 'empty'")
        self._config = value

    def configure(self, config: MethodConfig | None, params: dict[str, Any]) -> Any:
        """Set :attr:`config` to ``config`` (default: :attr:`config_class`'s defaults) with the
        keyword knobs ``params`` replacing its fields (``TypeError`` naming an unknown one);
        returns it. Every constructor calls this once."""
        self.config = (config if config is not None else self.config_class()).replace(**params)
        return self.config

    # ------------------------------------------------------------------ unusable replies
    @property
    def on_unusable_reply(self) -> str:
        """``config.on_unusable_reply``: what an LLM reply the method cannot use does, after
        the step's bounded re-ask -- ``"raise"`` (default) :class:`~kgrag.errors.LLMOutputError`;
        ``"empty"`` an empty result, a logged warning and the reason in ``metadata["error"]``;
        ``"fallback"`` the LLM-free retrieval. Settable (replaces the config's field)."""
        return str(self.config.on_unusable_reply)

    @on_unusable_reply.setter
    def on_unusable_reply(self, value: str) -> None:
        self.config = self.config.replace(on_unusable_reply=check_unusable_reply(value))

    def retrieve_llm_free(self, question: str) -> RetrievalResult:
        """The method's retrieval without any LLM call (its LLM-free mode), the result
        ``on_unusable_reply="fallback"`` returns. Methods with one override this and set
        :attr:`has_llm_free_mode`."""
        raise NotImplementedError(f"{type(self).__name__} has no LLM-free mode")

    def _fallback(self, question: str, reason: str, usage: Usage | None,
                  metadata: dict[str, Any]) -> RetrievalResult:
        logging.getLogger(type(self).__module__).warning(
            "%s: unusable LLM reply for %r (%s); using the LLM-free retrieval "
            "(on_unusable_reply='fallback')", type(self).__name__, question[:200], reason)
        free = self.retrieve_llm_free(question)
        meta = {**free.metadata, "fallback": reason, "llm_metadata": metadata}
        return RetrievalResult(question, list(free.items), self.name,
                               Usage().add(usage or Usage()).add(free.usage), meta)

    def _log_unusable(self, question: str, error: LLMOutputError, what: str) -> str:
        reason = str(error)
        logging.getLogger(type(self).__module__).warning(
            "%s: unusable LLM reply for %r (%s); returning an empty %s "
            "(on_unusable_reply='empty')", type(self).__name__, question[:200], reason, what)
        return reason

    def unusable_reply(self, question: str, error: LLMOutputError, usage: Usage | None = None,
                       **metadata: Any) -> RetrievalResult:
        """The policy applied to a retrieval whose LLM reply was unusable after its re-asks:
        raise ``error`` (``"raise"``), or return an empty result (``"empty"``) with a logged
        warning, the reason in ``metadata["error"]`` and ``metadata["unusable_reply"]`` set,
        the LLM usage spent so far and the method's own ``metadata``."""
        if self.on_unusable_reply == "raise":
            raise error
        if self.on_unusable_reply == "fallback":
            return self._fallback(question, str(error), usage, metadata)
        reason = self._log_unusable(question, error, "result")
        meta = {**metadata, "error": reason, "unusable_reply": True}
        return RetrievalResult(question, [], self.name, usage or Usage(), meta)

    def unusable_answer(self, question: str, result: RetrievalResult,
                        error: LLMOutputError | None = None,
                        usage: Usage | None = None) -> Answer:
        """The policy applied to an answer: ``error`` (the answer reply was unusable) raised
        under ``"raise"``, else an answer with no answers whose text says why; with
        ``error=None``, the answer for a retrieval that :meth:`unusable_reply` made empty (no
        LLM call is spent on it). ``usage`` is the answer step's; the retrieval's is added."""
        if error is not None:
            if self.on_unusable_reply == "raise":
                raise error
            if self.on_unusable_reply == "fallback":
                return self._fallback_answer(question, result, error, usage)
            result.metadata["error"] = self._log_unusable(question, error, "answer")
            result.metadata["unusable_reply"] = True
        total = Usage().add(result.usage).add(usage or Usage())
        return Answer(question, [], f"No answer: {result.metadata.get('error')}.", result, total)

    def _fallback_answer(self, question: str, result: RetrievalResult, error: LLMOutputError,
                         usage: Usage | None) -> Answer:
        """An unusable answer reply under ``"fallback"``: the retrieval's own best answer
        candidate (LLM-free ranking), when it ranks candidates, else no answer; the retrieval
        is kept either way."""
        reason = str(error)
        logging.getLogger(type(self).__module__).warning(
            "%s: unusable answer reply for %r (%s); answering with the retrieval's best "
            "candidate (on_unusable_reply='fallback')", type(self).__name__, question[:200],
            reason)
        result.metadata["fallback"] = reason
        result.metadata["answer_fallback"] = reason  # the answer step's own, apart from retrieval's
        candidates = self.fallback_candidates(result)
        total = Usage().add(result.usage).add(usage or Usage())
        if candidates:
            return Answer(question, candidates[:1], candidates[0], result, total)
        return Answer(question, [], f"No answer: {reason}.", result, total)

    def fallback_candidates(self, result: RetrievalResult) -> list[str]:
        """The retrieval's own answer candidates, best first, that an unusable or ungrounded
        answer reply falls back to: its ``answer_candidates`` metadata (ByoKG-RAG's LLM-free
        ranking), else its retrieved entities in rank order (GraphRAFT's nodes); none for a
        retrieval of text passages (KET-RAG), which then has no answer."""
        ranked = result.metadata.get("answer_candidates")
        if ranked:
            return [str(c) for c in ranked]
        return [item.name for item in result.items if isinstance(item, ScoredEntity)]

    def ground_answer(self, question: str, result: RetrievalResult, answer: Answer) -> Answer:
        """``answer`` checked against its retrieval under ``on_unusable_reply="fallback"``:
        :func:`kgrag.llm.grounding.ground_answer` over :meth:`fallback_candidates` (grounded
        answers kept, the candidates a prose reply names made the answers, a reply naming
        none an :class:`~kgrag.errors.LLMOutputError`, so the best candidate answers)."""
        return ground_answer(question, result, answer,
                             candidates=self.fallback_candidates(result))

    def answer_after_unusable(self, question: str, result: RetrievalResult) -> Answer:
        """The answer for a retrieval whose LLM reply was unusable: under ``"fallback"`` the
        LLM answers from the LLM-free retrieval :meth:`unusable_reply` returned; otherwise
        :meth:`unusable_answer` (no LLM call)."""
        if result.metadata.get("fallback") and not self.was_unusable(result):
            return self.answer_from(question, result)
        return self.unusable_answer(question, result)

    async def aanswer_after_unusable(self, question: str, result: RetrievalResult) -> Answer:
        """Async :meth:`answer_after_unusable`."""
        if result.metadata.get("fallback") and not self.was_unusable(result):
            return await self.aanswer_from(question, result)
        return self.unusable_answer(question, result)

    @staticmethod
    def was_unusable(result: RetrievalResult) -> bool:
        """Whether ``result`` is the empty result of an unusable reply (nothing to answer)."""
        return bool(result.metadata.get("unusable_reply"))

    @classmethod
    def from_graph(cls: type[M], graph: Any, *, llm: Any = None, embedder: Any = None,
                   **params: Any) -> M:
        """The method over ``graph`` (a :class:`~kgrag.graph.memory.KnowledgeGraph`, any
        :class:`~kgrag.graph.base.GraphStore`, or a framework graph that
        :func:`~kgrag.graph.sources.coerce.as_graph_store` converts); ``params`` are the
        constructor's (components, ``config=`` and any field of :attr:`config_class`, such as
        ``on_unusable_reply``). Methods built from text override this to say so (and offer
        :meth:`from_documents`)."""
        return cls(as_graph_store(graph), llm=llm, embedder=embedder,  # type: ignore[call-arg]
                   **params)

    @classmethod
    def from_documents(cls: type[M], documents: Any, *, llm: Any = None, embedder: Any = None,
                       **params: Any) -> M:
        """The method over ``documents`` (text methods only; graph methods raise TypeError)."""
        raise TypeError(f"{cls.__name__} is built from a graph: use "
                        f"{cls.__name__}.from_graph(graph, llm=..., embedder=...)")

    # ------------------------------------------------------------------ the lifecycle
    # A method writes its steps once -- :meth:`retrieval_steps` and :meth:`answering_steps`,
    # generators of LLM requests (kgrag.llm.steps) -- and the six entry points below drive them
    # synchronously or asynchronously, applying in one place the "no LLM" error
    # (:attr:`llm_needed`), the unusable-reply policy and the usage accounting.

    def retrieval_steps(self, question: str, **options: Any) -> Steps[RetrievalResult]:
        """The method's retrieval as steps: yields :class:`~kgrag.llm.steps.LLMRequest` s (sent
        to :meth:`stage_llm` ``("retrieve")``) or :class:`~kgrag.llm.steps.Offload` s, and returns
        the result (its ``usage`` is set by the driver, :meth:`finish_retrieval`). An
        :class:`~kgrag.errors.LLMOutputError` it raises goes to ``on_unusable_reply``.
        ``options`` are the keywords of :meth:`retrieve` (UltRAG's ``seeds``)."""
        raise NotImplementedError(f"{type(self).__name__} defines neither retrieval_steps() "
                                  "nor retrieve()")

    def answering_steps(self, question: str, result: RetrievalResult) -> Steps[Answer]:
        """The method's answer step over ``result`` as steps (requests go to
        :meth:`stage_llm` ``("answer")``); returns the :class:`Answer` (its ``usage`` is set by
        the driver). An :class:`~kgrag.errors.LLMOutputError` goes to ``on_unusable_reply``."""
        raise self._cannot_answer()

    def stage_llm(self, stage: str) -> Any:
        """The LLM adapter a stage (``"retrieve"`` or ``"answer"``) sends its requests to;
        ``None``: the stage runs without one (or, when :attr:`llm_needed` lists it, cannot)."""
        return getattr(self, "llm", None)

    def usage_llms(self) -> tuple[Any, ...]:
        """The adapters whose calls a run counts: both stages' LLMs."""
        return (self.stage_llm("retrieve"), self.stage_llm("answer"))

    def finish_retrieval(self, result: RetrievalResult, run: Run) -> RetrievalResult:
        """``result`` of a run's retrieval steps with the run's usage so far."""
        result.usage = run.usage()
        return result

    def finish_answer(self, answer: Answer) -> Answer:
        """An answer whose usage the driver has set (a hook; unchanged by default)."""
        return answer

    def unusable_metadata(self, run: Run) -> dict[str, Any]:
        """The method's own metadata of a result made empty by an unusable reply."""
        return {}

    @property
    def total_usage(self) -> Usage:
        """Every LLM call and token this method's runs (retrievals and answers) spent."""
        with _TOTAL_LOCK:
            return self.__dict__.setdefault("_total_usage", Usage())

    def _account(self, run: Run) -> None:
        spent = run.usage()
        total = self.total_usage
        with _TOTAL_LOCK:
            total.add(spent)

    def _cannot_answer(self) -> LLMNotConfiguredError:
        return LLMNotConfiguredError(
            f"{type(self).__name__} cannot answer without an LLM; pass llm= when building it")

    def _llm_for(self, stage: str) -> Any:
        """:meth:`stage_llm`, or the method's "no LLM configured" error when the stage needs
        one (:attr:`llm_needed`)."""
        llm = self.stage_llm(stage)
        if llm is None and stage in self.llm_needed:
            what, without = self.llm_needed[stage]
            if not what:
                raise self._cannot_answer()
            raise LLMNotConfiguredError(no_llm_message(what, without))
        return llm

    def _answers(self) -> bool:
        """Whether the method has an answer step (else :meth:`answer` raises)."""
        return type(self).answering_steps is not KGMethod.answering_steps

    def answers_from_results(self) -> bool:
        """Whether :meth:`answer_from` answers a given retrieval (the method has an answer
        step, or its own ``answer_from``); a method with only ``answer(question)`` does not."""
        return self._answers() or type(self).answer_from is not KGMethod.answer_from

    # the runs: one generator each, driven by run_sync or run_async
    def _retrieval_run(self, question: str, run: Run, options: dict[str, Any]
                       ) -> Steps[RetrievalResult]:
        try:
            result = yield from self.retrieval_steps(question, **options)
        except LLMOutputError as exc:  # after the step's re-asks: the policy decides
            return self.unusable_reply(question, exc, run.usage(),
                                       **self.unusable_metadata(run))
        return self.finish_retrieval(result, run)

    def _answering_run(self, question: str, result: RetrievalResult, run: Run, *,
                       counted_in_retrieval: bool = False) -> Steps[Answer]:
        """The answer step over ``result``; ``counted_in_retrieval``: the run made ``result``
        too, which then counts the whole run (:attr:`answer_counts_in_retrieval`)."""
        before = run.usage()
        try:
            answer = yield from self.answering_steps(question, result)
            if self.on_unusable_reply == "fallback":
                answer = self.ground_answer(question, result, answer)
        except LLMOutputError as exc:
            if counted_in_retrieval:
                return self.unusable_answer(question, self.finish_retrieval(result, run), exc)
            return self.unusable_answer(question, result, exc, _spent_since(run, before))
        if counted_in_retrieval:
            answer.usage = self.finish_retrieval(result, run).usage
        else:
            answer.usage = Usage().add(result.usage).add(_spent_since(run, before))
        return self.finish_answer(answer)

    def _answer_run(self, question: str, run: Run, options: dict[str, Any]
                    ) -> Steps[Answer | RetrievalResult]:
        """Retrieval and answer in one run (:attr:`answer_counts_in_retrieval`); a retrieval
        made empty by an unusable reply is returned as it is."""
        result = yield from self._retrieval_run(question, run, options)
        if result.metadata.get("unusable_reply") or result.metadata.get("fallback"):
            return result
        return (yield from self._answering_run(question, result, run,
                                               counted_in_retrieval=True))

    def _drive(self, make: Callable[[Run], Steps[T]], llm: Any) -> T:
        with Run.over(self.usage_llms()) as run:
            out = run_sync(make(run), llm, run.log)
        self._account(run)
        return out

    async def _adrive(self, make: Callable[[Run], Steps[T]], llm: Any) -> T:
        with Run.over(self.usage_llms()) as run:
            out = await run_async(make(run), llm, run.log)
        self._account(run)
        return out

    # the six entry points
    def retrieve(self, question: str, **options: Any) -> RetrievalResult:
        """Retrieve graph context for ``question`` (ranked items, provenance, LLM usage)."""
        llm = self._llm_for("retrieve")
        return self._drive(lambda run: self._retrieval_run(question, run, options), llm)

    async def aretrieve(self, question: str, **options: Any) -> RetrievalResult:
        """Async :meth:`retrieve`: the same steps, LLM requests awaited (a method that only
        defines :meth:`retrieve` runs it in a worker thread)."""
        if type(self).retrieval_steps is KGMethod.retrieval_steps:
            return await asyncio.to_thread(self.retrieve, question, **options)
        llm = self._llm_for("retrieve")
        return await self._adrive(lambda run: self._retrieval_run(question, run, options), llm)

    def answer(self, question: str, **options: Any) -> Answer:
        """Retrieve, then answer with the method's answer step. Needs an LLM."""
        if not self._answers():
            raise self._cannot_answer()
        self._llm_for("answer")
        if not self.answer_counts_in_retrieval:
            return self.answer_from(question, self.retrieve(question, **options))
        out = self._drive(lambda run: self._answer_run(question, run, options),
                          self._llm_for("retrieve"))
        return out if isinstance(out, Answer) else self.answer_after_unusable(question, out)

    async def aanswer(self, question: str, **options: Any) -> Answer:
        """Async :meth:`answer`."""
        if not self._answers():
            if type(self).answer is not KGMethod.answer:  # a method with its own answer()
                return await asyncio.to_thread(self.answer, question, **options)
            raise self._cannot_answer()
        self._llm_for("answer")
        if not self.answer_counts_in_retrieval:
            return await self.aanswer_from(question, await self.aretrieve(question, **options))
        out = await self._adrive(lambda run: self._answer_run(question, run, options),
                                 self._llm_for("retrieve"))
        return (out if isinstance(out, Answer)
                else await self.aanswer_after_unusable(question, out))

    def answer_from(self, question: str, result: RetrievalResult) -> Answer:
        """Answer from a retrieval already made (e.g. one a framework post-processed): the
        method's answer step only. ``result.usage`` is included in the answer's usage."""
        if not self._answers():
            raise self._cannot_answer()
        llm = self._llm_for("answer")
        if self.was_unusable(result):
            return self.unusable_answer(question, result)
        return self._drive(lambda run: self._answering_run(question, result, run), llm)

    async def aanswer_from(self, question: str, result: RetrievalResult) -> Answer:
        """Async :meth:`answer_from`."""
        if not self._answers():
            if type(self).answer_from is not KGMethod.answer_from:
                return await asyncio.to_thread(self.answer_from, question, result)
            raise self._cannot_answer()
        llm = self._llm_for("answer")
        if self.was_unusable(result):
            return self.unusable_answer(question, result)
        return await self._adrive(lambda run: self._answering_run(question, result, run), llm)


class Run:
    """One pass of a method over a question: the LLM requests it sent, by step (``log``), and
    what the method's LLMs spent inside it (:meth:`usage`, counted as the calls happen, per
    context -- concurrent questions on one method each count their own)."""

    def __init__(self) -> None:
        self.log = CallLog()
        self._scopes: list[Usage] = []

    @classmethod
    @contextmanager
    def over(cls, llms: Iterable[Any]) -> Iterator[Run]:
        """A run counting the calls of every distinct adapter in ``llms`` (``None`` skipped)."""
        run = cls()
        unique = {id(llm): llm for llm in llms if llm is not None}
        with ExitStack() as stack:
            run._scopes = [stack.enter_context(llm.track()) for llm in unique.values()]
            yield run

    def usage(self) -> Usage:
        """The calls and tokens spent so far (a new :class:`Usage`)."""
        total = Usage()
        for scope in self._scopes:
            total.add(scope)
        return total


def _spent_since(run: Run, before: Usage) -> Usage:
    now = run.usage()
    return Usage(now.calls - before.calls, now.prompt_tokens - before.prompt_tokens,
                 now.completion_tokens - before.completion_tokens)


_TOTAL_LOCK = threading.Lock()


for _name in QUESTION_ENTRY_POINTS:  # the defaults too: answer(123) on an LLM-free method
    setattr(KGMethod, _name, _checking_question(KGMethod.__dict__[_name]))
del _name
