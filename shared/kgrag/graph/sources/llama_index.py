"""A LlamaIndex property graph (``PropertyGraphStore`` or ``PropertyGraphIndex``) as a
KnowledgeGraph.

What is read:

* ``EntityNode`` -> a node named ``node.name``; its ``label`` becomes a node type (except
  LlamaIndex's default ``"entity"``, which says nothing); ``properties["description"]`` (or
  ``"entity_description"``) its description; the other properties are kept in
  ``kg.annotations.node_properties`` (embedding vectors are not copied).
* ``Relation`` between two entities -> an edge ``(source name, label, target name)``.
* ``ChunkNode`` (the text an extractor read; ``PropertyGraphIndex`` stores one per source
  node) -> ``kg.annotations.chunks``. The ``triplet_source_id`` property LlamaIndex puts on every
  extracted node and relation becomes its provenance (``node_chunks`` / ``edge_chunks``), and
  a relation between a chunk and an entity (``MENTIONS`` in some stores) is provenance too,
  not an edge.

An in-memory ``SimplePropertyGraphStore`` is read directly from its graph; any other store
through its public API: ``get()`` for the nodes, then ``get_triplets(ids=...)`` in batches.

>>> from llama_index.core.graph_stores import SimplePropertyGraphStore
>>> from llama_index.core.graph_stores.types import EntityNode, Relation
>>> store = SimplePropertyGraphStore()
>>> store.upsert_nodes([EntityNode(name="Paprika", label="MOVIE"), EntityNode(name="Satoshi Kon")])
>>> store.upsert_relations([Relation(label="DIRECTED_BY", source_id="Paprika",
...                                  target_id="Satoshi Kon")])
>>> kg = from_llama_index(store)
>>> kg.one_hop(["Paprika"])
[Triple(head='Paprika', relation='DIRECTED_BY', tail='Satoshi Kon', score=None)]
>>> kg.annotations.node_types
{'Paprika': ['MOVIE']}
"""

from __future__ import annotations

from typing import Any

from kgrag.errors import GraphFormatError
from kgrag.graph.annotations import GraphAnnotations, json_value
from kgrag.graph.memory import KnowledgeGraph, normalize_name
from kgrag.graph.sources import build_graph

#: the property LlamaIndex's PropertyGraphIndex sets to the id of the chunk a node came from
SOURCE_KEY = "triplet_source_id"
DESCRIPTION_KEYS = ("description", "entity_description")
#: labels that carry no type information (LlamaIndex's defaults)
DEFAULT_LABELS = frozenset({"entity", "node", "__entity__", "__node__"})
#: batch size of ``get_triplets(ids=...)`` calls on stores read through the public API
BATCH = 500


def property_graph_store(source: Any) -> Any:
    """The ``PropertyGraphStore`` of a ``PropertyGraphIndex``, or ``source`` itself."""
    store = getattr(source, "property_graph_store", None)
    if store is not None:
        return store
    if callable(getattr(source, "get_triplets", None)) and callable(getattr(source, "get", None)):
        return source
    raise GraphFormatError(f"expected a LlamaIndex PropertyGraphIndex or PropertyGraphStore, "
                           f"got {type(source).__name__}")


def _nodes_and_triplets(store: Any) -> tuple[list[Any], list[tuple[Any, Any, Any]]]:
    graph = getattr(store, "graph", None)
    if graph is not None and hasattr(graph, "nodes") and hasattr(graph, "get_triplets"):
        return list(graph.nodes.values()), list(graph.get_triplets())
    nodes = list(store.get())
    ids = [n.id for n in nodes]
    seen: set[tuple[str, str, str]] = set()
    triplets = []
    for i in range(0, len(ids), BATCH):
        for subj, rel, obj in store.get_triplets(ids=ids[i:i + BATCH]):
            key = (subj.id, rel.label, obj.id)
            if key not in seen:
                seen.add(key)
                triplets.append((subj, rel, obj))
    return nodes, triplets


def from_llama_index(source: Any, *, cls: Any = KnowledgeGraph, include_chunks: bool = True,
                     **kwargs: Any) -> Any:
    """Convert a LlamaIndex ``PropertyGraphIndex`` / ``PropertyGraphStore`` (module docs).

    ``include_chunks=False`` skips the chunk texts (provenance ids are still kept).
    Other keyword arguments go to the ``KnowledgeGraph`` constructor.
    """
    from llama_index.core.graph_stores.types import ChunkNode, EntityNode

    store = property_graph_store(source)
    nodes, triplets = _nodes_and_triplets(store)
    notes = GraphAnnotations()
    names: dict[str, str] = {}  # node id -> node name
    descriptions: dict[str, str] = {}
    entity_names: list[str] = []
    chunk_ids: set[str] = set()

    def entity(node: Any) -> str | None:
        """Register an EntityNode (once); its normalised name, or None for a chunk."""
        if isinstance(node, ChunkNode) or (not isinstance(node, EntityNode)
                                           and hasattr(node, "text")):
            chunk_ids.add(str(node.id))
            if include_chunks:
                notes.chunks[str(node.id)] = str(node.text)
            return None
        node_id = str(node.id)
        if node_id in names:
            return names[node_id]
        name = normalize_name(getattr(node, "name", node_id))
        if not name:
            return None
        names[node_id] = name
        entity_names.append(name)
        label = str(getattr(node, "label", "") or "")
        if label and label.casefold() not in DEFAULT_LABELS:
            notes.add_type(name, label)
        props = dict(getattr(node, "properties", None) or {})
        source_id = props.pop(SOURCE_KEY, None)
        if source_id:
            notes.add_node_chunk(name, str(source_id))
        for key in DESCRIPTION_KEYS:
            if props.get(key):
                descriptions.setdefault(name, str(props.pop(key)))
        if props:
            notes.node_properties[name] = json_value(props)
        return name

    for node in nodes:
        entity(node)
    triples: list[tuple[str, str, str]] = []
    for subj, rel, obj in triplets:
        head, tail = entity(subj), entity(obj)
        label = normalize_name(rel.label)
        if (head is None and tail is None) or not label:
            continue
        if head is None or tail is None:  # chunk -- entity: provenance, not a fact
            entity_name = head if head is not None else tail
            assert entity_name is not None
            notes.add_node_chunk(entity_name, str((obj if head else subj).id))
            continue
        triples.append((head, label, tail))
        source_id = (rel.properties or {}).get(SOURCE_KEY)
        if source_id:  # both ends were read in that chunk too (LlamaIndex keeps one
            notes.add_edge_chunk((head, label, tail), str(source_id))  # source per node)
            notes.add_node_chunk(head, str(source_id))
            notes.add_node_chunk(tail, str(source_id))
    kg = build_graph(cls, entity_names, triples, node_descriptions=descriptions,
                     annotations=notes, **kwargs)
    kg.stats["chunks"] = len(chunk_ids)
    return kg

