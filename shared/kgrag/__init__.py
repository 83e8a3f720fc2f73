"""kgrag: knowledge-graph RAG methods with a framework-free core.

The core never imports LangChain or LlamaIndex; the adapters live in ``langchain_kgrag`` and
``llama_index_kgrag``. Heavy optional dependencies (sentence-transformers, FAISS, database
clients) are imported lazily where they are needed, so ``import kgrag`` stays light.
"""

from kgrag._version import __version__ as __version__
from kgrag.context.types import (
    Answer,
    Chunk,
    Path,
    RetrievalResult,
    ScoredEntity,
    Subgraph,
    Triple,
    Usage,
)
from kgrag.errors import KgragError
from kgrag.graph import (
    GraphStore,
    KnowledgeGraph,
    PathStep,
    load_graph,
    parse_relation_path,
    read_triples,
    save_graph,
)

__all__ = [
    "Answer",
    "Chunk",
    "GraphStore",
    "KgragError",
    "KnowledgeGraph",
    "Path",
    "PathStep",
    "RetrievalResult",
    "ScoredEntity",
    "Subgraph",
    "Triple",
    "Usage",
    "load_graph",
    "parse_relation_path",
    "read_triples",
    "save_graph",
]
