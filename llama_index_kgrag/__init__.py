"""LlamaIndex integration of kgrag: a retriever and a query engine per method.

Needs LlamaIndex (``pip install 'kgrag[llama-index]'``). ``Settings.llm`` /
``Settings.embed_model`` are used when no ``llm`` / ``embedder`` is passed; ``llm=False`` /
``embedder=False`` opt out (no LLM / kgrag's packaged MiniLM), see
:mod:`llama_index_kgrag.settings`.
"""

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "llama_index_kgrag needs LlamaIndex's core package, which is not installed. "
        "Install the extra: pip install 'kgrag[llama-index]'") from exc

from llama_index_kgrag.base import KGQueryEngine, KGRetriever, query_engine_for, retriever_for
from llama_index_kgrag.byokg import ByoKGQueryEngine, ByoKGRetriever, graph_tools
from llama_index_kgrag.conversions import result_to_nodes
from llama_index_kgrag.graphraft import GraphRAFTQueryEngine, GraphRAFTRetriever
from llama_index_kgrag.ketrag import KETRAGQueryEngine, KETRAGRetriever
from llama_index_kgrag.property_graph import KGPGRetriever
from llama_index_kgrag.simgrag import SimGRAGQueryEngine, SimGRAGRetriever
from llama_index_kgrag.ultrag import UltRAGQueryEngine, UltRAGRetriever

__all__ = [
    "ByoKGQueryEngine",
    "ByoKGRetriever",
    "GraphRAFTQueryEngine",
    "GraphRAFTRetriever",
    "KETRAGQueryEngine",
    "KETRAGRetriever",
    "KGPGRetriever",
    "KGQueryEngine",
    "KGRetriever",
    "SimGRAGQueryEngine",
    "SimGRAGRetriever",
    "UltRAGQueryEngine",
    "UltRAGRetriever",
    "graph_tools",
    "query_engine_for",
    "result_to_nodes",
    "retriever_for",
]
