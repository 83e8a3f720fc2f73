"""ByoKG-RAG for LlamaIndex: retriever, query engine, and the graph tools as ``FunctionTool``s."""

from __future__ import annotations

from typing import Any

from llama_index.core.tools import FunctionTool

from kgrag.methods.byokg import ByoKGRAG, GraphTools
from llama_index_kgrag.base import KGQueryEngine, KGRetriever


class ByoKGRetriever(KGRetriever):
    """ByoKG-RAG retrieval as ``NodeWithScore``s (triples, paths, query results, candidates)."""

    @classmethod
    def from_graph(cls, graph: Any, llm: Any = None, embedder: Any = None,
                   **params: Any) -> "ByoKGRetriever":
        return cls(ByoKGRAG(graph, llm=llm, embedder=embedder, **params))


class ByoKGQueryEngine(KGQueryEngine):
    """Runs ByoKG-RAG (Algorithm 2) and its final answer call with the given LlamaIndex LLM.

    The response's ``source_nodes`` are the retrieved graph context; ``metadata`` has the parsed
    answers and the question's LLM usage. Wrap in ``QueryEngineTool`` for agents.
    """

    @classmethod
    def from_graph(cls, graph: Any, llm: Any = None, embedder: Any = None,
                   **params: Any) -> "ByoKGQueryEngine":
        return cls(method=ByoKGRAG(graph, llm=llm, embedder=embedder, **params))


def graph_tools(graph_or_method: Any, linker: Any = None) -> list[FunctionTool]:
    """ByoKG-RAG's graph tools as LlamaIndex ``FunctionTool``s (Cypher only on Cypher stores).

    Pass a graph (KnowledgeGraph / GraphStore) or a :class:`ByoKGRAG` (its linker is reused).
    """
    if isinstance(graph_or_method, ByoKGRAG):
        core = GraphTools.from_method(graph_or_method)
    else:
        core = GraphTools(graph_or_method, linker)
    tools = [
        FunctionTool.from_defaults(
            fn=core.lookup_entity_text, name="kg_lookup_entity",
            description="Find the knowledge-graph nodes whose names best match a name."),
        FunctionTool.from_defaults(
            fn=core.neighbors_text, name="kg_neighbors",
            description="List the facts (head -> relation -> tail) around an entity, optionally "
                        "only one relation; direction is 'out', 'in' or 'both'."),
        FunctionTool.from_defaults(
            fn=core.follow_path_text, name="kg_follow_path",
            description="Follow a relation path such as 'r1 -> r2' from an entity."),
        FunctionTool.from_defaults(
            fn=core.shortest_path_text, name="kg_shortest_path",
            description="Find the shortest path connecting two entities."),
    ]
    if core.supports_cypher:
        tools.append(FunctionTool.from_defaults(
            fn=core.run_cypher_text, name="kg_cypher",
            description="Run one read-only openCypher query; write clauses are refused."))
    return tools
