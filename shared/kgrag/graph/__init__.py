"""Knowledge graphs: the GraphStore protocol, its backends (in memory by default), and I/O.

Building and converting graphs are free functions, in the style of networkx's ``read_edgelist``:

    kg = read_triples("movies.tsv")              # or KnowledgeGraph.from_triples([...])
    save_graph(kg, "movies_kg"); kg = load_graph("movies_kg", mmap=True)
    kg = from_networkx(g); g = to_networkx(kg)
    kg = from_llama_index(property_graph_index); kg = from_graph_documents(graph_documents)
    store = to_falkordb(kg, "localhost", graph="movies")   # or to_neo4j(kg, uri, user, pw)
"""

from kgrag.graph.base import (
    CypherRunner,
    CypherStore,
    Direction,
    GraphStore,
    IdIndexedGraph,
    PathStep,
    is_cypher_store,
    parse_relation_path,
    runs_cypher,
)
from kgrag.graph.conversions import from_networkx, read_triples, to_networkx
from kgrag.graph.cypher.falkordb import FalkorDBGraphStore, to_falkordb  # clients: lazily
from kgrag.graph.cypher.neo4j import Neo4jGraphStore, to_neo4j
from kgrag.graph.memory import KnowledgeGraph, normalize_name
from kgrag.graph.sources.coerce import as_graph_store
from kgrag.graph.sources.langchain import from_graph_documents
from kgrag.graph.sources.llama_index import from_llama_index
from kgrag.graph.storage import load_graph, save_graph

__all__ = ["CypherRunner", "CypherStore", "Direction", "FalkorDBGraphStore", "GraphStore",
           "IdIndexedGraph", "KnowledgeGraph", "Neo4jGraphStore", "PathStep", "as_graph_store",
           "from_graph_documents", "from_llama_index", "from_networkx", "is_cypher_store",
           "load_graph", "normalize_name", "parse_relation_path", "read_triples", "runs_cypher",
           "save_graph", "to_falkordb", "to_neo4j", "to_networkx"]
