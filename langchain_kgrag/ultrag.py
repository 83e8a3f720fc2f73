"""UltRAG as a LangChain retriever: each scored entity is one ``Document``.

``page_content`` is ``"<entity> (<membership>)"``; ``metadata`` holds the entity name
(``entity``), its query id (``entity_id``, e.g. ``Q12``), the ``score`` (fuzzy membership in
[0, 1]) and the ``rank``; the executed ``query`` in the DSL is in the JSON under ``retrieval``.
The retriever makes one LLM call per question (query generation); the arbitration call belongs
to ``answer``. ``k`` (default 10) keeps the best entities of the executor's ranking.

Two agent tools, told apart by their input: ``as_search_tool()`` (the question tool,
``knowledge_graph_answer_question``: a plain question) and ``as_query_tool()`` (the query tool,
``knowledge_graph_execute_logical_query``: a query in UltRAG's DSL; no LLM call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from langchain_core.documents import Document
from langchain_core.tools import BaseTool, StructuredTool

from kgrag.methods.registry import get_method
from kgrag.methods.ultrag.tools import QUERY_TOOL_DESCRIPTION, QUERY_TOOL_NAME, run_query_tool
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

    def as_query_tool(self, name: str = QUERY_TOOL_NAME,
                      description: str | None = None) -> BaseTool:
        """The **query tool**: its input is a logical query the agent wrote in UltRAG's DSL
        (described ``query`` argument; no LLM call), unlike ``as_search_tool`` (the question tool,
        ``knowledge_graph_answer_question``), whose input is a plain question. Each line of its
        answer says whether the graph proves the entity or the neural executor guessed it, and a
        short list says why (:func:`kgrag.methods.ultrag.tools.run_query_tool`)."""

        def run(query: str, question: str = "") -> str:
            return run_query_tool(cast("UltRAG", self.method), query, question, self.k)

        return StructuredTool.from_function(
            run, name=name, args_schema=LogicalQueryInput,
            description=description or QUERY_TOOL_DESCRIPTION)
