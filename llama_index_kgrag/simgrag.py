"""SimGRAG as a LlamaIndex retriever and query engine (subgraphs become ``NodeWithScore``).

A node's text is the subgraph's triples; its score is ``1 / (1 + GSD)``; metadata holds the
``gsd`` itself, the pattern-to-graph ``mapping`` and the ``pattern``.
"""

from __future__ import annotations

from typing import Any

from kgrag.methods.simgrag import SimGRAG

from llama_index_kgrag.base import KGQueryEngine, KGRetriever, engine_kwargs, retriever_kwargs
from llama_index_kgrag.settings import with_settings


class SimGRAGRetriever(KGRetriever):
    """LlamaIndex ``BaseRetriever`` over :class:`kgrag.methods.simgrag.SimGRAG`."""

    @classmethod
    def from_graph(cls, kg: Any, llm: Any = None, embedder: Any = None,
                   **params: Any) -> SimGRAGRetriever:
        own = retriever_kwargs(params)
        return cls(SimGRAG.from_graph(kg, **with_settings(llm, embedder), **params), **own)

    def retrieve_pattern(self, triples: Any, question: str = "") -> list:
        """Nodes for a pattern written by code (no LLM call)."""
        return self._nodes(self.method.retrieve_pattern(triples, question))


class SimGRAGQueryEngine(KGQueryEngine):
    """LlamaIndex query engine: SimGRAG retrieval plus its evidence-graph answer prompt."""

    @classmethod
    def from_graph(cls, kg: Any, llm: Any = None, embedder: Any = None,
                   **params: Any) -> SimGRAGQueryEngine:
        own = engine_kwargs(params)
        return cls(method=SimGRAG.from_graph(kg, **with_settings(llm, embedder), **params),
                   **own)
