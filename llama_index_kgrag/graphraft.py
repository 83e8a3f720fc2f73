"""GraphRAFT as a LlamaIndex retriever and query engine."""

from __future__ import annotations

from typing import Any

from kgrag.methods.graphraft.pipeline import GraphRAFT
from llama_index_kgrag.base import KGQueryEngine, KGRetriever, engine_kwargs, retriever_kwargs
from llama_index_kgrag.settings import with_settings


class GraphRAFTRetriever(KGRetriever):
    """Nodes returned by the selected candidate queries, as ``NodeWithScore`` (GraphRAFT)."""

    @classmethod
    def from_graph(cls, graph: Any, *, llm: Any = None, embedder: Any = None,
                   **params: Any) -> "GraphRAFTRetriever":
        """Build over a ``KnowledgeGraph`` or a Cypher store; ``params`` go to ``GraphRAFT``
        (``similarity_top_k`` to the retriever); ``Settings`` fill in ``llm`` / ``embedder``."""
        own = retriever_kwargs(params)
        return cls(GraphRAFT(graph, **with_settings(llm, embedder), **params), **own)


class GraphRAFTQueryEngine(KGQueryEngine):
    """Answers with GraphRAFT's L2 prompt over the retrieved nodes (needs an LLM)."""

    @classmethod
    def from_graph(cls, graph: Any, *, llm: Any = None, embedder: Any = None,
                   **params: Any) -> "GraphRAFTQueryEngine":
        own = engine_kwargs(params)
        return cls(method=GraphRAFT(graph, **with_settings(llm, embedder), **params), **own)
