"""LangChain ``GraphDocument``\\ s (e.g. from ``LLMGraphTransformer``) as a KnowledgeGraph.

What is read (``langchain_neo4j.graphs.graph_document`` or the same classes from
``langchain_community.graphs.graph_document``; only their attributes are used):

* ``Node(id, type, properties)`` -> a node named ``str(id)``; ``type`` becomes a node type
  (LangChain's default ``"Node"`` is skipped); ``properties["description"]`` its description,
  the other properties ``kg.annotations.node_properties``.
* ``Relationship(source, target, type)`` -> an edge ``(source.id, type, target.id)``. The
  relation is named as written, not upper-cased with underscores as ``Neo4jGraph`` stores it,
  and its readable form is what embedders read anyway (:mod:`kgrag.text.relations`).
* ``GraphDocument.source`` (a ``Document``) -> a chunk of ``kg.annotations.chunks``, with id
  ``source.metadata["id"]`` or, like ``Neo4jGraph.add_graph_documents``, the MD5 of its text;
  every node and relationship of that graph document points to it.

Nodes without relationships are kept (they can still be linked and described).
"""

from __future__ import annotations

from collections.abc import Iterable
from hashlib import md5
from typing import Any

from kgrag.errors import GraphFormatError
from kgrag.graph.annotations import GraphAnnotations, json_value
from kgrag.graph.memory import KnowledgeGraph, normalize_name
from kgrag.graph.sources import build_graph

DEFAULT_TYPES = frozenset({"Node", ""})
DESCRIPTION_KEYS = ("description",)


def document_id(document: Any) -> str:
    """The id ``Neo4jGraph.add_graph_documents`` gives a source document."""
    given = (getattr(document, "metadata", None) or {}).get("id")
    if given:
        return str(given)
    return md5(str(document.page_content).encode("utf-8")).hexdigest()


def from_graph_documents(graph_documents: Iterable[Any], *, cls: Any = KnowledgeGraph,
                         include_sources: bool = True, **kwargs: Any) -> Any:
    """Convert LangChain ``GraphDocument``\\ s (module docs). ``include_sources=False`` keeps
    the source ids but not their texts; other keyword arguments go to the constructor."""
    if hasattr(graph_documents, "nodes") and hasattr(graph_documents, "relationships"):
        graph_documents = [graph_documents]  # one GraphDocument
    notes = GraphAnnotations()
    descriptions: dict[str, str] = {}
    node_names: list[str] = []
    seen: set[str] = set()
    triples: list[tuple[str, str, str]] = []

    def node(item: Any, chunk: str | None) -> str:
        name = normalize_name(item.id)
        if not name:
            raise GraphFormatError(f"graph document node with an empty id: {item!r:.200}")
        if name not in seen:
            seen.add(name)
            node_names.append(name)
        type_name = str(getattr(item, "type", "") or "")
        if type_name not in DEFAULT_TYPES:
            notes.add_type(name, type_name)
        props = dict(getattr(item, "properties", None) or {})
        for key in DESCRIPTION_KEYS:
            if props.get(key):
                descriptions.setdefault(name, str(props.pop(key)))
        if props:
            notes.node_properties.setdefault(name, {}).update(json_value(props))
        if chunk is not None:
            notes.add_node_chunk(name, chunk)
        return name

    count = 0
    for count, doc in enumerate(graph_documents, start=1):
        if not (hasattr(doc, "nodes") and hasattr(doc, "relationships")):
            raise GraphFormatError(f"item {count} is not a GraphDocument: {type(doc).__name__}")
        source = getattr(doc, "source", None)
        chunk = None
        if source is not None:
            chunk = document_id(source)
            if include_sources:
                notes.chunks[chunk] = str(source.page_content)
        for item in doc.nodes:
            node(item, chunk)
        for rel in doc.relationships:
            label = normalize_name(rel.type)
            if not label:
                raise GraphFormatError(f"relationship without a type: {rel!r:.200}")
            edge = (node(rel.source, chunk), label, node(rel.target, chunk))
            triples.append(edge)
            if chunk is not None:
                notes.add_edge_chunk(edge, chunk)
    kg = build_graph(cls, node_names, triples, node_descriptions=descriptions,
                     annotations=notes, **kwargs)
    kg.stats["graph_documents"] = count
    return kg

