"""How the graphs the frameworks write into Neo4j / FalkorDB are laid out, and how to tell.

A :class:`~kgrag.graph.cypher.store.CypherGraphStore` needs to know which nodes are entities,
which property names them and which nodes are not entities at all (source documents, chunks).
The frameworks each write one layout:

========================== ============== ========== =============================================
preset                     entity label   name key   written by
========================== ============== ========== =============================================
``kgrag``                  ``Entity``     ``name``   ``to_neo4j`` / ``to_falkordb``
``langchain``              ``__Entity__`` ``id``     ``Neo4jGraph.add_graph_documents(...,
                                                     baseEntityLabel=True)``
``langchain_typed``        (any)          ``id``     ``add_graph_documents`` without
                                                     ``baseEntityLabel``: only the node types
``llama_index``            ``__Entity__`` ``name``   LlamaIndex ``Neo4jPropertyGraphStore``
                                                     (``PropertyGraphIndex``)
========================== ============== ========== =============================================

In every layout the relationship *type* is the relation name, and source documents
(``Document``, LangChain's ``include_source=True``) and text chunks (``Chunk``, LlamaIndex) are
not entities: they are excluded, and with them their ``MENTIONS`` relationships.

:func:`detect_data_model` reads the labels in the database (``CALL db.labels()``, no APOC) and
samples entity properties to choose one; ``data_model="auto"`` on a store does that.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

#: Labels of the nodes the frameworks write that are not entities.
NON_ENTITY_LABELS = ("Document", "Chunk")


@dataclass(frozen=True)
class DataModel:
    """One graph layout: the entity label (``None`` = any node), the property holding an
    entity's name, and labels whose nodes are never entities."""

    name: str
    node_label: str | None
    name_property: str
    exclude_labels: tuple[str, ...] = field(default=())

    def mapping(self) -> dict[str, Any]:
        """Keyword arguments for a CypherGraphStore."""
        return {"node_label": self.node_label, "name_property": self.name_property,
                "exclude_labels": self.exclude_labels}


PRESETS: dict[str, DataModel] = {
    "kgrag": DataModel("kgrag", "Entity", "name"),
    "langchain": DataModel("langchain", "__Entity__", "id", NON_ENTITY_LABELS),
    "langchain_typed": DataModel("langchain_typed", None, "id", NON_ENTITY_LABELS),
    "llama_index": DataModel("llama_index", "__Entity__", "name", NON_ENTITY_LABELS),
}


def preset(name: str) -> DataModel:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown data_model {name!r}: one of {sorted(PRESETS)} or 'auto'") \
            from None


def detect_data_model(read: Callable[..., list[list[Any]]],
                      quote: Callable[[str], str] = lambda s: f"`{s}`") -> DataModel:
    """The preset matching the database behind ``read`` (a store's read-query function).

    * ``__Entity__`` nodes named by ``name`` (LlamaIndex also sets ``__Node__``) ->
      ``llama_index``; named only by ``id`` -> ``langchain``;
    * ``Entity`` nodes -> ``kgrag``;
    * otherwise labelled nodes with an ``id`` next to LangChain's ``Document`` nodes (or with no
      ``name`` anywhere) -> ``langchain_typed``;
    * an empty database -> ``kgrag`` (what kgrag itself will write).
    """
    labels = {str(row[0]) for row in read("CALL db.labels()")}
    if "__Entity__" in labels:
        rows = read(f"MATCH (n:{quote('__Entity__')}) WITH n LIMIT 200 "
                    "RETURN count(n.name) AS named, count(n.id) AS ids")
        named, ids = (int(x) for x in rows[0]) if rows else (0, 0)
        chosen = "llama_index" if named and (named >= ids or "__Node__" in labels) else \
            "langchain"
    elif "Entity" in labels or not labels:
        chosen = "kgrag"
    else:
        rows = read("MATCH (n) WITH n LIMIT 500 RETURN count(n.name) AS named, count(n.id) AS ids")
        named, ids = (int(x) for x in rows[0]) if rows else (0, 0)
        if ids and (named == 0 or "Document" in labels):
            chosen = "langchain_typed"
        elif named:
            log.info("no entity label; every node with a name is an entity")
            return DataModel("named_nodes", None, "name", NON_ENTITY_LABELS)
        else:
            chosen = "kgrag"
            log.warning("data model not recognised (labels %s); using the kgrag preset -- pass "
                        "node_label= and name_property= to map it", sorted(labels)[:20])
    log.info("detected graph data model %r (labels: %s)", chosen, sorted(labels)[:20])
    return PRESETS[chosen]
