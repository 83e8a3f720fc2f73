"""SimGRAG as a LangChain retriever: each retrieved subgraph is one ``Document``.

``page_content`` is the subgraph's triples; ``metadata`` holds ``gsd`` (Graph Semantic Distance,
lower is closer), the pattern-to-graph ``mapping``, the ``pattern`` and the ``rank``.
"""

from __future__ import annotations

from typing import Any

from kgrag.methods.simgrag import SimGRAG

from langchain_kgrag.base import KGRetriever


class SimGRAGRetriever(KGRetriever):
    """LangChain ``BaseRetriever`` over :class:`kgrag.methods.simgrag.SimGRAG`."""

    tool_name: str = "knowledge_graph_subgraph_search"
    tool_description: str = (
        "Find the knowledge-graph subgraphs that best match the facts a question asks about "
        "(SimGRAG). Input: a natural-language question. Output: small sets of "
        "(head, relation, tail) facts, closest match first."
    )

    @classmethod
    def from_graph(cls, kg: Any, llm: Any = None, embedder: Any = None,
                   **params: Any) -> SimGRAGRetriever:
        """Build the SimGRAG core over ``kg`` (see :class:`SimGRAG` for ``params``)."""
        return cls(method=SimGRAG.from_graph(kg, llm=llm, embedder=embedder, **params))

    def retrieve_pattern(self, triples: Any, question: str = "") -> list:
        """Documents for a pattern written by code (no LLM call)."""
        from langchain_kgrag.conversions import result_to_documents

        self.last_result = self.method.retrieve_pattern(triples, question)
        return result_to_documents(self.last_result)
