"""GraphRAFT as a LangChain retriever (and tool)."""

from __future__ import annotations

from typing import Any

from kgrag.methods.graphraft.pipeline import GraphRAFT
from langchain_kgrag.base import KGRetriever


class GraphRAFTRetriever(KGRetriever):
    """Retrieves the nodes returned by the selected candidate Cypher queries (GraphRAFT).

    Each ``Document`` is one node; metadata holds the patterns (canonical queries) that returned
    it, or ``"No pattern"`` for the vector top-up.
    """

    tool_name: str = "graph_query_search"
    tool_description: str = (
        "Find knowledge-graph entities that answer a question by running the best-matching "
        "graph queries around the entities it mentions. Input: the question."
    )

    @classmethod
    def from_graph(cls, graph: Any, *, llm: Any = None, embedder: Any = None,
                   **params: Any) -> "GraphRAFTRetriever":
        """Build over a ``KnowledgeGraph`` or a Cypher store (``Neo4jGraphStore``,
        ``FalkorDBGraphStore``); ``params`` go to :class:`~kgrag.methods.graphraft.pipeline.GraphRAFT`."""
        own = cls.adapter_fields(params, GraphRAFT)
        return cls(method=GraphRAFT(graph, llm=llm, embedder=embedder, **params), **own)
