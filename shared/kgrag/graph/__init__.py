"""Knowledge graphs: the GraphStore protocol and its backends (in memory by default)."""

from kgrag.graph.base import (
    CypherRunner,
    CypherStore,
    Direction,
    GraphStore,
    PathStep,
    is_cypher_store,
    parse_relation_path,
    runs_cypher,
)
from kgrag.graph.memory import KnowledgeGraph, normalize_name
from kgrag.graph.cypher.falkordb import FalkorDBGraphStore  # database clients are imported lazily
from kgrag.graph.cypher.neo4j import Neo4jGraphStore
from kgrag.graph.sources import langchain as _langchain_source  # noqa: F401 (registers)
from kgrag.graph.sources import llama_index as _llama_index_source  # noqa: F401 (registers)
from kgrag.graph.sources.coerce import as_graph_store

__all__ = ["CypherRunner", "CypherStore", "Direction", "FalkorDBGraphStore", "GraphStore", "KnowledgeGraph", "Neo4jGraphStore",
           "PathStep", "as_graph_store", "is_cypher_store", "normalize_name", "parse_relation_path",
           "runs_cypher"]
