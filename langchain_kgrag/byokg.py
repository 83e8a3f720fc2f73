"""ByoKG-RAG for LangChain: a retriever (search tool, answer chain), and a toolkit of graph tools
for agents whose argument schemas are described (path syntax, Cypher, ...)."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, BaseToolkit, StructuredTool
from pydantic import ConfigDict

from kgrag.graph.sources.coerce import as_graph_store
from kgrag.methods.byokg import GraphTools
from kgrag.methods.byokg.tools import tool_specs
from kgrag.methods.registry import get_method
from langchain_kgrag.base import KGRetriever
from langchain_kgrag.tools import args_model


class ByoKGRetriever(KGRetriever):
    """ByoKG-RAG's iterative multi-strategy retrieval as a LangChain ``BaseRetriever``.

    Each ``Document`` is one retrieved triple, path, graph-query result or (LLM-free mode)
    answer candidate; ``usage_calls`` / ``usage_*_tokens`` hold the question's LLM cost.
    """

    method_name = "byokg"
    tool_name: str = get_method("byokg").tool_name
    tool_description: str = get_method("byokg").tool_description

    def toolkit(self) -> "KGToolkit":
        """The graph tools over the same graph and entity linker."""
        return KGToolkit(tools_core=GraphTools.from_method(self.method))


class KGToolkit(BaseToolkit):
    """ByoKG-RAG's graph tools as LangChain tools: entity lookup, neighbours, path following,
    shortest path, and -- on Cypher-capable stores -- read-only openCypher. Every argument is
    described in the tool's ``args_schema`` (from :data:`kgrag.methods.byokg.tools.TOOL_SPECS`).

    >>> from kgrag.graph import KnowledgeGraph
    >>> kg = KnowledgeGraph.from_triples([("Paprika", "directed_by", "Satoshi Kon")])
    >>> toolkit = KGToolkit.from_graph(kg)
    >>> [tool.name for tool in toolkit.get_tools()]  # no Cypher tool: kg runs no Cypher
    ['kg_lookup_entity', 'kg_neighbors', 'kg_follow_path', 'kg_shortest_path']
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tools_core: GraphTools

    @classmethod
    def from_graph(cls, graph: Any, linker: Any = None) -> "KGToolkit":
        """The tools over ``graph`` (a ``GraphStore``, or a framework graph that
        :func:`kgrag.graph.as_graph_store` converts)."""
        return cls(tools_core=GraphTools(as_graph_store(graph), linker))

    def get_tools(self) -> list[BaseTool]:
        core = self.tools_core
        return [
            StructuredTool.from_function(
                getattr(core, spec.function), name=spec.name, description=spec.description,
                args_schema=args_model(f"{spec.name}_args", spec.args))
            for spec in tool_specs(core)
        ]
