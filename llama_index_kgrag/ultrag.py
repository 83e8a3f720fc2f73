"""UltRAG as a LlamaIndex retriever and query engine (scored entities become ``NodeWithScore``).

A node's text is ``"<entity> (<membership>)"``, its score the fuzzy membership; metadata holds
``entity``, ``entity_id`` and the executed ``query``. The query engine runs the whole recipe:
query generation, execution and LLM arbitration (two LLM calls), and keeps the scored entities
as ``source_nodes``.
"""

from __future__ import annotations

from typing import Any

from kgrag.methods.ultrag import UltRAG
from llama_index.core.schema import NodeWithScore

from llama_index_kgrag.base import KGQueryEngine, KGRetriever, engine_kwargs, retriever_kwargs
from llama_index_kgrag.settings import with_settings


class UltRAGRetriever(KGRetriever):
    """LlamaIndex ``BaseRetriever`` over :class:`kgrag.methods.ultrag.UltRAG`."""

    @classmethod
    def from_graph(cls, kg: Any, llm: Any = None, embedder: Any = None,
                   **params: Any) -> UltRAGRetriever:
        own = retriever_kwargs(params)
        return cls(UltRAG.from_graph(kg, **with_settings(llm, embedder), **params), **own)

    def execute(self, query: str, question: str = "") -> list[NodeWithScore]:
        """Nodes for a DSL / tuple query written by code (no LLM call)."""
        return self._nodes(self.method.retrieve_query(query, question))


class UltRAGQueryEngine(KGQueryEngine):
    """LlamaIndex query engine: UltRAG retrieval plus its LLM (or margin) arbitrator."""

    @classmethod
    def from_graph(cls, kg: Any, llm: Any = None, embedder: Any = None,
                   **params: Any) -> UltRAGQueryEngine:
        own = engine_kwargs(params)
        return cls(method=UltRAG.from_graph(kg, **with_settings(llm, embedder), **params),
                   **own)
