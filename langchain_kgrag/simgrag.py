"""SimGRAG as a LangChain retriever: each retrieved subgraph is one ``Document``.

``page_content`` is the subgraph's triples; ``metadata`` holds ``gsd`` (Graph Semantic Distance,
lower is closer) and ``rank``; the pattern-to-graph ``mapping`` and the subgraph's ``triples``
are JSON under ``provenance``, the LLM-written ``pattern`` JSON under ``retrieval``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from langchain_core.documents import Document
from langchain_core.tools import BaseTool, StructuredTool

from kgrag.methods.registry import get_method
from langchain_kgrag.base import KGRetriever
from langchain_kgrag.conversions import result_to_documents
from langchain_kgrag.tools import PatternInput

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.methods.simgrag import SimGRAG

class SimGRAGRetriever(KGRetriever):
    """LangChain ``BaseRetriever`` over :class:`kgrag.methods.simgrag.SimGRAG`."""

    method_name = "simgrag"
    tool_name: str = get_method("simgrag").tool_name
    tool_description: str = get_method("simgrag").tool_description

    def retrieve_pattern(self, triples: Any, question: str = "") -> list[Document]:
        """Documents for a pattern written by code (no LLM call)."""
        method = cast("SimGRAG", self.method)
        return result_to_documents(method.retrieve_pattern(triples, question), k=self.k)

    def as_pattern_tool(self, name: str = "knowledge_graph_pattern_search",
                        description: str | None = None) -> BaseTool:
        """A tool taking a pattern graph (described ``triples`` argument) instead of a
        question: the agent writes the pattern, SimGRAG finds the closest subgraphs."""

        def search(triples: list[list[str]], question: str = "") -> str:
            try:
                docs = self.retrieve_pattern([tuple(t) for t in triples], question)
            except ValueError as exc:  # PatternError: tell the agent what to fix
                return f"Error: {exc}"
            return "\n".join(d.page_content for d in docs) or "No matching subgraph."

        return StructuredTool.from_function(
            search, name=name, args_schema=PatternInput,
            description=description or (
                "Find the knowledge-graph subgraphs closest to a pattern of (head, relation, "
                "tail) triples with UNKNOWN placeholders. Output: matching facts, best first."))
