"""UltRAG as a LangChain retriever: each scored entity is one ``Document``.

``page_content`` is ``"<entity> (<membership>)"``; ``metadata`` holds the entity name
(``entity``), its query id (``entity_id``, e.g. ``Q12``), the ``score`` (fuzzy membership in
[0, 1]) and the ``rank``; the executed ``query`` in the DSL is in the JSON under ``retrieval``.
The retriever makes one LLM call per question (query generation); the arbitration call belongs
to ``answer``. ``k`` (default 10) keeps the best entities of the executor's ranking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from langchain_core.documents import Document
from langchain_core.tools import BaseTool, StructuredTool

from kgrag.errors import KgragError
from kgrag.methods.registry import get_method
from langchain_kgrag.base import KGRetriever
from langchain_kgrag.conversions import result_to_documents
from langchain_kgrag.tools import LogicalQueryInput

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.methods.ultrag import UltRAG

class UltRAGRetriever(KGRetriever):
    """LangChain ``BaseRetriever`` over :class:`kgrag.methods.ultrag.UltRAG`."""

    k: int | None = 10
    method_name = "ultrag"
    tool_name: str = get_method("ultrag").tool_name
    tool_description: str = get_method("ultrag").tool_description

    def execute(self, query: str, question: str = "") -> list[Document]:
        """Documents for a DSL / tuple query written by code (no LLM call)."""
        method = cast("UltRAG", self.method)
        return result_to_documents(method.retrieve_query(query, question), k=self.k)

    def as_query_tool(self, name: str = "knowledge_graph_run_logical_query",
                      description: str | None = None) -> BaseTool:
        """A tool taking a logical query in UltRAG's DSL (described ``query`` argument): the
        agent writes the query, the executor scores every entity of the graph."""

        def run(query: str, question: str = "") -> str:
            try:
                docs = self.execute(query, question)
            except (KgragError, ValueError) as exc:  # malformed query: tell the agent why
                return f"Error: {exc}"
            return "\n".join(d.page_content for d in docs) or "No entity matches the query."

        return StructuredTool.from_function(
            run, name=name, args_schema=LogicalQueryInput,
            description=description or (
                "Run a logical query (projections along relations, intersections) over the "
                "whole knowledge graph; returns entities with membership scores, best first."))
