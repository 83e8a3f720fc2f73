"""The LlamaIndex retriever and query engine every kgrag method is wrapped in.

:class:`KGRetriever` subclasses LlamaIndex's ``BaseRetriever``, so ``retrieve`` / ``aretrieve``
run in an instrumentation span and emit ``RetrievalStartEvent`` / ``RetrievalEndEvent`` like
LlamaIndex's own retrievers, and the LLM calls a method makes (through a LlamaIndex LLM) are
nested inside that span. It is stateless: each node carries the question's usage (``usage_*``)
and the method-level provenance (``retrieval``, JSON) in its flat metadata. Its
``get_prompts()`` / ``update_prompts()`` (``PromptMixin``) are the method's prompts, and its
``as_tool()`` is a ``RetrieverTool`` whose ``input`` argument is described.

:class:`KGQueryEngine` is a ``RetrieverQueryEngine``: retrieval through the retriever (events,
``similarity_top_k``), then the ``node_postprocessors``, then the answer. Without a
``response_synthesizer`` the answer is the method's own answer step over the (post-processed)
retrieval, with the method's prompts, which ``get_prompts()`` / ``update_prompts()`` expose
(the retriever's, under the same names);
with one, LlamaIndex's synthesizer answers over the nodes as in any ``RetrieverQueryEngine``.
``streaming=True`` returns a ``StreamingResponse`` (``AsyncStreamingResponse`` from
``aquery``) whose text arrives piece by piece: the answer reply's text, its markup tags
(``<answers>``) filtered out (:class:`kgrag.llm.streaming.TagStripper`).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import queue
import threading
from collections.abc import AsyncGenerator, Generator, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, cast

import llama_index.core.instrumentation as instrument
from llama_index.core import Settings
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import (
    AsyncStreamingResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.tools import QueryEngineTool, RetrieverTool, ToolMetadata, ToolOutput
from pydantic import BaseModel, Field

from kgrag.context.metadata import item_id
from kgrag.context.types import Answer, RetrievalResult
from kgrag.llm.base import llm_call_options
from kgrag.llm.streaming import TagStripper
from kgrag.methods.base import KGMethod, check_question
from kgrag.methods.registry import (
    DEFAULT_TOOL_DESCRIPTION,
    TOOL_QUESTION_DESCRIPTION,
    MethodSpec,
    get_method,
    wrapped_method,
)
from llama_index_kgrag.conversions import result_to_nodes
from llama_index_kgrag.settings import with_settings

dispatcher = instrument.get_dispatcher(__name__)

#: the retrievals made in this context while a query engine collects them (engine-internal)
_CAPTURED: contextvars.ContextVar[list[RetrievalResult] | None] = contextvars.ContextVar(
    "kgrag_llama_index_captured", default=None)


@contextmanager
def _capture() -> Iterator[list[RetrievalResult]]:
    token = _CAPTURED.set([])
    try:
        yield _CAPTURED.get()  # type: ignore[misc]
    finally:
        _CAPTURED.reset(token)


class QuestionToolInput(BaseModel):
    """The argument of a kgrag retriever's tool (``as_tool``): LlamaIndex's ``input``,
    described so an agent's LLM knows what to pass."""

    input: str = Field(description=TOOL_QUESTION_DESCRIPTION)


class QuestionEngineToolInput(BaseModel):
    """The argument of a kgrag query engine's tool (``as_tool``), described."""

    input: str = Field(description="The question to answer from the knowledge graph, in plain "
                                   "natural language, e.g. 'Who directed Tokyo Godfathers?'.")


class KGRetrieverTool(RetrieverTool):
    """LlamaIndex's ``RetrieverTool`` whose ``input`` argument is the question itself: an agent
    calls it as its ``fn_schema`` says (``input=...``), and ``RetrieverTool`` alone would
    retrieve for the text ``"input is <question>"``."""

    @staticmethod
    def _question_args(args: tuple[Any, ...], kwargs: dict[str, Any]
                       ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if not args and set(kwargs) == {"input"}:
            args, kwargs = (kwargs["input"],), {}
        if len(args) == 1 and not kwargs:  # the question: checked, never str(123)
            check_question(args[0])
        return args, kwargs

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        args, kwargs = self._question_args(args, kwargs)
        return super().call(*args, **kwargs)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        args, kwargs = self._question_args(args, kwargs)
        return await super().acall(*args, **kwargs)


class KGQueryEngineTool(QueryEngineTool):
    """LlamaIndex's ``QueryEngineTool`` whose question (the first argument or ``input``) is
    checked (:func:`~kgrag.methods.base.check_question`) instead of passed through ``str()``."""

    def _get_query_str(self, *args: Any, **kwargs: Any) -> str:
        if args:
            return check_question(args[0])
        if "input" in kwargs:
            return check_question(kwargs["input"])
        return super()._get_query_str(*args, **kwargs)


def checked_query(str_or_query_bundle: Any) -> Any:
    """A question string or ``QueryBundle`` whose text passes
    :func:`~kgrag.methods.base.check_question` (else
    :class:`~kgrag.errors.InvalidQuestionError`), before LlamaIndex reads ``query_str`` off
    whatever was passed."""
    if isinstance(str_or_query_bundle, QueryBundle):
        check_question(str_or_query_bundle.query_str)
    else:
        check_question(str_or_query_bundle)
    return str_or_query_bundle


class _FromRegistry:
    """The factories every wrapper shares, written once: build the registered method that
    :attr:`method_name` names (:mod:`kgrag.methods.registry`) and wrap it. ``llm`` /
    ``embedder`` default to ``Settings.llm`` / ``Settings.embed_model`` when set; the wrapper's
    own arguments (``similarity_top_k``, ``callback_manager``, and for query engines
    ``response_synthesizer``, ``node_postprocessors``, ``streaming``) are taken out of
    ``params``, the rest go to the method."""

    #: the registered method this class wraps; each method's classes set it,
    #: :func:`retriever_for` / :func:`query_engine_for` make classes for any registered method
    method_name: ClassVar[str | None] = None

    @classmethod
    def method_spec(cls) -> MethodSpec:
        """The registry entry of the wrapped method."""
        return wrapped_method(cls, "use a method's class (SimGRAGRetriever, ...), "
                              "retriever_for(name) / query_engine_for(name), or pass a built "
                              "kgrag method")

    @classmethod
    def from_graph(cls, graph: Any, *, llm: Any = None, embedder: Any = None,
                   **params: Any) -> Any:
        """Build the method over ``graph`` (``Method.from_graph``) and wrap it. ``graph`` is any
        ``GraphStore``, or a LlamaIndex ``PropertyGraphIndex`` / ``PropertyGraphStore``,
        LangChain ``GraphDocument`` s or a networkx graph (converted by
        :func:`kgrag.graph.as_graph_store`)."""
        return cls._build("from_graph", graph, llm, embedder, params)

    @classmethod
    def from_documents(cls, documents: Iterable[Any], *, llm: Any = None,
                       embedder: Any = None, **params: Any) -> Any:
        """Index ``documents`` with a text method (``Method.from_documents``) and wrap it."""
        return cls._build("from_documents", documents, llm, embedder, params)

    @classmethod
    def load(cls, directory: Any, *, llm: Any = None, embedder: Any = None,
             **params: Any) -> Any:
        """Open what the method saved in ``directory`` (``Method.load``) and wrap it."""
        return cls._build("load", directory, llm, embedder, params)

    @classmethod
    def _build(cls, factory: str, source: Any, llm: Any, embedder: Any,
               params: dict[str, Any]) -> Any:
        spec = cls.method_spec()
        own = cls._own_kwargs(params)
        method = spec.build_with(factory, source, **with_settings(llm=llm, embedder=embedder),
                                 **params)
        return cls._wrap(method, own)

    @classmethod
    def _own_kwargs(cls, params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def _wrap(cls, method: KGMethod, own: dict[str, Any]) -> Any:
        raise NotImplementedError

    def as_tool(self, name: str | None = None, description: str | None = None) -> Any:
        """A LlamaIndex tool over this wrapper (a ``RetrieverTool`` -- :class:`KGRetrieverTool`
        -- or a ``QueryEngineTool``), named and described by the method's registry entry unless
        given; its ``input`` argument is described in the ``fn_schema``."""
        spec = self.method_spec() if self.method_name else None
        name = name or (spec.tool_name if spec else "knowledge_graph_search")
        description = description or (spec.tool_description if spec
                                      else DEFAULT_TOOL_DESCRIPTION)
        if isinstance(self, BaseRetriever):
            return KGRetrieverTool(retriever=self, metadata=ToolMetadata(
                description=description, name=name, fn_schema=QuestionToolInput))
        assert isinstance(self, BaseQueryEngine)
        return KGQueryEngineTool(query_engine=self, metadata=ToolMetadata(
            description=description, name=name, fn_schema=QuestionEngineToolInput))


class KGRetriever(_FromRegistry, BaseRetriever):
    """A LlamaIndex ``BaseRetriever`` over a kgrag method; items become ``NodeWithScore``.

    ``similarity_top_k`` caps the node count (``None``: as many as the method retrieves).
    """

    def __init__(self, method: KGMethod, callback_manager: CallbackManager | None = None,
                 verbose: bool = False, similarity_top_k: int | None = None) -> None:
        if similarity_top_k is not None and similarity_top_k < 0:
            raise ValueError("similarity_top_k must be >= 0 or None")
        self.method = method
        self.similarity_top_k = similarity_top_k
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def _own_kwargs(cls, params: dict[str, Any]) -> dict[str, Any]:
        return retriever_kwargs(params)

    @classmethod
    def _wrap(cls, method: KGMethod, own: dict[str, Any]) -> Any:
        return cls(method, **own)

    def _nodes(self, result: RetrievalResult) -> list[NodeWithScore]:
        captured = _CAPTURED.get()
        if captured is not None:
            captured.append(result)
        return result_to_nodes(result, k=self.similarity_top_k)

    def retrieve(self, str_or_query_bundle: Any) -> list[NodeWithScore]:
        """LlamaIndex's ``retrieve``, the question checked first (:func:`checked_query`)."""
        return super().retrieve(checked_query(str_or_query_bundle))

    async def aretrieve(self, str_or_query_bundle: Any) -> list[NodeWithScore]:
        """LlamaIndex's ``aretrieve``, the question checked first (:func:`checked_query`)."""
        return await super().aretrieve(checked_query(str_or_query_bundle))

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(self.method.retrieve(query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(await self.method.aretrieve(query_bundle.query_str))

    # ------------------------------------------------------------------ prompts (PromptMixin)
    def _get_prompt_modules(self) -> dict[str, Any]:
        return {}

    def _get_prompts(self) -> dict[str, Any]:
        """The method's prompts (by name) as LlamaIndex ``PromptTemplate`` s: those its
        retrieval sends (e.g. UltRAG's ``query``) and its answer step's."""
        prompts = getattr(self.method, "prompts", None)
        if prompts is None:
            return {}
        return {name: PromptTemplate(text) for name, text in prompts.templates().items()}

    def _update_prompts(self, prompts_dict: dict[str, Any]) -> None:
        """Replace method prompts by name (``PromptTemplate`` s or strings); a name or a
        variable the method does not have raises ``ValueError``."""
        prompts = getattr(self.method, "prompts", None)
        if prompts is None:
            if prompts_dict:
                raise ValueError(f"{type(self.method).__name__} has no replaceable prompts")
            return
        prompts.update(prompts_dict)


def restrict(result: RetrievalResult, nodes: list[NodeWithScore]) -> RetrievalResult:
    """``result`` limited to (and ordered like) ``nodes`` -- what the answer step may use.

    Unchanged when ``nodes`` are all of its items in order. Otherwise a copy whose items are
    those the nodes came from and whose verbalised ``context`` is the nodes' text (methods
    that answer from the context -- ByoKG-RAG, KET-RAG -- then see what the post-processors
    kept).
    """
    ids = [item_id(result.method, item.verbalize()) for item in result.items]
    kept = [n.node.node_id for n in nodes]
    if kept == ids and all(n.node.get_content() == i.verbalize()
                           for n, i in zip(nodes, result.items)):
        return result
    by_id = dict(zip(ids, result.items))
    items = [by_id[i] for i in kept if i in by_id]
    metadata = dict(result.metadata)
    metadata["context"] = "\n".join(n.node.get_content() for n in nodes)
    metadata["postprocessed"] = True
    return dataclasses.replace(result, items=items, metadata=metadata)


class KGQueryEngine(_FromRegistry, RetrieverQueryEngine):
    """A ``RetrieverQueryEngine`` over a kgrag method (see the module docstring).

    Build with a factory (``SimGRAGQueryEngine.from_graph(kg, llm=...)``) or from a method:
    ``KGQueryEngine(method=m)``. The response's ``source_nodes`` are the (post-processed)
    retrieved items; in the method's own answer mode ``metadata`` holds the parsed
    ``answers``, the question's ``usage``, the ``method`` and, when the retrieval records
    one, its ``error`` (e.g. an unusable LLM reply under ``on_unusable_reply="empty"``).
    """

    def __init__(self, retriever: KGRetriever | None = None, response_synthesizer: Any = None,
                 node_postprocessors: list[Any] | None = None,
                 callback_manager: CallbackManager | None = None, *,
                 method: KGMethod | None = None, streaming: bool = False,
                 similarity_top_k: int | None = None) -> None:
        if retriever is None:
            if method is None:
                raise TypeError("KGQueryEngine needs a retriever or a method")
            retriever = KGRetriever(method, similarity_top_k=similarity_top_k)
        self._retriever = retriever
        # None: the method answers itself (RetrieverQueryEngine would build a synthesizer
        # from Settings.llm here, which resolves LlamaIndex's default LLM)
        self._response_synthesizer = response_synthesizer
        self._node_postprocessors = list(node_postprocessors or [])
        self._streaming = streaming
        callback_manager = (callback_manager or getattr(response_synthesizer, "callback_manager",
                                                        None) or Settings.callback_manager)
        for postprocessor in self._node_postprocessors:
            postprocessor.callback_manager = callback_manager
        BaseQueryEngine.__init__(self, callback_manager=callback_manager)

    @property
    def kg_retriever(self) -> KGRetriever:
        """The engine's retriever (always a :class:`KGRetriever`: the constructor makes one)."""
        return cast(KGRetriever, self._retriever)

    @property
    def method(self) -> KGMethod:
        return self.kg_retriever.method

    @classmethod
    def _own_kwargs(cls, params: dict[str, Any]) -> dict[str, Any]:
        return engine_kwargs(params)

    @classmethod
    def _wrap(cls, method: KGMethod, own: dict[str, Any]) -> Any:
        return cls(method=method, **own)

    # ------------------------------------------------------------------ prompts (PromptMixin)
    # the method's prompts are the retriever's (it owns the method); the engine shows them under
    # the same names, next to its synthesizer's
    def _get_prompt_modules(self) -> dict[str, Any]:
        if self._response_synthesizer is None:
            return {}
        return {"response_synthesizer": self._response_synthesizer}

    def _get_prompts(self) -> dict[str, Any]:
        """The method's prompts, as the retriever's :meth:`KGRetriever._get_prompts`."""
        return self.kg_retriever._get_prompts()

    def _update_prompts(self, prompts_dict: dict[str, Any]) -> None:
        """Replace method prompts by name, as the retriever's
        :meth:`KGRetriever._update_prompts`."""
        self.kg_retriever._update_prompts(prompts_dict)

    def with_retriever(self, retriever: BaseRetriever) -> RetrieverQueryEngine:
        if not isinstance(retriever, KGRetriever):
            return super().with_retriever(retriever)
        return type(self)(retriever, self._response_synthesizer, self._node_postprocessors,
                          self.callback_manager, streaming=self._streaming)

    # ------------------------------------------------------------------ answering
    def query(self, str_or_query_bundle: Any) -> Any:
        """LlamaIndex's ``query``, the question checked first (:func:`checked_query`)."""
        return super().query(checked_query(str_or_query_bundle))

    async def aquery(self, str_or_query_bundle: Any) -> Any:
        """LlamaIndex's ``aquery``, the question checked first (:func:`checked_query`)."""
        return await super().aquery(checked_query(str_or_query_bundle))

    def _response(self, answer: Answer, nodes: list[NodeWithScore]) -> Response:
        return Response(response=answer.text, source_nodes=nodes,
                        metadata=_answer_metadata(answer))

    def _answers_from_results(self) -> bool:
        """Whether the method has its own answer step over a given retrieval (all five do);
        a method with only ``answer(question)`` is answered that way instead."""
        return self.method.answers_from_results()

    def _answer_whole(self, query_bundle: QueryBundle, answer: Answer) -> Response:
        nodes = result_to_nodes(answer.retrieval, k=self.kg_retriever.similarity_top_k)
        return self._response(answer, self._apply_node_postprocessors(nodes, query_bundle))

    @dispatcher.span
    def _query(self, query_bundle: QueryBundle) -> Any:
        if self._response_synthesizer is not None:
            return super()._query(query_bundle)
        if not self._answers_from_results():
            return self._answer_whole(query_bundle, self.method.answer(query_bundle.query_str))
        with self.callback_manager.event(
            CBEventType.QUERY, payload={EventPayload.QUERY_STR: query_bundle.query_str}
        ) as query_event:
            with _capture() as captured:
                nodes = self.retrieve(query_bundle)
            result = restrict(captured[-1], nodes)
            question = query_bundle.query_str
            if self._streaming:
                response: Any = self._stream(question, result, nodes)
            else:
                response = self._response(self.method.answer_from(question, result), nodes)
            query_event.on_end(payload={EventPayload.RESPONSE: response})
        return response

    @dispatcher.span
    async def _aquery(self, query_bundle: QueryBundle) -> Any:
        if self._response_synthesizer is not None:
            return await super()._aquery(query_bundle)
        if not self._answers_from_results():
            answer = await self.method.aanswer(query_bundle.query_str)
            return self._answer_whole(query_bundle, answer)
        with self.callback_manager.event(
            CBEventType.QUERY, payload={EventPayload.QUERY_STR: query_bundle.query_str}
        ) as query_event:
            with _capture() as captured:
                nodes = await self.aretrieve(query_bundle)
            result = restrict(captured[-1], nodes)
            question = query_bundle.query_str
            if self._streaming:
                response: Any = self._astream(question, result, nodes)
            else:
                answer = await self.method.aanswer_from(question, result)
                response = self._response(answer, nodes)
            query_event.on_end(payload={EventPayload.RESPONSE: response})
        return response

    def _stream(self, question: str, result: RetrievalResult,
                nodes: list[NodeWithScore]) -> StreamingResponse:
        """The answer step in a worker thread; its LLM reply streams into ``response_gen``;
        ``metadata`` (answers, usage) is filled in when the stream ends."""
        metadata: dict[str, Any] = {}
        pieces: queue.Queue[Any] = queue.Queue()
        done = object()
        text = TagStripper()

        def work() -> None:
            try:
                with llm_call_options(on_token=lambda piece: pieces.put(text.feed(piece))):
                    metadata.update(_answer_metadata(self.method.answer_from(question, result)))
                pieces.put(text.flush())
            except BaseException as exc:  # noqa: BLE001 -- re-raised by the generator
                pieces.put(exc)
            finally:
                pieces.put(done)

        def generate() -> Generator[str, None, None]:
            worker = threading.Thread(target=contextvars.copy_context().run, args=(work,),
                                      name="kgrag-llama-stream", daemon=True)
            worker.start()
            while (piece := pieces.get()) is not done:
                if isinstance(piece, BaseException):
                    raise piece
                if piece:
                    yield piece
            worker.join()

        return StreamingResponse(response_gen=generate(), source_nodes=nodes, metadata=metadata)

    def _astream(self, question: str, result: RetrievalResult,
                 nodes: list[NodeWithScore]) -> AsyncStreamingResponse:
        metadata: dict[str, Any] = {}

        async def generate() -> AsyncGenerator[str, None]:
            loop = asyncio.get_running_loop()
            pieces: asyncio.Queue[str] = asyncio.Queue()
            text = TagStripper()

            def put(piece: str) -> None:
                loop.call_soon_threadsafe(pieces.put_nowait, text.feed(piece))

            async def work() -> None:
                with llm_call_options(on_token=put):
                    answer = await self.method.aanswer_from(question, result)
                loop.call_soon_threadsafe(pieces.put_nowait, text.flush())
                metadata.update(_answer_metadata(answer))

            task = asyncio.ensure_future(work())
            while True:
                getter = asyncio.ensure_future(pieces.get())
                finished, _ = await asyncio.wait({task, getter},
                                                 return_when=asyncio.FIRST_COMPLETED)
                if getter in finished:
                    if getter.result():
                        yield getter.result()
                    continue
                getter.cancel()
                break
            await asyncio.sleep(0)
            while not pieces.empty():
                piece = pieces.get_nowait()
                if piece:
                    yield piece
            task.result()

        return AsyncStreamingResponse(response_gen=generate(), source_nodes=nodes,
                                      metadata=metadata)


def _answer_metadata(answer: Answer) -> dict[str, Any]:
    out = {"answers": list(answer.answers), "usage": answer.usage.as_dict(),
           "method": answer.retrieval.method}
    if "error" in answer.retrieval.metadata:
        out["error"] = answer.retrieval.metadata["error"]
    return out


def engine_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """Pop the query engine's own arguments out of a factory's ``params``."""
    names = ("response_synthesizer", "node_postprocessors", "callback_manager", "streaming",
             "similarity_top_k")
    return {name: params.pop(name) for name in names if name in params}


def retriever_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """Pop the retriever's own arguments out of a factory's ``params``."""
    names = ("callback_manager", "verbose", "similarity_top_k")
    return {name: params.pop(name) for name in names if name in params}


_MADE: dict[tuple[str, str], type] = {}


def _class_for(base: type[_FromRegistry], suffix: str, name: str) -> Any:
    spec = get_method(name)
    for known in _subclasses(base):
        if known.method_name == name and known.__module__.startswith("llama_index_kgrag."):
            return known
    made = _MADE.get((suffix, name))
    if made is None:
        title = spec.method_class().__name__
        made = type(f"{title}{suffix}", (base,), {
            "__module__": __name__, "method_name": name,
            "__doc__": f"LlamaIndex {suffix} over {title} (made from the method registry)."})
        _MADE[(suffix, name)] = made
    return made


def retriever_for(name: str) -> type[KGRetriever]:
    """The retriever class of the registered method ``name`` (the package's own for the
    built-in methods, else one made from the registry entry)."""
    return _class_for(KGRetriever, "Retriever", name)


def query_engine_for(name: str) -> type[KGQueryEngine]:
    """The query engine class of the registered method ``name`` (as :func:`retriever_for`)."""
    return _class_for(KGQueryEngine, "QueryEngine", name)


def _subclasses(cls: type[_FromRegistry]) -> list[type[_FromRegistry]]:
    found: list[type[_FromRegistry]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found
