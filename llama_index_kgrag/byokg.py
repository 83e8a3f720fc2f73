"""ByoKG-RAG for LlamaIndex: retriever, query engine, and the graph tools as ``FunctionTool``s."""

from __future__ import annotations

from typing import Any

from llama_index.core.tools import FunctionTool
from pydantic import BaseModel, Field, create_model

from kgrag.graph.sources.coerce import as_graph_store
from kgrag.methods.byokg import ByoKGRAG, GraphTools
from kgrag.methods.byokg.tools import tool_specs
from llama_index_kgrag.base import KGQueryEngine, KGRetriever


class ByoKGRetriever(KGRetriever):
    """ByoKG-RAG retrieval as ``NodeWithScore``s (triples, paths, query results, candidates)."""

    method_name = "byokg"


class ByoKGQueryEngine(KGQueryEngine):
    """Runs ByoKG-RAG (Algorithm 2) and its final answer call with the given LlamaIndex LLM.

    The response's ``source_nodes`` are the retrieved graph context; ``metadata`` has the parsed
    answers and the question's LLM usage. Wrap in ``QueryEngineTool`` for agents.
    """

    method_name = "byokg"


def graph_tools(graph_or_method: Any, linker: Any = None) -> list[FunctionTool]:
    """ByoKG-RAG's graph tools as LlamaIndex ``FunctionTool``s (Cypher only on Cypher stores),
    each argument described in the tool's ``fn_schema``.

    Pass a graph (a GraphStore, or a framework graph :func:`kgrag.graph.as_graph_store`
    converts) or a :class:`ByoKGRAG` (its linker is reused).
    """
    if isinstance(graph_or_method, ByoKGRAG):
        core = GraphTools.from_method(graph_or_method)
    else:
        core = GraphTools(as_graph_store(graph_or_method), linker)
    return [
        FunctionTool.from_defaults(
            fn=getattr(core, spec.function), name=spec.name, description=spec.description,
            fn_schema=args_model(f"{spec.name}_args", spec.args))
        for spec in tool_specs(core)
    ]


def args_model(name: str, args: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model named ``name`` from ``{arg: ToolArg}``: every field described."""
    fields = {arg: (spec.type, Field(spec.default, description=spec.description))
              for arg, spec in args.items()}
    return create_model(name, **fields)  # type: ignore[call-overload]
