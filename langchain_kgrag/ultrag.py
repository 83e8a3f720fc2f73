"""UltRAG as a LangChain retriever: each scored entity is one ``Document``.

``page_content`` is ``"<entity> (<membership>)"``; ``metadata`` holds the entity name
(``entity``), its query id (``entity_id``, e.g. ``Q12``), the executed ``query`` in the DSL, the
``score`` (fuzzy membership in [0, 1]) and the ``rank``. The retriever makes one LLM call per
question (query generation); the arbitration call belongs to ``answer``.
"""

from __future__ import annotations

from typing import Any

from kgrag.methods.ultrag import UltRAG
from langchain_core.documents import Document

from langchain_kgrag.base import KGRetriever
from langchain_kgrag.conversions import result_to_documents


class UltRAGRetriever(KGRetriever):
    """LangChain ``BaseRetriever`` over :class:`kgrag.methods.ultrag.UltRAG`."""

    tool_name: str = "knowledge_graph_logical_query"
    tool_description: str = (
        "Answer a question by running a logical query (relation projections and intersections) "
        "over the whole knowledge graph (UltRAG). Input: a natural-language question. Output: "
        "candidate answer entities with membership scores, best first."
    )

    @classmethod
    def from_graph(cls, kg: Any, llm: Any = None, embedder: Any = None,
                   **params: Any) -> UltRAGRetriever:
        """Build the UltRAG core over ``kg`` (see :class:`UltRAG` for ``params``)."""
        return cls(method=UltRAG.from_graph(kg, llm=llm, embedder=embedder, **params))

    def execute(self, query: str, question: str = "") -> list[Document]:
        """Documents for a DSL / tuple query written by code (no LLM call)."""
        self.last_result = self.method.retrieve_query(query, question)
        return result_to_documents(self.last_result)
