"""What every method offers, whatever framework wraps it.

A method is a plain Python object with ``retrieve(question) -> RetrievalResult`` and, when it has
an LLM, ``answer(question) -> Answer``. The adapters in ``langchain_kgrag`` and
``llama_index_kgrag`` only convert these results; they never re-implement retrieval.

One constructor contract for all of them: a method over a graph is built with
``Method.from_graph(graph, *, llm=None, embedder=None, **params)``, a method over text with
``Method.from_documents(docs, *, llm=None, embedder=None, **params)``; ``llm`` and ``embedder``
are keyword-only everywhere (passing them positionally still works, with a
``DeprecationWarning``; see :func:`keyword_only_llm`). The registry
(:mod:`kgrag.methods.registry`) says which of the two a method uses.

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
model is never worse than no model at the retrieval. Every method takes the parameter
(constructor, ``from_graph`` / ``from_documents``, or the attribute) and applies it through
:meth:`KGMethod.unusable_reply` / :meth:`KGMethod.unusable_answer`. A model that fails or runs
out of replies is not an unusable reply: that is :class:`~kgrag.errors.LLMCallError` (or the
provider's own error), whatever the policy.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import warnings
from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar, TypeVar

from kgrag.context.types import Answer, RetrievalResult, Usage
from kgrag.errors import InvalidQuestionError, LLMNotConfiguredError, LLMOutputError
from kgrag.graph.sources.coerce import as_graph_store


F = TypeVar("F", bound=Callable[..., Any])

#: the values of ``on_unusable_reply``: raise :class:`~kgrag.errors.LLMOutputError`, return an
#: empty result (warning logged, reason in ``metadata["error"]``), or fall back to the method's
#: LLM-free retrieval (methods that have one; reason in ``metadata["fallback"]``)
UNUSABLE_REPLY_POLICIES = ("raise", "empty", "fallback")
#: the default: an unusable reply is an error the caller sees
DEFAULT_UNUSABLE_REPLY = "raise"


def check_unusable_reply(value: Any) -> str:
    """``value`` if it is one of :data:`UNUSABLE_REPLY_POLICIES`, else ``ValueError``."""
    if not isinstance(value, str) or value not in UNUSABLE_REPLY_POLICIES:
        raise ValueError(f"on_unusable_reply must be one of {UNUSABLE_REPLY_POLICIES}, "
                         f"got {value!r}")
    return value


def positional_to_keywords(where: str, extra: tuple[Any, ...], names: tuple[str, ...],
                           kwargs: dict[str, Any], *, stacklevel: int = 3) -> None:
    """Move arguments passed positionally for the keyword-only ``names`` into ``kwargs``, with a
    :class:`DeprecationWarning` (raise ``TypeError`` for too many or duplicated ones)."""
    if not extra:
        return
    if len(extra) > len(names):
        raise TypeError(f"{where}() takes too many positional arguments; pass "
                        f"{', '.join(names)} and the rest by keyword")
    passed = names[:len(extra)]
    warnings.warn(f"passing {', '.join(passed)} positionally to {where}() is deprecated; use "
                  f"keywords ({', '.join(f'{n}=...' for n in passed)})", DeprecationWarning,
                  stacklevel=stacklevel)
    for name, value in zip(passed, extra):
        if name in kwargs:
            raise TypeError(f"{where}() got multiple values for argument {name!r}")
        kwargs[name] = value


def keyword_only_llm(*names: str, skip: int = 2) -> Callable[[F], F]:
    """Let a function whose ``names`` (``"llm"``, ``"embedder"``) are keyword-only still take
    them positionally, in that order after its first ``skip`` arguments (``self``/``cls`` and the
    graph), with a :class:`DeprecationWarning` -- the old signatures of ByoKGRAG and UltRAG,
    kept working while callers move to keywords."""
    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            positional_to_keywords(func.__qualname__.replace(".__init__", ""), args[skip:],
                                   names, kwargs)
            return func(*args[:skip], **kwargs)
        return wrapper  # type: ignore[return-value]
    return decorate


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


def _takes(cls: type, name: str) -> bool:
    """Whether ``cls(...)`` accepts the keyword ``name`` (by name or through ``**kwargs``)."""
    params = inspect.signature(cls).parameters.values()
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


class KGMethod(ABC):
    """Base class of the five methods' core pipelines."""

    #: Short identifier used in metadata, CLI and evaluation ("byokg", "simgrag", ...).
    name: ClassVar[str] = "method"
    #: whether the method has an LLM-free retrieval (:meth:`retrieve_llm_free`), which
    #: ``on_unusable_reply="fallback"`` uses
    has_llm_free_mode: ClassVar[bool] = False

    _on_unusable_reply: str = DEFAULT_UNUSABLE_REPLY

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every method checks its question (:func:`check_question`) in the entry points it
        defines (:data:`QUESTION_ENTRY_POINTS`), so no method can forget it."""
        super().__init_subclass__(**kwargs)
        for name in QUESTION_ENTRY_POINTS:
            func = cls.__dict__.get(name)
            if callable(func) and not getattr(func, "__kgrag_checks_question__", False):
                setattr(cls, name, _checking_question(func))

    # ------------------------------------------------------------------ unusable replies
    @property
    def on_unusable_reply(self) -> str:
        """What an LLM reply the method cannot use does, after the step's bounded re-ask:
        ``"raise"`` (default) -- :class:`~kgrag.errors.LLMOutputError`; ``"empty"`` -- an empty
        result, a logged warning and the reason in ``metadata["error"]``. Settable."""
        return self._on_unusable_reply

    @on_unusable_reply.setter
    def on_unusable_reply(self, value: str) -> None:
        value = check_unusable_reply(value)
        if value == "fallback" and not self.has_llm_free_mode:
            raise ValueError(f"{type(self).__name__} has no LLM-free mode to fall back to "
                             "(its first step is the LLM's); use 'raise' or 'empty'")
        self._on_unusable_reply = value

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
        candidates = [str(c) for c in result.metadata.get("answer_candidates") or ()]
        total = Usage().add(result.usage).add(usage or Usage())
        if candidates:
            return Answer(question, candidates[:1], candidates[0], result, total)
        return Answer(question, [], f"No answer: {reason}.", result, total)

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
    def from_graph(cls: type[M], graph: Any, *args: Any, llm: Any = None,
                   embedder: Any = None, **params: Any) -> M:
        """The method over ``graph`` (a :class:`~kgrag.graph.memory.KnowledgeGraph`, any
        :class:`~kgrag.graph.base.GraphStore`, or a framework graph that
        :func:`~kgrag.graph.sources.coerce.as_graph_store` converts); ``params`` are the
        constructor's, plus ``on_unusable_reply`` (set as the attribute when the constructor
        does not take it). Methods built from text override this to say so (and offer
        :meth:`from_documents`)."""
        if args:  # the old positional llm / embedder
            given = {k: v for k, v in (("llm", llm), ("embedder", embedder)) if v is not None}
            positional_to_keywords(f"{cls.__name__}.from_graph", args, ("llm", "embedder"),
                                   given)
            llm, embedder = given.get("llm"), given.get("embedder")
        policy = None
        if "on_unusable_reply" in params and not _takes(cls, "on_unusable_reply"):
            policy = check_unusable_reply(params.pop("on_unusable_reply"))
        method = cls(as_graph_store(graph), llm=llm, embedder=embedder,  # type: ignore[call-arg]
                     **params)
        if policy is not None:
            method.on_unusable_reply = policy
        return method

    @classmethod
    def from_documents(cls: type[M], documents: Any, *, llm: Any = None, embedder: Any = None,
                       **params: Any) -> M:
        """The method over ``documents`` (text methods only; graph methods raise TypeError)."""
        raise TypeError(f"{cls.__name__} is built from a graph: use "
                        f"{cls.__name__}.from_graph(graph, llm=..., embedder=...)")

    @abstractmethod
    def retrieve(self, question: str) -> RetrievalResult:
        """Retrieve graph context for ``question`` (ranked items, provenance, LLM usage)."""

    async def aretrieve(self, question: str) -> RetrievalResult:
        """Async retrieval; by default runs :meth:`retrieve` in a worker thread."""
        return await asyncio.to_thread(self.retrieve, question)

    def answer(self, question: str) -> Answer:
        """Retrieve, then answer with the method's answer prompt. Needs an LLM."""
        raise LLMNotConfiguredError(
            f"{type(self).__name__} cannot answer without an LLM; pass llm= when building it"
        )

    async def aanswer(self, question: str) -> Answer:
        return await asyncio.to_thread(self.answer, question)

    def answer_from(self, question: str, result: RetrievalResult) -> Answer:
        """Answer from a retrieval already made (e.g. one a framework post-processed): the
        method's answer step only. ``result.usage`` is included in the answer's usage."""
        raise LLMNotConfiguredError(
            f"{type(self).__name__} cannot answer without an LLM; pass llm= when building it"
        )

    async def aanswer_from(self, question: str, result: RetrievalResult) -> Answer:
        return await asyncio.to_thread(self.answer_from, question, result)


for _name in QUESTION_ENTRY_POINTS:  # the defaults too: answer(123) on an LLM-free method
    setattr(KGMethod, _name, _checking_question(KGMethod.__dict__[_name]))
del _name
