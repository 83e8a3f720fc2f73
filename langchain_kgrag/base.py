"""The LangChain retriever every kgrag method is wrapped in.

A :class:`KGRetriever` is stateless: each call returns ``Document`` s that carry everything
about that call -- the item's provenance, the question's LLM usage (``usage_*``) and the
method-level provenance (``retrieval``, JSON) -- so ``batch`` / ``abatch`` / threads never mix
questions up. The LLM calls a retrieval makes receive the retriever run's child callbacks, so
callback handlers, tracers and token counters given in ``config`` see them nested under it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kgrag.context.types import Answer, RetrievalResult
from kgrag.llm.base import llm_call_options
from kgrag.methods.base import KGMethod
from kgrag.methods.registry import (
    TOOL_QUESTION_DESCRIPTION,
    MethodSpec,
    get_method,
    wrapped_method,
)
from langchain_kgrag.conversions import result_to_documents


class QuestionInput(BaseModel):
    """Arguments of a retriever's search tool."""

    query: str = Field(description=TOOL_QUESTION_DESCRIPTION)


class KGRetriever(BaseRetriever):
    """A LangChain ``BaseRetriever`` over a kgrag method (sync, async and batch via Runnable).

    Each retrieved item (triple, path, subgraph, entity, chunk) becomes one ``Document`` with a
    stable ``id`` (hash of method and text), the verbalized item as ``page_content`` and flat,
    primitive metadata: the item's fields, ``score``, ``rank``, ``method``, ``question``, the
    question's LLM usage (``usage_calls``, ``usage_prompt_tokens``, ...), nested provenance
    as JSON under ``provenance`` and the method-level provenance as JSON under ``retrieval``
    (``kgrag.context.metadata.unflatten`` decodes both). ``k`` caps the number of documents
    (``None``: as many as the method's own settings retrieve; UltRAG's retriever defaults to
    10 because its executor ranks every entity of the graph).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    method: KGMethod = Field(repr=False)
    k: int | None = Field(default=None, description="Maximum number of documents returned "
                          "(best first); None returns every item the method retrieved.")

    #: Default tool name / description used by :meth:`as_search_tool`.
    tool_name: str = "knowledge_graph_search"
    tool_description: str = (
        "Search the knowledge graph for facts relevant to a natural-language question. "
        "Input: the question. Output: retrieved facts, one per line."
    )

    search_args_schema: ClassVar[type[BaseModel]] = QuestionInput

    #: the registered method (:mod:`kgrag.methods.registry`) this class wraps; each method's
    #: retriever sets it, :func:`retriever_for` makes the class for any registered method
    method_name: ClassVar[str | None] = None

    @field_validator("k")
    @classmethod
    def _check_k(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError("k must be >= 0 or None")
        return value

    @classmethod
    def adapter_fields(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Pop the retriever's own fields (``k``, ``tags``, ``metadata``, ``tool_name``, ...)
        out of a factory's ``params``; the rest go to the method. No method knob shares a
        name with them: ``k`` caps the documents, a method's own count is ``top_k``."""
        own = set(cls.model_fields) - {"method"}
        return {name: params.pop(name) for name in list(params) if name in own}

    # ------------------------------------------------------------------ construction
    @classmethod
    def method_spec(cls) -> MethodSpec:
        """The registry entry of the wrapped method."""
        return wrapped_method(cls, "use a method's retriever (SimGRAGRetriever, ...) or "
                              "retriever_for(name), or pass method= a built kgrag method")

    @classmethod
    def from_graph(cls, graph: Any, *, llm: Any = None, embedder: Any = None,
                   **params: Any) -> Any:
        """Build the method over ``graph`` (``Method.from_graph``; ``params`` go to the method's
        constructor, except the retriever's own fields such as ``k`` or ``tags``, which the
        method does not take itself). ``graph`` is any ``GraphStore``, or a LlamaIndex property
        graph, LangChain ``GraphDocument`` s or a networkx graph (converted by
        :func:`kgrag.graph.as_graph_store`)."""
        return cls._build("from_graph", graph, llm, embedder, params)

    @classmethod
    def from_documents(cls, documents: Iterable[Any], *, llm: Any = None,
                       embedder: Any = None, **params: Any) -> Any:
        """Index ``documents`` (LangChain ``Document`` s or strings) with a text method
        (``Method.from_documents``); ``params`` as for :meth:`from_graph`."""
        return cls._build("from_documents", documents, llm, embedder, params)

    @classmethod
    def load(cls, directory: Any, *, llm: Any = None, embedder: Any = None,
             **params: Any) -> Any:
        """Open what the method saved in ``directory`` (``Method.load``; e.g. a KET-RAG index
        written by ``retriever.method.save(directory)``)."""
        return cls._build("load", directory, llm, embedder, params)

    @classmethod
    def _build(cls, factory: str, source: Any, llm: Any, embedder: Any,
               params: dict[str, Any]) -> Any:
        keywords = {k: v for k, v in (("llm", llm), ("embedder", embedder)) if v is not None}
        spec = cls.method_spec()
        own = cls.adapter_fields(params)
        return cls(method=spec.build_with(factory, source, **keywords, **params), **own)

    # ------------------------------------------------------------------ retrieval
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        """``k`` (``retriever.invoke(q, k=3)``) overrides the field for one call."""
        with llm_call_options(callbacks=run_manager.get_child()):
            result = self.method.retrieve(query)
        return self._documents(result, k)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None
    ) -> list[Document]:
        with llm_call_options(callbacks=run_manager.get_child()):
            result = await self.method.aretrieve(query)
        return self._documents(result, k)

    def _documents(self, result: RetrievalResult, k: int | None = None) -> list[Document]:
        return result_to_documents(result, k=self.k if k is None else self._check_k(k))

    def retrieve_result(self, query: str) -> RetrievalResult:
        """The method's whole :class:`~kgrag.context.types.RetrievalResult` for ``query``
        (every item, usage, provenance) -- the concurrency-safe way to get more than the
        documents carry. No retriever run is started; LLM calls inherit the caller's
        ``llm_call_options``."""
        return self.method.retrieve(query)

    async def aretrieve_result(self, query: str) -> RetrievalResult:
        """Async :meth:`retrieve_result`."""
        return await self.method.aretrieve(query)

    # ------------------------------------------------------------------ answering
    def answer(self, question: str) -> Answer:
        """Retrieve and answer with the method's own answer prompt (needs an LLM)."""
        return self.method.answer(question)

    async def aanswer(self, question: str) -> Answer:
        """Async :meth:`answer`."""
        return await self.method.aanswer(question)

    def answer_chain(self) -> Any:
        """The method's answer as a Runnable (``invoke`` / ``ainvoke`` / ``stream`` /
        ``batch``, composable in LCEL): see :class:`langchain_kgrag.answer.KGAnswerChain`."""
        from langchain_kgrag.answer import KGAnswerChain

        return KGAnswerChain(retriever=self)

    # ------------------------------------------------------------------ tools
    def as_search_tool(self, name: str | None = None, description: str | None = None) -> BaseTool:
        """A tool an agent calls with a question; it returns the retrieved facts as text.

        Its arguments schema describes the input (``tool.args_schema``); the documents are the
        tool's artifact (``response_format="content_and_artifact"``). ``Runnable.as_tool``
        (inherited, unchanged) is the generic alternative returning the documents.
        """

        def search(query: str, callbacks: Any = None) -> tuple[str, list[Document]]:
            docs = self.invoke(query, config={"callbacks": callbacks})
            return "\n".join(d.page_content for d in docs) or "Nothing found.", docs

        async def asearch(query: str, callbacks: Any = None) -> tuple[str, list[Document]]:
            docs = await self.ainvoke(query, config={"callbacks": callbacks})
            return "\n".join(d.page_content for d in docs) or "Nothing found.", docs

        return StructuredTool.from_function(
            func=search, coroutine=asearch, name=name or self.tool_name,
            description=description or self.tool_description,
            args_schema=self.search_args_schema, response_format="content_and_artifact")


_RETRIEVERS: dict[str, type[KGRetriever]] = {}


def retriever_for(name: str) -> type[KGRetriever]:
    """The retriever class of the registered method ``name``: the package's own
    (``SimGRAGRetriever`` ...) for the built-in methods, else a :class:`KGRetriever` subclass
    made from the registry entry (its tool name and description included), once per name.

    >>> retriever_for("simgrag").__name__
    'SimGRAGRetriever'
    """
    spec = get_method(name)
    for known in _subclasses(KGRetriever):
        if known.method_name == name and known.__module__.startswith("langchain_kgrag."):
            return known
    made = _RETRIEVERS.get(name)
    if made is None or made.method_name != name:
        title = spec.method_class().__name__
        made = type(f"{title}Retriever", (KGRetriever,), {
            "__module__": __name__,
            "__doc__": f"LangChain ``BaseRetriever`` over {title} (made from the method registry).",
            "__annotations__": {"tool_name": str, "tool_description": str},
            "method_name": name,
            "tool_name": spec.tool_name,
            "tool_description": spec.tool_description,
        })
        _RETRIEVERS[name] = made
    return made


def _subclasses(cls: type[KGRetriever]) -> list[type[KGRetriever]]:
    found: list[type[KGRetriever]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found
