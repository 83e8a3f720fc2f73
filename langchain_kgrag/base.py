"""The LangChain retriever every kgrag method is wrapped in."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool
from langchain_core.tools.retriever import create_retriever_tool
from pydantic import ConfigDict

from kgrag.context.types import Answer, RetrievalResult
from kgrag.methods.base import KGMethod
from langchain_kgrag.conversions import result_to_documents


class KGRetriever(BaseRetriever):
    """A LangChain ``BaseRetriever`` over a kgrag method (sync, async and batch via Runnable).

    Each retrieved item (triple, path, subgraph, entity, chunk) becomes one ``Document`` whose
    ``page_content`` is the verbalized item and whose metadata carries its provenance. The LLM
    usage of the last call is kept in ``last_result.usage``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    method: KGMethod
    last_result: RetrievalResult | None = None

    #: Default tool name / description used by :meth:`as_tool`.
    tool_name: str = "knowledge_graph_search"
    tool_description: str = (
        "Search the knowledge graph for facts relevant to a natural-language question. "
        "Input: the question. Output: retrieved facts, one per line."
    )

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        result = self.method.retrieve(query)
        self.last_result = result
        return result_to_documents(result)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        result = await self.method.aretrieve(query)
        self.last_result = result
        return result_to_documents(result)

    def answer(self, question: str) -> Answer:
        """Retrieve and answer with the method's own answer prompt (needs an LLM)."""
        return self.method.answer(question)

    def as_tool(  # type: ignore[override]
        self, name: str | None = None, description: str | None = None, **kwargs: Any
    ) -> BaseTool:
        """A tool an agent can call with a question; returns the retrieved facts as text."""
        return create_retriever_tool(
            self, name or self.tool_name, description or self.tool_description, **kwargs
        )
