"""What a graph source knows beyond its triples: node types, properties and source chunks.

LangChain ``GraphDocument`` nodes carry a type and properties and come from a source
``Document``; LlamaIndex property graphs hold ``EntityNode`` labels and properties, the
``ChunkNode`` texts they were extracted from and, on every extracted node and relation, the id
of that chunk (``triplet_source_id``). :class:`GraphAnnotations` keeps all of it next to a
:class:`~kgrag.graph.memory.KnowledgeGraph` (``kg.annotations``), by name, so a retrieved node
or triple can be traced back to its text, and SimGRAG can use the types
(:meth:`GraphAnnotations.nodes_by_type`). It is saved as JSON with the graph (no pickle):
property values that are not JSON (dates, vectors as numpy arrays) are stored as strings.

>>> a = GraphAnnotations(node_types={"Paprika": ["Movie"]}, chunks={"c1": "Paprika is..."},
...                      edge_chunks={("Paprika", "DIRECTED_BY", "Satoshi Kon"): ["c1"]})
>>> a.nodes_by_type()
{'Movie': ['Paprika']}
>>> a.texts_of_edge("Paprika", "DIRECTED_BY", "Satoshi Kon")
['Paprika is...']
>>> GraphAnnotations.from_json(a.to_json()) == a
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_SCALARS = (str, int, float, bool, type(None))


def json_value(value: Any) -> Any:
    """``value`` as plain JSON data: scalars and lists/dicts of them kept, anything else str."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return str(value)


@dataclass
class GraphAnnotations:
    """Node types and properties, and which source chunks each node and triple came from."""

    #: node name -> its types / labels (``Person``, ``Movie``), in the order given
    node_types: dict[str, list[str]] = field(default_factory=dict)
    #: node name -> its other properties (JSON values)
    node_properties: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: chunk id -> text of the source chunk / document
    chunks: dict[str, str] = field(default_factory=dict)
    #: node name -> ids of the chunks it was extracted from
    node_chunks: dict[str, list[str]] = field(default_factory=dict)
    #: (head, relation, tail) -> ids of the chunks the triple was extracted from
    edge_chunks: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any((self.node_types, self.node_properties, self.chunks, self.node_chunks,
                    self.edge_chunks))

    # ------------------------------------------------------------------ building
    def add_type(self, node: str, type_name: str) -> None:
        types = self.node_types.setdefault(node, [])
        if type_name and type_name not in types:
            types.append(type_name)

    def add_node_chunk(self, node: str, chunk_id: str) -> None:
        ids = self.node_chunks.setdefault(node, [])
        if chunk_id not in ids:
            ids.append(chunk_id)

    def add_edge_chunk(self, edge: tuple[str, str, str], chunk_id: str) -> None:
        ids = self.edge_chunks.setdefault(edge, [])
        if chunk_id not in ids:
            ids.append(chunk_id)

    # ------------------------------------------------------------------ reading
    def nodes_by_type(self) -> dict[str, list[str]]:
        """type -> node names (the ``node_types`` argument SimGRAG takes)."""
        out: dict[str, list[str]] = {}
        for node, types in self.node_types.items():
            for t in types:
                out.setdefault(t, []).append(node)
        return out

    def texts_of_node(self, node: str) -> list[str]:
        return [self.chunks[c] for c in self.node_chunks.get(node, ()) if c in self.chunks]

    def texts_of_edge(self, head: str, relation: str, tail: str) -> list[str]:
        return [self.chunks[c] for c in self.edge_chunks.get((head, relation, tail), ())
                if c in self.chunks]

    def restricted_to(self, nodes: set[str]) -> GraphAnnotations:
        """The annotations of ``nodes`` only (for a subgraph)."""
        edges = {e: ids for e, ids in self.edge_chunks.items() if e[0] in nodes and e[2] in nodes}
        keep = {c for ids in edges.values() for c in ids}
        node_chunks = {n: ids for n, ids in self.node_chunks.items() if n in nodes}
        keep.update(c for ids in node_chunks.values() for c in ids)
        return GraphAnnotations(
            {n: t for n, t in self.node_types.items() if n in nodes},
            {n: p for n, p in self.node_properties.items() if n in nodes},
            {c: t for c, t in self.chunks.items() if c in keep}, node_chunks, edges)

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict[str, Any]:
        return {
            "node_types": self.node_types,
            "node_properties": json_value(self.node_properties),
            "chunks": self.chunks,
            "node_chunks": self.node_chunks,
            "edge_chunks": [[h, r, t, ids] for (h, r, t), ids in self.edge_chunks.items()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> GraphAnnotations:
        data = data or {}
        return cls(
            {str(k): [str(t) for t in v] for k, v in (data.get("node_types") or {}).items()},
            {str(k): dict(v) for k, v in (data.get("node_properties") or {}).items()},
            {str(k): str(v) for k, v in (data.get("chunks") or {}).items()},
            {str(k): [str(c) for c in v] for k, v in (data.get("node_chunks") or {}).items()},
            {(str(h), str(r), str(t)): [str(c) for c in ids]
             for h, r, t, ids in (data.get("edge_chunks") or [])},
        )
