"""One entry point from "the graph a user already has" to a :class:`~kgrag.graph.base.GraphStore`.

Methods run on a ``GraphStore``; users arrive with a LlamaIndex property graph, LangChain
``GraphDocument``\\ s or a networkx graph. :func:`as_graph_store` is what every
``from_graph`` factory (``KGMethod.from_graph`` and both adapters') calls first, so those graphs
can be passed as they are instead of failing later with an ``AttributeError`` on
``list_relations``:

* a ``GraphStore`` (``KnowledgeGraph``, ``Neo4jGraphStore``, ``FalkorDBGraphStore``, your own),
  or a store implementing part of the protocol (it has ``list_relations``) -> itself;
* a LlamaIndex ``PropertyGraphIndex`` or ``PropertyGraphStore`` ->
  ``from_llama_index``;
* a ``GraphDocument`` or a non-empty list / tuple of them (anything with ``.nodes`` and
  ``.relationships``) -> ``from_graph_documents``;
* a networkx graph -> ``from_networkx`` (relation in each edge's ``relation``);
* anything else -> :class:`~kgrag.errors.GraphFormatError` naming the loaders.

Framework classes are recognised by the names and modules of their class hierarchy, so this
module imports neither LlamaIndex, LangChain nor networkx.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgrag.errors import GraphFormatError
from kgrag.graph.base import GraphStore
from kgrag.graph.conversions import from_networkx
from kgrag.graph.sources.langchain import from_graph_documents
from kgrag.graph.sources.llama_index import from_llama_index

__all__ = ["as_graph_store"]

LOADERS = ("KnowledgeGraph.from_triples, kgrag.graph.read_triples / load_graph / from_networkx, "
           "kgrag.graph.from_llama_index (a PropertyGraphIndex or PropertyGraphStore), "
           "kgrag.graph.from_graph_documents (LangChain GraphDocuments), or a database store "
           "(Neo4jGraphStore, FalkorDBGraphStore)")


def _is_a(obj: Any, module_prefix: str, class_names: tuple[str, ...]) -> bool:
    """Whether a class of ``obj``'s hierarchy is named one of ``class_names`` in a module
    under ``module_prefix`` (no import of that module)."""
    return any(cls.__module__.startswith(module_prefix) and cls.__name__ in class_names
               for cls in type(obj).__mro__)


def _is_graph_document(obj: Any) -> bool:
    return hasattr(obj, "nodes") and hasattr(obj, "relationships")


def as_graph_store(graph: Any) -> GraphStore:
    """``graph`` as a :class:`~kgrag.graph.base.GraphStore`, converting the frameworks' graphs
    (module docs); a :class:`~kgrag.errors.GraphFormatError` for anything that is not a graph.

    >>> from kgrag.graph import KnowledgeGraph
    >>> kg = KnowledgeGraph.from_triples([("Paprika", "directed_by", "Satoshi Kon")])
    >>> as_graph_store(kg) is kg
    True
    """
    if isinstance(graph, GraphStore) or callable(getattr(graph, "list_relations", None)):
        return graph  # type: ignore[no-any-return]
    if _is_a(graph, "llama_index", ("PropertyGraphIndex", "PropertyGraphStore")):
        return from_llama_index(graph)
    if _is_graph_document(graph) or (
            isinstance(graph, Sequence) and not isinstance(graph, (str, bytes)) and graph
            and all(_is_graph_document(item) for item in graph)):
        return from_graph_documents(graph)
    if _is_a(graph, "networkx", ("Graph",)):
        return from_networkx(graph)
    raise GraphFormatError(
        f"cannot use a {type(graph).__name__} as a graph; build one with {LOADERS}. Method "
        "constructors (e.g. ByoKGRAG(graph)) take a GraphStore; Method.from_graph(...) and the "
        "adapters' from_graph(...) also convert LlamaIndex property graphs, LangChain "
        "GraphDocuments and networkx graphs")
