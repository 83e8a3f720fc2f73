"""ByoKG-RAG for LangChain: a retriever (and tool), and a toolkit of graph tools for agents."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, BaseToolkit, StructuredTool
from pydantic import ConfigDict

from kgrag.methods.byokg import ByoKGRAG, GraphTools
from langchain_kgrag.base import KGRetriever


class ByoKGRetriever(KGRetriever):
    """ByoKG-RAG's iterative multi-strategy retrieval as a LangChain ``BaseRetriever``.

    Each ``Document`` is one retrieved triple, path, graph-query result or (LLM-free mode)
    answer candidate; ``last_result.usage`` holds the LLM calls and tokens of the question.
    """

    tool_name: str = "byokg_graph_search"
    tool_description: str = (
        "Retrieve knowledge-graph facts (triples, relation paths, query results) that answer a "
        "natural-language question. Input: the question."
    )

    @classmethod
    def from_graph(cls, graph: Any, llm: Any = None, embedder: Any = None,
                   **params: Any) -> "ByoKGRetriever":
        """Build over a KnowledgeGraph or GraphStore; ``params`` go to
        :class:`~kgrag.methods.byokg.ByoKGRAG`."""
        return cls(method=ByoKGRAG(graph, llm=llm, embedder=embedder, **params))

    def toolkit(self) -> "KGToolkit":
        """The graph tools over the same graph and entity linker."""
        return KGToolkit(tools_core=GraphTools.from_method(self.method))


class KGToolkit(BaseToolkit):
    """ByoKG-RAG's graph tools as LangChain tools: entity lookup, neighbours, path following,
    shortest path, and -- on Cypher-capable stores -- read-only openCypher.

    >>> toolkit = KGToolkit.from_graph(kg)          # doctest: +SKIP
    >>> agent_tools = toolkit.get_tools()           # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tools_core: GraphTools

    @classmethod
    def from_graph(cls, graph: Any, linker: Any = None) -> "KGToolkit":
        return cls(tools_core=GraphTools(graph, linker))

    def get_tools(self) -> list[BaseTool]:
        core = self.tools_core
        tools = [
            StructuredTool.from_function(
                core.lookup_entity_text, name="kg_lookup_entity",
                description="Find the knowledge-graph nodes whose names best match a name "
                            "(exact, fuzzy or semantic match). Use it before the other tools."),
            StructuredTool.from_function(
                core.neighbors_text, name="kg_neighbors",
                description="List the facts (head -> relation -> tail) around an entity, "
                            "optionally only one relation; direction is 'out', 'in' or 'both'."),
            StructuredTool.from_function(
                core.follow_path_text, name="kg_follow_path",
                description="Follow a relation path such as 'r1 -> r2' from an entity and "
                            "return the walks; each relation is followed in both directions."),
            StructuredTool.from_function(
                core.shortest_path_text, name="kg_shortest_path",
                description="Find how two entities are connected: the shortest path between them."),
        ]
        if core.supports_cypher:
            tools.append(StructuredTool.from_function(
                core.run_cypher_text, name="kg_cypher",
                description="Run one read-only openCypher query (MATCH ... RETURN ...) on the "
                            "graph database; write clauses are refused. Errors are returned."))
        return tools
